import type { AnthropicUsage, OpenAIUsage, TokenUsage } from '../../types/index.js';
import { isRecord, readNumber } from './common.js';

/**
 * Usage mapping. OpenAI's `prompt_tokens` counts every input token, Anthropic's `input_tokens`
 * only the uncached ones, so the cache counts are added going to OpenAI and subtracted coming back.
 * `TokenUsage.inputTokens` follows OpenAI: all input tokens, cached ones included.
 */

const ANTHROPIC_USAGE_KEYS = ['input_tokens', 'output_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens'] as const;

export function anthropicUsageToOpenAI(usage: Partial<AnthropicUsage>): OpenAIUsage {
  const input = readNumber(usage.input_tokens) ?? 0;
  const cacheWrite = readNumber(usage.cache_creation_input_tokens) ?? 0;
  const cacheRead = readNumber(usage.cache_read_input_tokens) ?? 0;
  const promptTokens = input + cacheWrite + cacheRead;
  const completionTokens = readNumber(usage.output_tokens) ?? 0;
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: cacheRead },
  };
}

export function openAIUsageToAnthropic(usage: Partial<OpenAIUsage>): AnthropicUsage {
  const promptTokens = readNumber(usage.prompt_tokens) ?? 0;
  const cached = Math.min(openAICachedTokens(usage), promptTokens);
  return {
    input_tokens: promptTokens - cached,
    output_tokens: readNumber(usage.completion_tokens) ?? 0,
    // OpenAI-compatible servers report no cache writes.
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: cached,
  };
}

/** Cache counts appear in TokenUsage only when the upstream reported them. */
export function anthropicUsageToTokenUsage(usage: Partial<AnthropicUsage>): TokenUsage {
  const cacheWrite = readNumber(usage.cache_creation_input_tokens);
  const cacheRead = readNumber(usage.cache_read_input_tokens);
  const result: TokenUsage = {
    inputTokens: (readNumber(usage.input_tokens) ?? 0) + (cacheWrite ?? 0) + (cacheRead ?? 0),
    outputTokens: readNumber(usage.output_tokens) ?? 0,
  };
  if (cacheRead !== undefined) result.cacheReadTokens = cacheRead;
  if (cacheWrite !== undefined) result.cacheWriteTokens = cacheWrite;
  return result;
}

export function openAIUsageToTokenUsage(usage: Partial<OpenAIUsage>): TokenUsage {
  const result: TokenUsage = {
    inputTokens: readNumber(usage.prompt_tokens) ?? 0,
    outputTokens: readNumber(usage.completion_tokens) ?? 0,
  };
  const details = usage.prompt_tokens_details;
  const cached = isRecord(details) ? readNumber(details.cached_tokens) : undefined;
  if (cached !== undefined) result.cacheReadTokens = cached;
  return result;
}

/** Narrows untrusted JSON to OpenAI usage; undefined unless it has at least one token count. */
export function readOpenAIUsage(value: unknown): Partial<OpenAIUsage> | undefined {
  if (!isRecord(value)) return undefined;
  if (readNumber(value.prompt_tokens) === undefined && readNumber(value.completion_tokens) === undefined) return undefined;
  return value;
}

/** Narrows untrusted JSON to Anthropic usage; undefined unless it has at least one token count. */
export function readAnthropicUsage(value: unknown): Partial<AnthropicUsage> | undefined {
  if (!isRecord(value)) return undefined;
  const hasCount = ANTHROPIC_USAGE_KEYS.some((key) => readNumber(value[key]) !== undefined);
  return hasCount ? value : undefined;
}

/**
 * Streams report Anthropic usage in pieces: input and cache counts in message_start, cumulative
 * counts in message_delta. Later numbers win; null or absent ones keep the earlier value.
 */
export function mergeAnthropicUsage(
  base: Partial<AnthropicUsage> | undefined,
  update: Partial<AnthropicUsage> | undefined,
): Partial<AnthropicUsage> | undefined {
  if (update === undefined) return base;
  const merged: Partial<AnthropicUsage> = { ...base };
  for (const key of ANTHROPIC_USAGE_KEYS) {
    const value = readNumber(update[key]);
    if (value !== undefined) merged[key] = value;
  }
  return merged;
}

function openAICachedTokens(usage: Partial<OpenAIUsage>): number {
  const details = usage.prompt_tokens_details;
  return isRecord(details) ? (readNumber(details.cached_tokens) ?? 0) : 0;
}
