export { ServedPolicy, type ServedPolicyRecord } from './served-policy.js';
export { TrainingSteps, type StepRecord, type StepStatus, type StepTrigger } from './steps.js';
export { TrainingLoop, type StepFunction, type StepOutcome, type SteppingWindow, type TrainingBuffer, type TrainingLoopOptions } from './training-loop.js';
