export type * from './types.js';
export { decideMode, type Mode, type ModeDecision } from './mode.js';
export { RlService, rlReport, type RlDependencies, type RlReport } from './service.js';
export { RlBuffer, bufferStatus, recordsSamples, JUDGE_JOB, type BufferStatus, type SampleRow, type ScoredSampleSource } from './buffer/index.js';
export { describeJudge, parseScore, majorityOf, type JudgeSettings } from './judge/index.js';
export { exportSamples, EXPORT_FORMATS, type ExportFormat, type ExportReport, type TurnSource } from './export/index.js';
export { TEACHER_JOB, teacherLogprobs, type TeacherEndpoint } from './teacher/index.js';
export { RlEngine, TRAIN_STEP_JOB, type EngineReport, type EngineState, type RlEngineDependencies, type RlEngineSettings } from './engine.js';
export type { OpeningFailure } from './reopen.js';
