export { RlBuffer, toSample, type SampleRow, type NewSample, type Verdict, type JudgeState } from './store.js';
export { RlRecording, JUDGE_JOB, recordsSamples, type JudgeJobPayload } from './recording.js';
export { bufferStatus, type BufferStatus } from './status.js';
export { encodeTokens, decodeTokens, encodeLogprobs, decodeLogprobs } from './codec.js';
