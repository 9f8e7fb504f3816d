export { JobQueue } from './queue.js';
export { backoffMs, type Job, type JobRow, type JobStatus, type EnqueueOptions, type QueueCounts } from './job-model.js';
export { LearningBudget, localDay, type SpendSummary } from './budget.js';
export {
  LearningRunner,
  LearningError,
  LearningMisconfiguredError,
  LearningRateLimitedError,
  PermanentJobError,
  parsePayload,
  type JobHandler,
  type JobContext,
  type LearningTrigger,
  type Enqueue,
  type RunnerStats,
  type RunnerOptions,
} from './runner.js';
export { LearningDispatch, type DispatchHooks } from './dispatch.js';
export { callLlm, callLlmForJson, extractJson, InvalidLlmOutputError, LlmCallError, type LlmTarget, type LlmRequest, type LlmReply } from './llm-client.js';
export { type JsonAnswer } from './structured-output.js';
export { callPromptForJson, callPromptForText } from './job-call.js';
export { resolveLearningTarget, type LearningEndpointConfig } from './targets.js';
export { type TeamJobEffect, type TeamJobHandler } from './team-job.js';
