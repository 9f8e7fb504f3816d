/**
 * The stores as both engines offer them: the personal store (SQLite, synchronous classes, so the
 * request path keeps its plain calls) and the team store (PostgreSQL over a pool, every answer a
 * promise). Each port is the part of a store the two engines really share, with the same names and
 * arguments; code written against a port awaits every answer, which costs the synchronous engine
 * nothing. What only one engine has (the team queue's fencing effects, budget reservations, the
 * personal memory's index upkeep…) stays on its class. test/store-engines.test.ts runs the same
 * behaviours through these ports on both engines.
 */
import type { FinishedTurn, SessionEndReason, SessionRow, TurnDetail, TurnRow } from '../conversation/types.js';
import type { SpendSummary } from '../learning/budget.js';
import type { EnqueueOptions, FailVerdict, Job, JobRow, JobStatus, QueueCounts, ReviveOutcome, DismissOutcome } from '../learning/job-model.js';
import type { MemoryDraft, MemoryUnit } from '../memory/types.js';
import type { Awaitable } from '../types/index.js';
import type { VersionRow } from '../skills/history.js';
import type { IssuedKey, Member } from '../team/members.js';

export type { Awaitable } from '../types/index.js';
export type { RlSampleStore } from '../rl/buffer/port.js';
export type { PolicyInstaller, ServedPolicyState, StepStore } from '../rl/loop/ports.js';

/**
 * The learning queue: `JobQueue` (SQLite) and `PgJobQueue`. `J` is the job a lease hands out and
 * what completing, failing or releasing it takes back: the team store's carries its lease's fencing
 * token, so a write by a trainer whose lease was taken over is refused ('lease_lost', false).
 */
export interface JobQueueStore<J extends Job = Job> {
  /** The new job's id, or undefined when a pending job holds the same dedupe key. */
  enqueue(kind: string, payload: unknown, options?: EnqueueOptions): Awaitable<number | undefined>;
  /** The oldest ready job of one of `kinds`, leased for `leaseMs`. */
  lease(kinds: ReadonlySet<string>, leaseMs: number): Awaitable<J | undefined>;
  /** The job is done (the personal store answers nothing: its lease cannot be lost). */
  complete(job: J): Awaitable<'done' | 'duplicate' | 'lease_lost' | void>;
  /** Retried with backoff, or dead once its attempts are used up. */
  fail(job: J, error: string, options: { retryable: boolean; tokensUsed?: number }): Awaitable<FailVerdict | 'lease_lost'>;
  /** Back in the queue at once, the attempt not counted. */
  release(job: J): Awaitable<boolean | void>;
  /** A dead job is queued again with fresh attempts, unless a queued or running job holds its dedupe key. */
  revive(jobId: number): Awaitable<ReviveOutcome>;
  /** A dead job is deleted (the operator gave up on it); nothing else is. */
  dismiss(jobId: number): Awaitable<DismissOutcome>;
  get(jobId: number): Awaitable<JobRow | undefined>;
  counts(): Awaitable<QueueCounts>;
  /** Newest first; `kind` narrows to one kind of job. */
  list(status: JobStatus | 'all', limit?: number, kind?: string): Awaitable<JobRow[]>;
  /** Deletes done jobs finished before `olderThan`; how many. */
  pruneDone(olderThan: number): Awaitable<number>;
}

/** The daily learning budget: `LearningBudget` (SQLite) and `PgLearningBudget` (shared by the team's nodes). */
export interface LearningBudgetStore {
  /** Tokens a day; 0 means no limit. */
  readonly dailyLimit: number;
  record(kind: string, tokens: number, calls?: number, now?: Date): Awaitable<void>;
  summary(now?: Date): Awaitable<SpendSummary>;
  /** Why learning waits (today's spend reached the limit), or undefined. */
  pauseReason(now?: Date): Awaitable<string | undefined>;
}

/** Where memory units are written: `MemoryStore` (SQLite) and `PgMemoryWriter`. */
export interface MemoryUnitWriter {
  /** The stored unit, or undefined when `rawKey` names a raw turn already stored. */
  add(draft: MemoryDraft, options?: { rawKey?: string; id?: string }): Awaitable<MemoryUnit | undefined>;
}

/** A memory unit by id: `MemoryStore` (SQLite) and `PgMemoryApi`. */
export interface MemoryUnitReader {
  get(id: string): Awaitable<MemoryUnit | undefined>;
}

/** A skill's version history: `SkillHistory` (SQLite) and `PgSkillStore`. */
export interface SkillVersionStore {
  /** Every recorded version of the skill, oldest first. */
  versions(name: string): Awaitable<VersionRow[]>;
}

/** The conversation record's reads: `ConversationStore` (SQLite) and `PgConversationReads`. */
export interface ConversationReadStore {
  getSession(id: string): Awaitable<SessionRow | undefined>;
  getTurnSummary(id: string): Awaitable<TurnRow | undefined>;
  getTurn(id: string): Awaitable<TurnDetail | undefined>;
  turnsOfSession(sessionId: string): Awaitable<TurnRow[]>;
  turnOfResponse(responseId: string): Awaitable<TurnRow | undefined>;
  lastModelOf(sessionId: string): Awaitable<string | undefined>;
  latestModel(): Awaitable<string | undefined>;
  /** The request body as the client sent it. */
  receivedBody(turnId: string): Awaitable<unknown>;
  counts(): Awaitable<{ sessions: number; openSessions: number; turns: number }>;
  /** Whether this call ended the session. */
  endSession(id: string, reason: SessionEndReason, now?: number): Awaitable<boolean>;
}

/** Where finished turns are written: `TurnWriter` (SQLite, on the writer thread) and `PgTurnSink`. */
export interface TurnRecordSink {
  /** Writes turns in order; each turn's error, or undefined when it is stored. */
  write(turns: readonly FinishedTurn[]): Awaitable<unknown[]>;
  /** Whether this call ended the session. */
  endSession(sessionId: string, reason: SessionEndReason, now?: number): Awaitable<boolean>;
  /** The sessions this call ended for being idle since before `cutoff`. */
  endIdleSessions(cutoff: number): Awaitable<string[]>;
}

/** The team's members and their keys: `MemberDirectory` (SQLite) and `PgMemberDirectory`. */
export interface MemberStore {
  add(name: string): Awaitable<IssuedKey>;
  rotateKey(name: string): Awaitable<IssuedKey>;
  remove(name: string): Awaitable<Member>;
  list(): Awaitable<Member[]>;
  hasMembers(): Awaitable<boolean>;
}
