export { EmbeddingClient, SEARCH_EMBED_TIMEOUT_MS, normalise, dot, vectorToBlob, blobToVector, type EmbeddingEndpoint } from './client.js';
export { probeEmbeddings, type EmbeddingsProbe } from './probe.js';
