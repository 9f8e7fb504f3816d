export { openAIRequestToAnthropic } from './request-openai-to-anthropic.js';
export { anthropicRequestToOpenAI } from './request-anthropic-to-openai.js';
export { anthropicResponseToOpenAI } from './response-anthropic-to-openai.js';
export { openAIResponseToAnthropic } from './response-openai-to-anthropic.js';
export { AnthropicToOpenAIStream } from './stream-anthropic-to-openai.js';
export { OpenAIToAnthropicStream } from './stream-openai-to-anthropic.js';
export { anthropicStopToOpenAIFinish, normalizeOpenAIFinish, openAIFinishToAnthropicStop } from './stop-reasons.js';
export { anthropicUsageToOpenAI, anthropicUsageToTokenUsage, openAIUsageToAnthropic, openAIUsageToTokenUsage } from './usage.js';
export { anthropicErrorBodyToOpenAI, openAIErrorBodyToAnthropic } from './errors.js';
export { AnthropicStreamAssembler, OpenAIStreamAssembler, assembleAnthropicResponse, assembleOpenAIResponse } from './assemble.js';
export { assembleResponsesResponse, ResponsesStreamAssembler } from './assemble-responses.js';
export { responsesRequestToOpenAI, responsesInputItems, responsesItemType } from './request-responses-to-openai.js';
export { anthropicResponseToResponses, openAIResponseToResponses } from './response-to-responses.js';
export { AnthropicToResponsesStream, OpenAIToResponsesStream } from './stream-to-responses.js';
export { ResponsesStreamWriter } from './responses-stream.js';
export {
  assistantToResponsesOutput,
  itemId,
  openAIUsageToResponses,
  responseIdFor,
  responseObject,
  responsesStatus,
  type ResponsesContext,
} from './responses-output.js';
export {
  answerJsonTool,
  answerShapeProblem,
  answerFromStream,
  assembleAnswer,
  assembleStream,
  readStream,
  streamAssembler,
  streamTranslator,
  translateAnswer,
  translateErrorBody,
  translateRequest,
  wireFormat,
  type AnswerContext,
  type EarlierConversation,
  type StreamAssembler,
  type StreamEnding,
  type StreamTranslator,
} from './format-pairs.js';
export { answerAsStream, responseAsStream, wholeAnswerUsage, type WholeAnswer } from './answer-stream.js';
