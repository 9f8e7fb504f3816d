export { ChatTokenizer, type RenderedPrompt } from './chat-tokenizer.js';
export { loadChatTokenizer } from './load.js';
export { parseAnswer } from './parse-answer.js';
export { openAICompletion, policyAnswer, sendPolicyAnswer, type PolicyAnswer, type PolicyAnswerInput } from './respond.js';
export { DEFAULT_SAMPLING, decodeSample, requestSampling, type DecodedSample, type RequestSampling, type SamplingDefaults } from './sampling.js';
export { servePolicyTurn, type FallbackReason, type PolicyServing, type PolicyTurnRequest, type PolicyTurnResult } from './serve.js';
export { templateInput, type TemplateInput, type TemplateMessage } from './template-input.js';
export {
  loadTokenizerFiles,
  readTokenizerFolder,
  tokenizerCacheDir,
  TokenizerUnavailableError,
  type TokenizerFiles,
  type TokenizerSource,
} from './tokenizer-files.js';
export { PolicyUpstream, type Forwarding, type PolicyForwardResult, type PolicyState, type PolicyTurnContext, type PolicyUpstreamOptions } from './upstream.js';
