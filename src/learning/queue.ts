import type { Db } from '../store/index.js';
import {
  backoffMs,
  failVerdict,
  JOB_ERROR_MAX_CHARS,
  type EnqueueOptions,
  type Job,
  type JobRow,
  type JobStatus,
  type QueueCounts,
  type ReviveOutcome,
  type DismissOutcome,
} from './job-model.js';
import type { JobQueueStore } from '../store/ports.js';

/**
 * A durable job queue in SQLite. Jobs survive crashes: a job leased by a process that died is
 * handed out again once its lease expires (or at once on the next start, see `recoverAbandoned`).
 * Failures retry with exponential backoff; after `maxAttempts` a job goes to the dead-letter list.
 */
export class JobQueue implements JobQueueStore {
  private readonly statements;

  constructor(
    private readonly db: Db,
    private readonly instanceId: string,
    private readonly defaultMaxAttempts: number,
  ) {
    this.statements = {
      insert: db.prepare(`
        INSERT INTO jobs (kind, payload, dedupe_key, status, attempts, max_attempts, run_after, created_at, updated_at)
        VALUES (?, ?, ?, 'queued', 0, ?, ?, ?, ?)
        ON CONFLICT DO NOTHING`),
      askRerun: db.prepare<[string, string]>(
        `UPDATE jobs SET rerun = CASE WHEN status = 'leased' THEN 1 ELSE rerun END, payload = ? WHERE dedupe_key = ? AND status IN ('queued', 'leased')`,
      ),
      // After the job left the dedupe index (done or dead), so the copy takes its key; a job queued
      // in between (its key free by then) stands for the copy.
      spawnRerun: db.prepare<[number, number, number, number]>(`
        INSERT INTO jobs (kind, payload, dedupe_key, status, attempts, max_attempts, run_after, created_at, updated_at)
        SELECT kind, payload, dedupe_key, 'queued', 0, max_attempts, ?, ?, ? FROM jobs WHERE id = ? AND rerun = 1
        ON CONFLICT DO NOTHING`),
      // The kinds filter runs in SQLite: jobs nobody here can run (a paused or absent worker) are
      // skipped without being read into JavaScript at every poll.
      nextReady: db.prepare<[number, string], JobRow>(
        `SELECT * FROM jobs WHERE status = 'queued' AND run_after <= ? AND kind IN (SELECT value FROM json_each(?)) ORDER BY run_after, id LIMIT 1`,
      ),
      lease: db.prepare<[number, string, number, number]>(
        `UPDATE jobs SET status = 'leased', lease_until = ?, leased_by = ?, attempts = attempts + 1, updated_at = ?, rerun = 0 WHERE id = ? AND status = 'queued'`,
      ),
      complete: db.prepare<[number, number, number, number], { rerun: number }>(
        `UPDATE jobs SET status = 'done', tokens_used = tokens_used + ?, finished_at = ?, updated_at = ?, lease_until = NULL, last_error = NULL WHERE id = ? RETURNING rerun`,
      ),
      retry: db.prepare<[number, string, number, number, number]>(
        `UPDATE jobs SET status = 'queued', run_after = ?, last_error = ?, tokens_used = tokens_used + ?, updated_at = ?, lease_until = NULL, leased_by = NULL WHERE id = ?`,
      ),
      bury: db.prepare<[string, number, number, number, number], { rerun: number }>(
        `UPDATE jobs SET status = 'dead', last_error = ?, tokens_used = tokens_used + ?, finished_at = ?, updated_at = ?, lease_until = NULL WHERE id = ? RETURNING rerun`,
      ),
      release: db.prepare<[number, number]>(
        `UPDATE jobs SET status = 'queued', attempts = MAX(attempts - 1, 0), lease_until = NULL, leased_by = NULL, updated_at = ? WHERE id = ? AND status = 'leased'`,
      ),
      extendLease: db.prepare<[number, number, number]>(`UPDATE jobs SET lease_until = ?, updated_at = ? WHERE id = ? AND status = 'leased'`),
      abandoned: db.prepare<[string, number]>(
        `UPDATE jobs SET status = 'queued', lease_until = NULL, leased_by = NULL WHERE status = 'leased' AND (leased_by IS NULL OR leased_by != ? OR lease_until < ?)`,
      ),
      counts: db.prepare<[], { status: JobStatus; count: number }>(`SELECT status, COUNT(*) AS count FROM jobs GROUP BY status`),
      // Two statements, so that a status is looked up in its index (jobs_ready) rather than read off a scan.
      listAll: db.prepare<{ kind: string | null; limit: number }, JobRow>(
        `SELECT * FROM jobs WHERE @kind IS NULL OR kind = @kind ORDER BY id DESC LIMIT @limit`,
      ),
      listByStatus: db.prepare<{ status: string; kind: string | null; limit: number }, JobRow>(
        `SELECT * FROM jobs WHERE status = @status AND (@kind IS NULL OR kind = @kind) ORDER BY id DESC LIMIT @limit`,
      ),
      get: db.prepare<[number], JobRow>(`SELECT * FROM jobs WHERE id = ?`),
      // Not while another job holds its key: that job does the same work, and the dedupe index
      // would refuse a second one.
      revive: db.prepare<[number, number, number]>(
        `UPDATE jobs SET status = 'queued', attempts = 0, run_after = ?, finished_at = NULL, updated_at = ?, rerun = 0
         WHERE id = ? AND status = 'dead' AND NOT EXISTS (SELECT 1 FROM jobs AS pending WHERE pending.dedupe_key = jobs.dedupe_key AND pending.status IN ('queued', 'leased'))`,
      ),
      dismiss: db.prepare<[number]>(`DELETE FROM jobs WHERE id = ? AND status = 'dead'`),
      pendingWithKey: db.prepare<[string], { id: number }>(`SELECT id FROM jobs WHERE dedupe_key = ? AND status IN ('queued', 'leased') LIMIT 1`),
      pruneDone: db.prepare<[number]>(`DELETE FROM jobs WHERE status = 'done' AND finished_at < ?`),
    };
  }

  /**
   * Adds a job; returns its id, or undefined when an identical (same dedupe key) job is pending (a
   * running one is then asked to run once more, with `rerunIfRunning`).
   */
  enqueue(kind: string, payload: unknown, options: EnqueueOptions = {}): number | undefined {
    const { dedupeKey } = options;
    const insert = (): number | undefined => {
      const now = Date.now();
      const result = this.statements.insert.run(
        kind,
        JSON.stringify(payload ?? null),
        dedupeKey ?? null,
        options.maxAttempts ?? this.defaultMaxAttempts,
        now + (options.delayMs ?? 0),
        now,
        now,
      );
      return result.changes > 0 ? Number(result.lastInsertRowid) : undefined;
    };
    if (!options.rerunIfRunning || dedupeKey === undefined) return insert();
    // One transaction: the job this insert met cannot finish between the two statements.
    return this.db.transaction(() => {
      const id = insert();
      if (id === undefined) this.statements.askRerun.run(JSON.stringify(payload ?? null), dedupeKey);
      return id;
    })();
  }

  /** Takes the next ready job of one of `kinds` for `leaseMs`; undefined when none is ready. */
  lease(kinds: ReadonlySet<string>, leaseMs: number, now = Date.now()): Job | undefined {
    if (kinds.size === 0) return undefined;
    const kindList = JSON.stringify([...kinds]);
    return this.db
      .transaction(() => {
        const row = this.statements.nextReady.get(now, kindList);
        // Should another process have taken it meanwhile, the next poll looks again.
        if (!row || this.statements.lease.run(now + leaseMs, this.instanceId, now, row.id).changes === 0) return undefined;
        return {
          id: row.id,
          kind: row.kind,
          payload: JSON.parse(row.payload) as unknown,
          attempts: row.attempts + 1,
          maxAttempts: row.max_attempts,
          createdAt: row.created_at,
        };
      })
      .immediate();
  }

  extendLease(jobId: number, leaseMs: number): void {
    const now = Date.now();
    this.statements.extendLease.run(now + leaseMs, now, jobId);
  }

  /** `job`: the leased job or its id (the id is all the personal store needs: its leases cannot be taken over). */
  complete(job: number | Pick<Job, 'id'>, tokensUsed = 0): void {
    const now = Date.now();
    const id = jobIdOf(job);
    if (this.statements.complete.get(tokensUsed, now, now, id)?.rerun === 1) this.statements.spawnRerun.run(now, now, now, id);
  }

  /** Records a failure: retried with backoff, or dead-lettered once attempts are used up. */
  fail(job: Job, error: string, options: { retryable: boolean; tokensUsed?: number }): 'retry' | 'dead' {
    const now = Date.now();
    const tokens = options.tokensUsed ?? 0;
    if (failVerdict(job, options.retryable) === 'dead') {
      if (this.statements.bury.get(error.slice(0, JOB_ERROR_MAX_CHARS), tokens, now, now, job.id)?.rerun === 1)
        this.statements.spawnRerun.run(now, now, now, job.id);
      return 'dead';
    }
    this.statements.retry.run(now + backoffMs(job.attempts), error.slice(0, JOB_ERROR_MAX_CHARS), tokens, now, job.id);
    return 'retry';
  }

  /** Puts a leased job back without counting the attempt (clean shutdown mid-job). */
  release(job: number | Pick<Job, 'id'>): void {
    this.statements.release.run(Date.now(), jobIdOf(job));
  }

  /** Re-queues jobs leased by a process that is gone. Call once at start, while holding the pid lock. */
  recoverAbandoned(now = Date.now()): number {
    return this.statements.abandoned.run(this.instanceId, now).changes;
  }

  counts(): QueueCounts {
    const counts: QueueCounts = { queued: 0, leased: 0, done: 0, dead: 0 };
    for (const row of this.statements.counts.all()) counts[row.status] = row.count;
    return counts;
  }

  list(status: JobStatus | 'all', limit = 50, kind?: string): JobRow[] {
    const filter = { kind: kind ?? null, limit };
    return status === 'all' ? this.statements.listAll.all(filter) : this.statements.listByStatus.all({ ...filter, status });
  }

  get(jobId: number): JobRow | undefined {
    return this.statements.get.get(jobId);
  }

  /** Sends a dead job back to the queue with fresh attempts, unless a pending job already does its work. */
  revive(jobId: number): ReviveOutcome {
    const now = Date.now();
    return this.db.transaction((): ReviveOutcome => {
      if (this.statements.revive.run(now, now, jobId).changes > 0) return { outcome: 'queued' };
      const row = this.statements.get.get(jobId);
      if (!row) return { outcome: 'missing' };
      if (row.status !== 'dead') return { outcome: 'not_dead', status: row.status };
      return { outcome: 'covered', by: this.statements.pendingWithKey.get(row.dedupe_key!)!.id };
    })();
  }

  dismiss(jobId: number): DismissOutcome {
    if (this.statements.dismiss.run(jobId).changes > 0) return { outcome: 'dismissed' };
    const row = this.statements.get.get(jobId);
    return row ? { outcome: 'not_dead', status: row.status } : { outcome: 'missing' };
  }

  pruneDone(olderThan: number): number {
    return this.statements.pruneDone.run(olderThan).changes;
  }
}

const jobIdOf = (job: number | Pick<Job, 'id'>): number => (typeof job === 'number' ? job : job.id);
