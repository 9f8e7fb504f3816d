import type { AnthropicResponse, OpenAIChatCompletion } from '../../types/index.js';
import { assistantToOpenAIMessage, readAnthropicAssistant } from './assistant.js';
import { prefixedId, unixSeconds } from './common.js';
import { anthropicStopToOpenAIFinish } from './stop-reasons.js';
import { anthropicUsageToOpenAI, readAnthropicUsage } from './usage.js';

export function anthropicResponseToOpenAI(response: AnthropicResponse, options: { model?: string }): OpenAIChatCompletion {
  const parts = readAnthropicAssistant(response.content);
  return {
    id: prefixedId('chatcmpl-', response.id),
    object: 'chat.completion',
    created: unixSeconds(),
    model: options.model ?? response.model,
    choices: [
      {
        index: 0,
        message: assistantToOpenAIMessage(parts, { includeReasoning: true }),
        // A finished message without a stop reason ended normally.
        finish_reason: anthropicStopToOpenAIFinish(response.stop_reason, parts.toolCalls.length > 0) ?? 'stop',
        logprobs: null,
      },
    ],
    usage: anthropicUsageToOpenAI(readAnthropicUsage(response.usage) ?? {}),
  };
}
