export { EmbeddingClient, normalise, dot, vectorToBlob, blobToVector, type EmbeddingEndpoint } from './client.js';
