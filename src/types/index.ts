export type * from './openai.js';
export type * from './anthropic.js';

/** The two wire formats a client can speak and an upstream can serve. */
export type ApiFormat = 'openai' | 'anthropic';

/** A model answer reduced to what learning needs, whichever format carried it. */
export interface AssembledResponse {
  text: string;
  reasoning: string;
  toolCalls: Array<{ id: string; name: string; arguments: string }>;
  /** Normalised: stop | length | tool_calls | content_filter, or the upstream's own word. */
  finishReason: string | null;
  usage: TokenUsage | null;
  model: string | null;
}

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}
