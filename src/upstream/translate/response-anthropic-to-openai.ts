import type { AnthropicResponse, OpenAIChatCompletion } from '../../types/index.js';
import { assistantToOpenAIMessage, readAnthropicAssistant } from './assistant.js';
import { prefixedId, unixSeconds } from './common.js';
import { asJsonAnswer, jsonAnswerStop } from './json-answer.js';
import { anthropicStopToOpenAIFinish } from './stop-reasons.js';
import { anthropicUsageToOpenAI, readAnthropicUsage } from './usage.js';

/** `jsonTool`: the forced tool that stood for the request's JSON Schema (json-answer.ts); its call is the answer's text. */
export function anthropicResponseToOpenAI(response: AnthropicResponse, options: { model?: string; jsonTool?: string }): OpenAIChatCompletion {
  const parts = asJsonAnswer(readAnthropicAssistant(response.content), options.jsonTool);
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
        finish_reason: anthropicStopToOpenAIFinish(jsonAnswerStop(response.stop_reason, options.jsonTool), parts.toolCalls.length > 0) ?? 'stop',
        logprobs: null,
      },
    ],
    usage: anthropicUsageToOpenAI(readAnthropicUsage(response.usage) ?? {}),
  };
}
