export { ServedPolicy, parseServedPolicy, SERVED_POLICY_KEY, type ServedPolicyRecord } from './served-policy.js';
export { SharedServedPolicy } from './shared-policy.js';
export type { PolicyInstaller, ServedPolicyState, StepStore } from './ports.js';
export {
  TrainingSteps,
  fromRow,
  finiteMetrics,
  finiteOrNull,
  refusalsInRow,
  type StepRecord,
  type StepRow,
  type StepStatus,
  type StepTrigger,
} from './steps.js';
export {
  TrainingLoop,
  MAX_STEP_RETRY_DELAY_MS,
  type StepFunction,
  type StepOutcome,
  type StepRetry,
  type SteppingWindow,
  type TrainingBuffer,
  type TrainingLoopOptions,
} from './training-loop.js';
export {
  currentTrainingRun,
  decideTrainingRun,
  describeRun,
  earlierRunReason,
  keepsRunStart,
  newRunMessage,
  parseTrainingRun,
  recordRun,
  runStartOf,
  sameRun,
  saveRunStart,
  TRAINING_RUN_KEY,
  type RunConfiguration,
  type RunStart,
  type TrainingRun,
} from './run.js';
