export { MemberDirectory, memberNameSchema, memberScope, type IssuedKey, type Member, type MemberRow } from './members.js';
export { hashMemberKey, isMemberKeyShaped, newMemberKey } from './member-keys.js';
export { MemberCache, type KeyedMemberRow } from './member-cache.js';
export { TeamLearningRunner, type TeamRunnerOptions, type TeamRunnerStats } from './learning-runner.js';
