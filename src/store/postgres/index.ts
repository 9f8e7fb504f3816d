/**
 * The PostgreSQL team store: connection, schema, the stores a team node serves from, import from a personal install.
 * Load it with a dynamic `import()` only: the personal path must never load `pg`.
 */
export { openPool, describeStoreError, isUnreachable, type PoolOptions } from './connect.js';
export { migratePostgres, postgresSchemaVersion, schemaMismatch, MIGRATIONS_TABLE, type MigrateResult } from './migrate.js';
export { readPostgresStatus, type PostgresStatus } from './status.js';
export { importSqlite, resolveSqlitePath, type ImportOptions, type ImportResult, type TableImport } from './import-sqlite.js';
export { TEAM_ONLY_TABLES, TEAM_TABLES, type TeamTable } from './tables.js';
export { PgJobQueue, type CompleteOutcome, type JobEffect, type LeasedJob, type PgEnqueueOptions, type PgJobRow, type Queryable } from './job-queue.js';
export { PgLearningBudget, type BudgetReservation, type TeamSpendSummary } from './learning-budget.js';
export { toPostgresText, fromPostgresText, NUL_STAND_IN } from './text.js';
export {
  PgSkillStore,
  SkillConflictError,
  SKILLS_CHANNEL,
  parseStoredSkill,
  teamSkillPath,
  type StoredSkill,
  type SkillWrite,
  type SkillChanges,
  type WriteOptions,
  type FolderImport,
} from './skill-store.js';
export { PgSkillProposals } from './skill-proposals.js';
export { PgSkillEvolutions } from './skill-evolutions.js';
export { SkillSubscription, type SubscriptionOptions } from './skill-subscription.js';
export { followTeamSkills, type FollowedSkills } from './team-skills.js';
export { PgMemberDirectory } from './members.js';
export { PgTurnSink, type PgTurnSinkOptions } from './turn-sink.js';
export { PgConversationReads, type SessionEnder } from './conversation-reads.js';
export { pgRecordingListeners, type PgConversationListener, type PgDispatchHooks } from './recording.js';
export { SegmentRaceError } from './segment-stage.js';
export {
  PgMemoryContextProvider,
  DEFAULT_MEMORY_TIMEOUT_MS,
  DEFAULT_MEMORY_BACKOFF_MS,
  type PgMemoryProviderOptions,
  type PgMemoryStatus,
} from './memory-provider.js';
export { PgMemoryWriter, addPgMemory } from './memory-writer.js';
export { ChannelListener, type ChannelListenerOptions, type ChannelHandlers } from './channel-listener.js';
export { MEMORY_CHANNEL } from '../postgres-schema.js';
export { pgMemoryJobHandlers, type PgMemoryJobsOptions } from './memory-jobs.js';
export { MemoryWorkspace, StaleMemoryError } from './memory-workspace.js';
export { pgSkillEvolveHandler, type PgSkillJobDeps } from './skill-jobs.js';
export { SessionPlacements, SESSIONS_CHANNEL } from './session-placements.js';
export { PgMemoryApi } from './memory-api.js';
export { forgetPgScope, type ForgottenScope } from './forget-scope.js';
export { enableVectorsIfInstalled, readVectorSupport, type VectorSupport } from './vector-support.js';
export { PgMemoryVectors, readVectorModel, VECTORS_MODEL_KEY, type VectorModel } from './memory-vectors.js';
export { pgEmbedHandler } from './vector-jobs.js';
export { PgRlSamples, sampleRecording } from './rl-samples.js';
export { PgTrainingSteps, pgServedPolicyState, readTeamRun, SERVED_POLICY_CHANNEL } from './rl-steps.js';
export { beginTeamRun, PgRunPresence, recordTeamRun, recordTeamRunStart } from './rl-run.js';
export { PgTrainerLease, trainerLockHeld } from './trainer-lease.js';
export { pgRlJudgeHandler, pgRlTeacherHandler, queueTeacherJobs, type PgRlJudgeDeps } from './rl-jobs.js';
export { PgMemorySearch } from './memory-search.js';
export { PgUserLanguages } from './team-languages.js';
export { PgSkillKeys, pgSkillSearchKeysHandler, queueSkillSearchKeys, type PgSkillKeyJobDeps } from './skill-key-jobs.js';
export { pgMemorySearchKeysHandler, type PgMemoryKeyJobDeps } from './memory-key-jobs.js';
export { pgHousekeepingHandler, scheduleTeamHousekeeping } from './memory-housekeeping.js';
export { pgReindexHandler, queueTeamReindex } from './memory-reindex.js';
export { PgSkillCredit } from './skill-credit.js';
