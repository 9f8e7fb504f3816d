export type * from './openai.js';
export type * from './anthropic.js';
export type * from './responses.js';

/** A value now (SQLite, on the proxy's thread) or later (PostgreSQL, over the pool): what a port shared by both store engines answers. */
export type Awaitable<T> = T | Promise<T>;

/** The two chat formats an upstream is configured with: OpenAI Chat Completions and Anthropic Messages. */
export type ApiFormat = 'openai' | 'anthropic';

/**
 * Every API a model request can be written in: the two chat formats and OpenAI's Responses API. A
 * client speaks one; each attempt sends one (`responses` only to an upstream that serves it).
 */
export type RequestFormat = ApiFormat | 'responses';

/** A model answer reduced to what learning needs, whichever format carried it. */
export interface AssembledResponse {
  text: string;
  reasoning: string;
  toolCalls: Array<{ id: string; name: string; arguments: string }>;
  /** Normalised: stop | length | tool_calls | content_filter, or the upstream's own word. */
  finishReason: string | null;
  usage: TokenUsage | null;
  model: string | null;
  /** The answer's own id, where a client may refer to it later (a Responses API `resp_…` id). */
  id?: string;
}

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}
