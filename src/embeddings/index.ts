export { EmbeddingClient, normalise, dot, vectorToBlob, blobToVector, type EmbeddingEndpoint } from './client.js';
export { probeEmbeddings, type EmbeddingsProbe } from './probe.js';
