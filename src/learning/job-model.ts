/**
 * The learning queue's job model, one for both engines: the personal queue (SQLite, `queue.ts`)
 * and the team queue (PostgreSQL, `store/postgres/job-queue.ts`) hand out, retry and bury jobs
 * alike, so a worker runs the same on either.
 */

export type JobStatus = 'queued' | 'leased' | 'done' | 'dead';

export interface Job {
  id: number;
  kind: string;
  payload: unknown;
  attempts: number;
  maxAttempts: number;
  createdAt: number;
}

export interface JobRow {
  id: number;
  kind: string;
  payload: string;
  dedupe_key: string | null;
  status: JobStatus;
  attempts: number;
  max_attempts: number;
  run_after: number;
  lease_until: number | null;
  leased_by: string | null;
  last_error: string | null;
  tokens_used: number;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
  /** 1 when the job was asked for again while it ran (`rerunIfRunning`): finishing it queues a fresh copy. */
  rerun: number;
}

export interface EnqueueOptions {
  /** At most one queued-or-running job per key: a second enqueue with the same key is a no-op. */
  dedupeKey?: string;
  /**
   * For a job that works from the state it reads when it runs (embed what has no vector, evolve
   * from the turns after a watermark): an enqueue with the same key while it runs asks for one
   * more run, queued when it finishes (done or dead). Without it, what changed after the running
   * job read the state would wait for the next enqueue, which may never come. The pending job then
   * takes this ask's payload (the latest ask says why the work is wanted now: an evolve job's reason
   * "session ended" rather than the "every N turns" of the ask it met), so its run or its copy uses it.
   */
  rerunIfRunning?: boolean;
  delayMs?: number;
  maxAttempts?: number;
}

export interface QueueCounts {
  queued: number;
  leased: number;
  done: number;
  dead: number;
}

/** What a job's failure becomes: another attempt later, or the dead-letter list. */
export type FailVerdict = 'retry' | 'dead';

/**
 * What asking to run a dead job again did: queued it with fresh attempts; found its work already
 * queued or running as job `by` (a job with the same dedupe key), so there is nothing to add; or
 * nothing, because the job is not dead or does not exist.
 */
export type ReviveOutcome = { outcome: 'queued' } | { outcome: 'covered'; by: number } | { outcome: 'not_dead'; status: JobStatus } | { outcome: 'missing' };

/** What dismissing a dead job did: deleted it, or nothing (it is not dead, or does not exist). */
export type DismissOutcome = { outcome: 'dismissed' } | { outcome: 'not_dead'; status: JobStatus } | { outcome: 'missing' };

/** A failure is kept to this many characters (a stack or an upstream body can be long). */
export const JOB_ERROR_MAX_CHARS = 2000;

/** Whether a failure at this attempt goes to the dead-letter list rather than back to the queue. */
export function failVerdict(job: Pick<Job, 'attempts' | 'maxAttempts'>, retryable: boolean): FailVerdict {
  return !retryable || job.attempts >= job.maxAttempts ? 'dead' : 'retry';
}

/** 5 s, 10 s, 20 s … capped at one hour, with ±20 % jitter so retries of a burst spread out. */
export function backoffMs(attempt: number): number {
  const base = Math.min(3_600_000, 5_000 * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}
