import type pg from 'pg';
import { z } from 'zod';
import {
  finiteMetrics,
  finiteOrNull,
  fromRow,
  parseServedPolicy,
  refusalsInRow,
  parseTrainingRun,
  SERVED_POLICY_KEY,
  TRAINING_RUN_KEY,
  type ServedPolicyRecord,
  type ServedPolicyState,
  type StepRecord,
  type StepRow,
  type StepStore,
  type StepTrigger,
  type TrainingRun,
} from '../../rl/loop/index.js';
import type { StepMetrics } from '../../rl/types.js';
import { inTransaction } from './transaction.js';

const int = z.coerce.number();
const nullableInt = z.coerce.number().nullable();

/** A row as PostgreSQL returns it (BIGINT as text), read into SQLite's row shape. */
const rowSchema = z.object({
  step: int,
  status: z.enum(['running', 'done', 'empty', 'abandoned', 'failed']),
  trigger: z.enum(['window', 'manual']),
  skill_generation: int,
  samples: int,
  loss: z.number().nullable(),
  metrics: z.string().nullable(),
  sampler_path: z.string().nullable(),
  state_path: z.string().nullable(),
  started_at: int,
  finished_at: nullableInt,
  error: z.string().nullable(),
}) satisfies z.ZodType<StepRow>;

function records(rows: unknown[]): StepRecord[] {
  return z.array(rowSchema).parse(rows).map(fromRow);
}

/**
 * The team's training-run record (the state key a personal install uses), read with rl/loop/run.ts's
 * schema; `forUpdate` (in a transaction) holds its row until the transaction ends.
 */
export async function readTeamRun(db: pg.Pool | pg.PoolClient, forUpdate = false): Promise<TrainingRun | undefined> {
  const result = await db.query(`SELECT value FROM state WHERE key = $1${forUpdate ? ' FOR UPDATE' : ''}`, [TRAINING_RUN_KEY]);
  return parseTrainingRun(z.array(z.object({ value: z.string() })).parse(result.rows)[0]?.value);
}

/**
 * The team's training steps (table rl_steps, SQLite's columns): rl/loop/steps.ts's `TrainingSteps` on
 * the team store. Steps of the team's earlier runs (the run record's `after_step`, read at each
 * call, so a new run begun by the trainer counts on every node at once) are never resumed from nor served.
 */
export class PgTrainingSteps implements StepStore {
  constructor(private readonly pool: pg.Pool) {}

  /** The last step ever taken, by any run (0 when none). */
  async lastStep(): Promise<number> {
    const result = await this.pool.query('SELECT COALESCE(MAX(step), 0) AS step FROM rl_steps');
    return z.array(z.object({ step: int })).parse(result.rows)[0]?.step ?? 0;
  }

  private async afterStep(): Promise<number> {
    return (await readTeamRun(this.pool))?.after_step ?? 0;
  }

  async begin(trigger: StepTrigger, skillGeneration: number, samples: number, now: number): Promise<number> {
    // One statement: the number is one past the last step ever taken, whichever node took it.
    const result = await this.pool.query(
      `INSERT INTO rl_steps (step, status, trigger, skill_generation, samples, started_at)
       SELECT COALESCE(MAX(step), 0) + 1, 'running', $1, $2, $3, $4 FROM rl_steps RETURNING step`,
      [trigger, skillGeneration, samples, now],
    );
    return z.array(z.object({ step: int })).parse(result.rows)[0]!.step;
  }

  /** Conditional on the step still running: a trainer that lost its lock cannot finish a step the next trainer abandoned. */
  async finish(step: number, result: { metrics: StepMetrics; samplerPath: string; statePath: string | null }, now: number): Promise<boolean> {
    const done = await this.pool.query(
      "UPDATE rl_steps SET status = 'done', loss = $1, metrics = $2, sampler_path = $3, state_path = $4, finished_at = $5 WHERE step = $6 AND status = 'running'",
      [finiteOrNull(result.metrics.loss), JSON.stringify(finiteMetrics(result.metrics.metrics)), result.samplerPath, result.statePath, now, step],
    );
    return (done.rowCount ?? 0) > 0;
  }

  /** An abandoned or failed step gives its claimed samples back (PgRlSamples.claim), in the same transaction; an empty one used them up. */
  async end(step: number, status: 'empty' | 'abandoned' | 'failed', error: string, now: number, refusedBatch?: string): Promise<boolean> {
    return inTransaction(this.pool, async (client) => {
      const ended = await client.query(
        "UPDATE rl_steps SET status = $1, error = $2, finished_at = $3, refused_batch = $4 WHERE step = $5 AND status = 'running'",
        [status, error, now, refusedBatch ?? null, step],
      );
      if (status !== 'empty') await client.query(`UPDATE rl_samples SET trained_step = NULL WHERE trained_step = $1`, [step]);
      return (ended.rowCount ?? 0) > 0;
    });
  }

  /** Read from the team's steps, whichever trainer recorded them. */
  async refusals(batch: string, limit: number): Promise<number> {
    const result = await this.pool.query('SELECT refused_batch FROM rl_steps WHERE refused_batch IS NOT NULL ORDER BY step DESC LIMIT $1', [limit]);
    return refusalsInRow(z.array(z.object({ refused_batch: z.string() })).parse(result.rows), batch);
  }

  /**
   * Called by a node that just became the team's trainer: a step left running was cut by the trainer
   * before it (which may still be running it, having lost its lock). Its samples are given back in
   * the same transaction, so the new trainer takes them, and the old one can no longer finish it.
   */
  async abandonInterrupted(now: number): Promise<number> {
    return inTransaction(this.pool, async (client) => {
      const result = await client.query(
        "UPDATE rl_steps SET status = 'abandoned', error = 'the training node stopped or lost the trainer’s lock during the step', finished_at = $1 WHERE status = 'running' RETURNING step",
        [now],
      );
      const steps = z
        .array(z.object({ step: int }))
        .parse(result.rows)
        .map((row) => row.step);
      if (steps.length > 0) await client.query('UPDATE rl_samples SET trained_step = NULL WHERE trained_step = ANY($1::bigint[])', [steps]);
      return steps.length;
    });
  }

  async get(step: number): Promise<StepRecord | undefined> {
    return records((await this.pool.query('SELECT * FROM rl_steps WHERE step = $1', [step])).rows)[0];
  }

  async recent(limit: number): Promise<StepRecord[]> {
    return records((await this.pool.query('SELECT * FROM rl_steps ORDER BY step DESC LIMIT $1', [limit])).rows);
  }

  async checkpoints(): Promise<StepRecord[]> {
    const after = await this.afterStep();
    return records(
      (await this.pool.query("SELECT * FROM rl_steps WHERE status = 'done' AND sampler_path IS NOT NULL AND step > $1 ORDER BY step DESC", [after])).rows,
    );
  }

  async latestState(): Promise<StepRecord | undefined> {
    const after = await this.afterStep();
    const result = await this.pool.query("SELECT * FROM rl_steps WHERE status = 'done' AND state_path IS NOT NULL AND step > $1 ORDER BY step DESC LIMIT 1", [
      after,
    ]);
    return records(result.rows)[0];
  }
}

/** The LISTEN/NOTIFY channel on which a new served policy (a step's, a rollback's) reaches every node at once. */
export const SERVED_POLICY_CHANNEL = 'metaclaw_rl_policy';

/** The team's served-policy record, in the team store's state table (the key SQLite uses). */
export function pgServedPolicyState(pool: pg.Pool): ServedPolicyState {
  return {
    async read(): Promise<ServedPolicyRecord | undefined> {
      const result = await pool.query('SELECT value FROM state WHERE key = $1', [SERVED_POLICY_KEY]);
      return parseServedPolicy(z.array(z.object({ value: z.string() })).parse(result.rows)[0]?.value);
    },
    /** One statement, so the nodes are told (SERVED_POLICY_CHANNEL) when the record they will read is committed. */
    async write(record: ServedPolicyRecord): Promise<void> {
      await pool.query(
        `WITH written AS (INSERT INTO state (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value RETURNING key)
         SELECT pg_notify($3, '') FROM written`,
        [SERVED_POLICY_KEY, JSON.stringify(record), SERVED_POLICY_CHANNEL],
      );
    },
  };
}
