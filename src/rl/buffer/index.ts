export { RlBuffer, toSample, sampleValues, scoredSamplesWhere, type SampleRow, type NewSample, type Verdict, type JudgeState } from './store.js';
export type { RlSampleStore, ScoredSampleSource } from './port.js';
export { RlRecording, JUDGE_JOB, recordsSamples, generationShown, type JudgeJobPayload } from './recording.js';
export { bufferStatus, type BufferStatus } from './status.js';
export { encodeTokens, decodeTokens, encodeLogprobs, decodeLogprobs } from './codec.js';
