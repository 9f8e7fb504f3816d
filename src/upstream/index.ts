export { UpstreamForwarder, type ForwardInput, type ForwardResult, type ForwardOutcome, type ForwarderOptions, type ForwardedBody } from './forward.js';
export { authHeaders, endpointPath, endpointUrl, jsonHeaders, versionHeaders, type ClientCredentials, type EndpointKind } from './endpoint.js';
export type { ClientSink } from './sink.js';
export { SseParser, encodeSse, completeEventsLength, type SseEvent } from './sse.js';
export { isRetryableStatus, retryAfterMs, backoffDelayMs } from './retry.js';
export { listModels, type ModelList } from './models.js';
export { CredentialMemory } from './credential-memory.js';
export { probeUpstream, type ProbeResult } from './probe.js';
export {
  assembleAnswer,
  assembleAnthropicResponse,
  assembleOpenAIResponse,
  assembleStream,
  assistantToResponsesOutput,
  readStream,
  type StreamEnding,
  openAIUsageToResponses,
  responseIdFor,
  responseObject,
  responsesInputItems,
  responsesStatus,
  translateRequest,
  wireFormat,
} from './translate/index.js';
export { passThrough, type PassedAnswer } from './pass-through.js';
/** For answers the proxy makes itself (rl/policy): the same translations and readers the forwarder uses. */
export { streamTranslator, translateAnswer, type AnswerContext, type EarlierConversation } from './translate/index.js';
export { assistantToOpenAIMessage, type AssistantParts } from './translate/assistant.js';
export { answerAsStream, wholeAnswerUsage, type WholeAnswer } from './translate/index.js';
export { isRecord, openAIContentText, parseJson, readArray, readReasoning, readString, toolCallId, unixSeconds } from './translate/common.js';
