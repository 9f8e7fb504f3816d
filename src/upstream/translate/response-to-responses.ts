import type { AnthropicResponse, OpenAIChatCompletion, ResponsesObject } from '../../types/index.js';
import { readOpenAIAssistant } from './assistant.js';
import { isRecord, readArray, readString } from './common.js';
import { anthropicResponseToOpenAI } from './response-anthropic-to-openai.js';
import { assistantToResponsesOutput, openAIUsageToResponses, responseObject, responsesStatus, type ResponsesContext } from './responses-output.js';
import { normalizeOpenAIFinish } from './stop-reasons.js';
import { readOpenAIUsage } from './usage.js';

/** A complete chat answer as a Responses API response. Only the first choice is translated. */
export function openAIResponseToResponses(response: OpenAIChatCompletion, context: ResponsesContext): ResponsesObject {
  const choice = readArray(response.choices).find(isRecord);
  // A call without an id gets one in toolCallItem, the same one the record's answer gets.
  const parts = readOpenAIAssistant(isRecord(choice?.message) ? choice.message : {});
  const usage = readOpenAIUsage(response.usage);
  return responseObject(context, {
    ...responsesStatus(normalizeOpenAIFinish(readString(choice?.finish_reason))),
    model: readString(response.model) ?? '',
    output: assistantToResponsesOutput(parts, context.responseId, context.tools),
    usage: usage === undefined ? null : openAIUsageToResponses(usage),
  });
}

/** Through the chat form, which carries all this translation keeps: text, thinking as reasoning, tool calls, stop reason, usage. */
export function anthropicResponseToResponses(response: AnthropicResponse, context: ResponsesContext): ResponsesObject {
  return openAIResponseToResponses(anthropicResponseToOpenAI(response, context.jsonTool === undefined ? {} : { jsonTool: context.jsonTool }), context);
}
