import type { AnthropicResponse, OpenAIChatCompletion } from '../../types/index.js';
import { assistantToAnthropicBlocks, readOpenAIAssistant } from './assistant.js';
import { isRecord, prefixedId, readArray, readString } from './common.js';
import { openAIFinishToAnthropicStop } from './stop-reasons.js';
import { openAIUsageToAnthropic, readOpenAIUsage } from './usage.js';

/** Only the first choice is translated: Anthropic has no `n`. */
export function openAIResponseToAnthropic(response: OpenAIChatCompletion): AnthropicResponse {
  const choice = readArray(response.choices).find(isRecord);
  const message = isRecord(choice?.message) ? choice.message : {};
  const parts = readOpenAIAssistant(message);
  const finishReason = readString(choice?.finish_reason);
  return {
    id: prefixedId('msg_', response.id),
    type: 'message',
    role: 'assistant',
    model: readString(response.model) ?? '',
    content: assistantToAnthropicBlocks(parts, { includeThinking: true }),
    // A finished message without a finish reason ended normally.
    stop_reason: openAIFinishToAnthropicStop(finishReason, parts.toolCalls.length > 0) ?? 'end_turn',
    stop_sequence: null,
    usage: openAIUsageToAnthropic(readOpenAIUsage(response.usage) ?? {}),
  };
}
