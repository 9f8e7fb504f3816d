/** GRPO on an `RlBackend`: advantages, Tinker datums, the OPD KL term, and one training step. */
export { computeAdvantages, type AdvantageMode } from './advantages.js';
export { buildDatum, datumProblem, type DatumOptions } from './datum.js';
export { klPenaltyTerms } from './opd.js';
export { BatchRefused, trainStep, type BatchSummary, type TrainStepOptions, type TrainStepResult } from './step.js';
