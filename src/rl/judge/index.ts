export { JudgeHandler, judgeTurn, describeJudge, type JudgeSettings, type JudgeDependencies } from './handler.js';
export { parseScore, majorityOf } from './parse.js';
