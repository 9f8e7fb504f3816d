/**
 * Stop reason mapping. Unknown words pass through unchanged so nothing the upstream said is lost.
 *
 * "Tool calls present" overrides only a normal stop: several OpenAI-compatible servers answer
 * `stop` with tool calls, but `length` / `max_tokens` with a tool call means the call was cut off,
 * and the real Anthropic API reports exactly that, so it is kept.
 */

const ANTHROPIC_TO_OPENAI: Readonly<Record<string, string>> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

const OPENAI_TO_ANTHROPIC: Readonly<Record<string, string>> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  content_filter: 'refusal',
};

export function anthropicStopToOpenAIFinish(stopReason: string | null | undefined, hasToolCalls = false): string | null {
  if (hasToolCalls && (stopReason === undefined || stopReason === null || stopReason === 'end_turn' || stopReason === 'stop_sequence')) return 'tool_calls';
  if (stopReason === undefined || stopReason === null) return null;
  return ANTHROPIC_TO_OPENAI[stopReason] ?? stopReason;
}

export function openAIFinishToAnthropicStop(finishReason: string | null | undefined, hasToolCalls = false): string | null {
  if (hasToolCalls && (finishReason === undefined || finishReason === null || finishReason === 'stop')) return 'tool_use';
  if (finishReason === undefined || finishReason === null) return null;
  return OPENAI_TO_ANTHROPIC[finishReason] ?? finishReason;
}

/** The turn record speaks OpenAI's words; the legacy `function_call` is a tool call. */
export function normalizeOpenAIFinish(finishReason: string | null | undefined): string | null {
  if (finishReason === undefined || finishReason === null) return null;
  return finishReason === 'function_call' ? 'tool_calls' : finishReason;
}
