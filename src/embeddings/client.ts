import { z } from 'zod';
import { UpstreamError } from '../errors.js';
import { AnswerTooLargeError, cappedText } from '../shared/capped-text.js';
import { withoutKeys } from '../shared/without-keys.js';
import { deadlineSignal } from '../shared/deadline-signal.js';

/** Where embeddings come from: any OpenAI-compatible `/v1/embeddings` (Ollama included). */
export interface EmbeddingEndpoint {
  apiBase: string;
  apiKey: string;
  model: string;
}

/**
 * How long a search someone waits on (`metaclaw memory search`, MCP's tools) waits for its query's
 * vector: longer than a proxied request's search route (1.5 s), since a person or a tool call waits
 * here, not an agent's request, and a local endpoint may still be loading its model; short enough
 * that a dead endpoint costs seconds, not the client's own 10. Past it, keywords answer.
 */
export const SEARCH_EMBED_TIMEOUT_MS = 5_000;

/** A batch of vectors in JSON is a few MB (3,072 numbers of ~20 characters per text); far more is a server gone wrong. */
export const EMBEDDINGS_ANSWER_MAX_BYTES = 64 * 1024 * 1024;

const responseSchema = z.object({
  data: z.array(z.object({ embedding: z.array(z.number()), index: z.number().int().optional() })).min(1),
  usage: z.object({ prompt_tokens: z.number().optional(), total_tokens: z.number().optional() }).partial().optional(),
});

/**
 * Calls an embeddings endpoint. Vectors are L2-normalised so a dot product is the cosine. Single
 * queries are cached (agents resend the same request text on every tool-loop step).
 */
export class EmbeddingClient {
  private readonly cache = new Map<string, Float32Array>();
  /** Query texts being embedded in the background for `readyQuery`. */
  private readonly warming = new Set<string>();

  constructor(
    readonly endpoint: EmbeddingEndpoint,
    private readonly timeoutMs = 10_000,
  ) {}

  get model(): string {
    return this.endpoint.model;
  }

  async embed(texts: readonly string[], signal?: AbortSignal): Promise<{ vectors: Float32Array[]; tokens: number }> {
    if (texts.length === 0) return { vectors: [], tokens: 0 };
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.endpoint.apiKey) headers['authorization'] = `Bearer ${this.endpoint.apiKey}`;
    const deadline = deadlineSignal(signal, this.timeoutMs);
    let response: Response;
    let text: string;
    try {
      response = await fetch(`${this.endpoint.apiBase.replace(/\/+$/, '')}/embeddings`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: this.endpoint.model, input: texts }),
        signal: deadline.signal,
      });
      text = await cappedText(response, EMBEDDINGS_ANSWER_MAX_BYTES).catch((error: unknown) => {
        throw error instanceof AnswerTooLargeError ? new UpstreamError(`embeddings endpoint ${error.message}`, response.status) : error;
      });
    } finally {
      deadline.done();
    }
    // The error's text is logged and shown in /status: without the key, which some servers echo.
    if (!response.ok)
      throw new UpstreamError(`embeddings endpoint answered ${response.status}: ${withoutKeys(text, [this.endpoint.apiKey]).slice(0, 300)}`, response.status);
    const parsed = responseSchema.safeParse(JSON.parse(text));
    if (!parsed.success) throw new UpstreamError(`embeddings endpoint returned an unexpected shape: ${parsed.error.issues[0]?.message}`);
    const ordered = [...parsed.data.data].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
    if (ordered.length !== texts.length) throw new UpstreamError(`embeddings endpoint returned ${ordered.length} vectors for ${texts.length} inputs`);
    return { vectors: ordered.map((item) => normalise(item.embedding)), tokens: parsed.data.usage?.total_tokens ?? parsed.data.usage?.prompt_tokens ?? 0 };
  }

  /** One query's vector, from the cache when the same text was embedded recently. */
  async embedQuery(text: string, signal?: AbortSignal): Promise<Float32Array> {
    const cached = this.cache.get(text);
    if (cached) return cached;
    const { vectors } = await this.embed([text], signal);
    const vector = vectors[0]!;
    if (this.cache.size >= 512) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(text, vector);
    return vector;
  }

  /**
   * The query's vector if it is already known, without waiting: the request path calls this, and it
   * never waits on the network. An unknown text is embedded in the background, so the next request
   * with the same text gets it (an agent resends its request on every step of a tool loop).
   */
  readyQuery(text: string, onError: (error: Error) => void): Float32Array | undefined {
    const cached = this.cache.get(text);
    if (cached || this.warming.has(text) || this.warming.size >= MAX_WARMING) return cached;
    this.warming.add(text);
    this.embedQuery(text)
      .then(
        () => undefined,
        (error: unknown) => onError(error as Error),
      )
      .finally(() => this.warming.delete(text));
    return undefined;
  }
}

/** Background query embeddings at once; more are skipped (keywords answer) rather than queued. */
const MAX_WARMING = 8;

export function normalise(values: readonly number[]): Float32Array {
  const vector = Float32Array.from(values);
  let norm = 0;
  for (const value of vector) norm += value * value;
  norm = Math.sqrt(norm) || 1;
  for (let index = 0; index < vector.length; index++) vector[index]! /= norm;
  return vector;
}

export function dot(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return 0;
  let sum = 0;
  for (let index = 0; index < a.length; index++) sum += a[index]! * b[index]!;
  return sum;
}

export function vectorToBlob(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}

export function blobToVector(blob: Buffer): Float32Array {
  const copy = new Uint8Array(blob);
  return new Float32Array(copy.buffer, 0, copy.byteLength / 4);
}
