import type pg from 'pg';
import {
  backoffMs,
  failVerdict,
  JOB_ERROR_MAX_CHARS,
  type EnqueueOptions,
  type FailVerdict,
  type Job,
  type JobRow,
  type JobStatus,
  type QueueCounts,
  type ReviveOutcome,
  type DismissOutcome,
} from '../../learning/job-model.js';
import { DB_CLOCK_MS as CLOCK, inTransaction } from './transaction.js';
import type { JobQueueStore } from '../ports.js';

/**
 * The learning queue shared by many nodes on one PostgreSQL: the personal queue's job model
 * (learning/job-model.ts: kinds, JSON payloads, dedupe keys, attempts, backoff, dead letters) with
 * what a queue needs once several processes on several machines drain it.
 *
 * - A node claims a job with `FOR UPDATE SKIP LOCKED`: nodes polling at once each get a different
 *   job, none waits for another's claim.
 * - A lease has a deadline (heartbeats push it on) and a fencing token, raised by one at every
 *   lease. A node that dies loses its jobs when their deadlines pass: any node then claims them, so
 *   there is no recovery step at start (the SQLite queue's `recoverAbandoned` assumes one process).
 * - Every write a worker makes about its job (complete, fail, release, heartbeat) counts only while
 *   the job still carries the worker's token: a node whose lease expired and was taken over is told
 *   `lease_lost` and changes nothing.
 * - Completing runs the job's effect in the transaction that records the job's idempotency key in
 *   job_effects, then locks the job's row and marks it done: an effect is written once per key,
 *   however many nodes race, and never by a node that lost its lease.
 *
 * Times are the database's clock, not the node's: nodes whose clocks disagree still agree on when
 * a lease ends and a retry is due. They are epoch milliseconds, as in SQLite.
 */

/** A pool, or a client inside a transaction (enqueue in the transaction that records a turn). */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

export interface PgEnqueueOptions extends EnqueueOptions {
  /** Whose effect the job writes: jobs sharing a key write one effect between them (default: the job's own, job:<id>). */
  idempotencyKey?: string;
}

/** A job this node holds: its fencing token goes with every write about it. */
export interface LeasedJob extends Job {
  readonly leaseToken: number;
  readonly idempotencyKey: string;
}

export interface PgJobRow extends JobRow {
  lease_token: number;
  idempotency_key: string | null;
}

/** The job's effect: runs in the completing transaction, on its client; a throw rolls it all back. */
export type JobEffect = (client: pg.PoolClient) => Promise<void>;

/**
 * done: the effect was written and the job is done. duplicate: another job with the same key wrote
 * it already; this one is done without writing. lease_lost: the job is no longer this node's
 * (its lease expired and another node took it, or it was released): nothing was written.
 */
export type CompleteOutcome = 'done' | 'duplicate' | 'lease_lost';

/** The predicate of the dedupe index (jobs_dedupe): a key holds while its job is queued or running. */
const DEDUPED = `dedupe_key IS NOT NULL AND status IN ('queued', 'leased')`;

/**
 * A fresh copy of job $1 when it was asked to run again while it ran (rerun), queued now. Run
 * after the job left the dedupe index (done or dead), so the copy takes its key; a job queued
 * meanwhile with that key stands for it.
 */
const SPAWN_RERUN = `
  INSERT INTO jobs (kind, payload, dedupe_key, status, attempts, max_attempts, run_after, created_at, updated_at)
  SELECT kind, payload, dedupe_key, 'queued', 0, max_attempts, ${CLOCK}, ${CLOCK}, ${CLOCK} FROM jobs WHERE id = $1 AND rerun = 1
  ON CONFLICT DO NOTHING`;

/** A job held under a lease: still leased and still carrying the worker's token. */
const FENCED = `id = $1 AND status = 'leased' AND lease_token = $2`;

export class PgJobQueue implements JobQueueStore<LeasedJob> {
  constructor(
    private readonly pool: pg.Pool,
    /** This node's name in leased_by and job_effects (for an operator reading them; the token is what fences). */
    private readonly nodeId: string,
    private readonly defaultMaxAttempts: number,
  ) {}

  /**
   * Adds a job; its id, or undefined when a job with the same dedupe key is queued or running (a
   * running one is then asked to run once more, with `rerunIfRunning`).
   */
  async enqueue(kind: string, payload: unknown, options: PgEnqueueOptions = {}, db: Queryable = this.pool): Promise<number | undefined> {
    // The rerun request updates the running job's row, so it waits for a worker completing it right
    // now; once that commits, the job has left the dedupe index and PostgreSQL retries the insert.
    // Either way the request is seen: a rerun asked of the running job, or a new job. The pending job
    // takes the latest ask's payload (see EnqueueOptions.rerunIfRunning).
    const onConflict =
      options.rerunIfRunning && options.dedupeKey !== undefined
        ? `ON CONFLICT (dedupe_key) WHERE ${DEDUPED} DO UPDATE SET rerun = CASE WHEN jobs.status = 'leased' THEN 1 ELSE jobs.rerun END, payload = EXCLUDED.payload`
        : 'ON CONFLICT DO NOTHING';
    const result = await db.query<{ id: string; inserted: boolean }>(
      `INSERT INTO jobs (kind, payload, dedupe_key, status, attempts, max_attempts, run_after, created_at, updated_at, idempotency_key)
       SELECT $1::text, $2::text, $3::text, 'queued', 0, $4::integer, now + $5::bigint, now, now, $6::text FROM (SELECT ${CLOCK} AS now) clock
       ${onConflict} RETURNING id, xmax = 0 AS inserted`,
      [
        kind,
        JSON.stringify(payload ?? null),
        options.dedupeKey ?? null,
        options.maxAttempts ?? this.defaultMaxAttempts,
        options.delayMs ?? 0,
        options.idempotencyKey ?? null,
      ],
    );
    const row = result.rows[0];
    return row?.inserted ? Number(row.id) : undefined;
  }

  /**
   * Claims the next ready job of one of `kinds` for `leaseMs`: a queued job whose time has come, or
   * a leased one whose lease ran out (its node is gone or stuck), oldest first. Rows another node
   * is claiming or completing right now are skipped, not waited for. Undefined when none is ready.
   */
  async lease(kinds: ReadonlySet<string>, leaseMs: number): Promise<LeasedJob | undefined> {
    if (kinds.size === 0) return undefined;
    const result = await this.pool.query<PgJobRow>(
      `WITH clock AS (SELECT ${CLOCK} AS now),
       next AS (
         SELECT jobs.id FROM jobs, clock
         WHERE jobs.kind = ANY($1::text[])
           AND ((jobs.status = 'queued' AND jobs.run_after <= clock.now) OR (jobs.status = 'leased' AND jobs.lease_until < clock.now))
         ORDER BY jobs.run_after, jobs.id
         LIMIT 1
         FOR UPDATE OF jobs SKIP LOCKED
       )
       UPDATE jobs SET status = 'leased', lease_until = clock.now + $2, leased_by = $3, attempts = jobs.attempts + 1,
         lease_token = jobs.lease_token + 1, updated_at = clock.now, rerun = 0
       FROM next, clock WHERE jobs.id = next.id
       RETURNING jobs.*`,
      [[...kinds], leaseMs, this.nodeId],
    );
    const row = result.rows[0];
    if (!row) return undefined;
    const job = toRow(row);
    return {
      id: job.id,
      kind: job.kind,
      payload: JSON.parse(job.payload) as unknown,
      attempts: job.attempts,
      maxAttempts: job.max_attempts,
      createdAt: job.created_at,
      leaseToken: job.lease_token,
      idempotencyKey: job.idempotency_key ?? `job:${job.id}`,
    };
  }

  /** The heartbeat: pushes the lease's deadline to `leaseMs` from now. False: the lease is lost (stop working on the job). */
  async extendLease(job: LeasedJob, leaseMs: number): Promise<boolean> {
    const result = await this.pool.query(`UPDATE jobs SET lease_until = ${CLOCK} + $3, updated_at = ${CLOCK} WHERE ${FENCED}`, [
      job.id,
      job.leaseToken,
      leaseMs,
    ]);
    return result.rowCount === 1;
  }

  /**
   * Finishes a job and writes its effect, all or nothing, only while this node holds the lease and
   * only if no effect was recorded under the job's idempotency key. The job's row is locked after the
   * effect ran, so no node can claim it between the last check and the commit. An effect that
   * throws rolls everything back and the error is thrown (the caller then calls `fail`).
   */
  async complete(job: LeasedJob, options: { tokensUsed?: number; effect?: JobEffect } = {}): Promise<CompleteOutcome> {
    const fence = [job.id, job.leaseToken];
    return inTransaction(
      this.pool,
      async (client): Promise<CompleteOutcome> => {
        // A node that lost its lease runs no effect (looked at again, under the lock, at the end).
        if ((await client.query(`SELECT 1 FROM jobs WHERE ${FENCED}`, fence)).rowCount !== 1) return 'lease_lost';
        const recorded = await client.query(
          `INSERT INTO job_effects (idempotency_key, job_id, lease_token, node_id, created_at) VALUES ($1, $2, $3, $4, ${CLOCK}) ON CONFLICT DO NOTHING`,
          [job.idempotencyKey, job.id, job.leaseToken, this.nodeId],
        );
        const fresh = recorded.rowCount === 1;
        if (fresh && options.effect) await options.effect(client);
        // The job's row is locked last, after what the effect locked (a scope, rows): a transaction
        // that holds one of those and asks this job to rerun (an upsert of this row) is then never
        // waited on crosswise (a deadlock, when the row was locked first).
        if ((await client.query(`SELECT 1 FROM jobs WHERE ${FENCED} FOR UPDATE`, fence)).rowCount !== 1) return 'lease_lost';
        await client.query(
          `UPDATE jobs SET status = 'done', tokens_used = tokens_used + $3, finished_at = ${CLOCK}, updated_at = ${CLOCK}, lease_until = NULL, last_error = NULL WHERE ${FENCED}`,
          [...fence, Math.max(0, Math.round(options.tokensUsed ?? 0))],
        );
        await client.query(SPAWN_RERUN, [job.id]);
        return fresh ? 'done' : 'duplicate';
      },
      // A lease lost while the effect ran: nothing of it is written.
      (outcome) => Promise.resolve(outcome !== 'lease_lost'),
    );
  }

  /** Records a failure as the SQLite queue does (retry with backoff, or the dead-letter list once attempts are used up), if the lease is still held. */
  async fail(job: LeasedJob, error: string, options: { retryable: boolean; tokensUsed?: number }): Promise<FailVerdict | 'lease_lost'> {
    const verdict = failVerdict(job, options.retryable);
    const tokens = Math.max(0, Math.round(options.tokensUsed ?? 0));
    const message = error.slice(0, JOB_ERROR_MAX_CHARS);
    if (verdict === 'dead')
      // Buried and its rerun copy queued in one transaction: a failure between the two would leave the
      // job dead and the rerun it was asked for never queued.
      return inTransaction(this.pool, async (client) => {
        const buried = await client.query(
          `UPDATE jobs SET status = 'dead', last_error = $3, tokens_used = tokens_used + $4, finished_at = ${CLOCK}, updated_at = ${CLOCK}, lease_until = NULL WHERE ${FENCED}`,
          [job.id, job.leaseToken, message, tokens],
        );
        if (buried.rowCount !== 1) return 'lease_lost';
        await client.query(SPAWN_RERUN, [job.id]);
        return 'dead';
      });
    const result = await this.pool.query(
      `UPDATE jobs SET status = 'queued', run_after = ${CLOCK} + $5, last_error = $3, tokens_used = tokens_used + $4, updated_at = ${CLOCK},
         lease_until = NULL, leased_by = NULL WHERE ${FENCED}`,
      [job.id, job.leaseToken, message, tokens, backoffMs(job.attempts)],
    );
    return result.rowCount === 1 ? verdict : 'lease_lost';
  }

  /** Puts a held job back without counting the attempt (a clean shutdown mid-job). False: the lease was lost already. */
  async release(job: LeasedJob): Promise<boolean> {
    const result = await this.pool.query(
      `UPDATE jobs SET status = 'queued', attempts = GREATEST(attempts - 1, 0), lease_until = NULL, leased_by = NULL, updated_at = ${CLOCK} WHERE ${FENCED}`,
      [job.id, job.leaseToken],
    );
    return result.rowCount === 1;
  }

  async counts(): Promise<QueueCounts> {
    const counts: QueueCounts = { queued: 0, leased: 0, done: 0, dead: 0 };
    const result = await this.pool.query<{ status: JobStatus; count: string }>('SELECT status, count(*) AS count FROM jobs GROUP BY status');
    for (const row of result.rows) counts[row.status] = Number(row.count);
    return counts;
  }

  async list(status: JobStatus | 'all', limit = 50, kind?: string): Promise<PgJobRow[]> {
    const result = await this.pool.query<PgJobRow>(
      `SELECT * FROM jobs WHERE ($1::text = 'all' OR status = $1) AND ($2::text IS NULL OR kind = $2) ORDER BY id DESC LIMIT $3`,
      [status, kind ?? null, limit],
    );
    return result.rows.map(toRow);
  }

  async get(jobId: number): Promise<PgJobRow | undefined> {
    const row = (await this.pool.query<PgJobRow>('SELECT * FROM jobs WHERE id = $1', [jobId])).rows[0];
    return row ? toRow(row) : undefined;
  }

  /** Sends a dead job back to the queue with fresh attempts, unless a pending job already does its work. */
  async revive(jobId: number): Promise<ReviveOutcome> {
    try {
      const result = await this.pool.query(
        `UPDATE jobs SET status = 'queued', attempts = 0, run_after = ${CLOCK}, finished_at = NULL, updated_at = ${CLOCK}, rerun = 0
         WHERE id = $1 AND status = 'dead' AND NOT EXISTS (SELECT 1 FROM jobs AS pending WHERE pending.dedupe_key = jobs.dedupe_key AND pending.status IN ('queued', 'leased'))`,
        [jobId],
      );
      if (result.rowCount === 1) return { outcome: 'queued' };
    } catch (error) {
      // A node queued a job with the same key after this statement's snapshot: that job does the work.
      if ((error as { code?: string }).code !== '23505') throw error;
    }
    const row = (
      await this.pool.query<{ status: JobStatus; pending: string | null }>(
        `SELECT status, (SELECT id FROM jobs AS pending WHERE pending.dedupe_key = jobs.dedupe_key AND pending.status IN ('queued', 'leased') LIMIT 1) AS pending
       FROM jobs WHERE id = $1`,
        [jobId],
      )
    ).rows[0];
    if (!row) return { outcome: 'missing' };
    if (row.status !== 'dead') return { outcome: 'not_dead', status: row.status };
    // The pending job may have finished in between: then the dead one can go back after all.
    return row.pending === null ? await this.revive(jobId) : { outcome: 'covered', by: Number(row.pending) };
  }

  async dismiss(jobId: number): Promise<DismissOutcome> {
    if ((await this.pool.query(`DELETE FROM jobs WHERE id = $1 AND status = 'dead'`, [jobId])).rowCount === 1) return { outcome: 'dismissed' };
    const row = (await this.pool.query<{ status: JobStatus }>('SELECT status FROM jobs WHERE id = $1', [jobId])).rows[0];
    return row ? { outcome: 'not_dead', status: row.status } : { outcome: 'missing' };
  }

  /** Deletes done jobs finished before `olderThan`; their effects stay recorded (job_effects), so a key is never written twice. */
  async pruneDone(olderThan: number): Promise<number> {
    return (await this.pool.query(`DELETE FROM jobs WHERE status = 'done' AND finished_at < $1`, [olderThan])).rowCount ?? 0;
  }
}

/** int8 comes from the driver as text: numbers here, as the SQLite queue's rows have them. */
function toRow(row: PgJobRow): PgJobRow {
  const number = (value: unknown): number => Number(value);
  const nullable = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));
  return {
    ...row,
    id: number(row.id),
    attempts: number(row.attempts),
    max_attempts: number(row.max_attempts),
    run_after: number(row.run_after),
    lease_until: nullable(row.lease_until),
    tokens_used: number(row.tokens_used),
    created_at: number(row.created_at),
    updated_at: number(row.updated_at),
    finished_at: nullable(row.finished_at),
    lease_token: number(row.lease_token),
  };
}
