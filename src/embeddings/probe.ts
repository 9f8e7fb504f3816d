import { EmbeddingClient, type EmbeddingEndpoint } from './client.js';

/** What probing an embeddings endpoint found: one plain sentence either way. */
export interface EmbeddingsProbe {
  apiBase: string;
  model: string;
  ok: boolean;
  detail: string;
  /** When it was probed, and by what (`setup` or `start`). */
  at: string;
  source: string;
}

/** Embeds one word at `endpoint`, giving up after `timeoutMs`: does the endpoint answer? */
export async function probeEmbeddings(endpoint: EmbeddingEndpoint, timeoutMs: number, source: string, signal?: AbortSignal): Promise<EmbeddingsProbe> {
  const base = { apiBase: endpoint.apiBase, model: endpoint.model, at: new Date().toISOString(), source };
  const where = `${endpoint.model} at ${endpoint.apiBase}`;
  try {
    const { vectors } = await new EmbeddingClient(endpoint, timeoutMs).embed(['ping'], signal);
    return { ...base, ok: true, detail: `${where} answered at ${source} (${vectors[0]!.length} dimensions)` };
  } catch (error) {
    const message = (error as Error).name === 'TimeoutError' ? `no answer within ${timeoutMs / 1000} s` : (error as Error).message;
    return { ...base, ok: false, detail: `${where} did not answer at ${source}: ${message.slice(0, 200)}` };
  }
}
