import { createHash } from 'node:crypto';
import type { Db } from '../../store/index.js';
import type { StepMetrics } from '../types.js';
import type { StepStore } from './ports.js';

/** empty: the batch held nothing to learn from (rewards all equal); its samples are used up */
export type StepStatus = 'running' | 'done' | 'empty' | 'abandoned' | 'failed';
export type StepTrigger = 'window' | 'manual';

export interface StepRecord {
  step: number;
  status: StepStatus;
  trigger: StepTrigger;
  skillGeneration: number;
  samples: number;
  loss: number | null;
  metrics: Record<string, number>;
  /** weights saved for sampling after the step: what `rl rollback` serves again */
  samplerPath: string | null;
  /** full training state (weights + optimizer) saved after the step: what a restart resumes from */
  statePath: string | null;
  startedAt: number;
  finishedAt: number | null;
  error: string | null;
}

/** A row of `rl_steps` (SQLite's shape; the team store's is read into it). */
export interface StepRow {
  step: number;
  status: StepStatus;
  trigger: StepTrigger;
  skill_generation: number;
  samples: number;
  loss: number | null;
  metrics: string | null;
  sampler_path: string | null;
  state_path: string | null;
  started_at: number;
  finished_at: number | null;
  error: string | null;
}

export function fromRow(row: StepRow): StepRecord {
  return {
    step: row.step,
    status: row.status,
    trigger: row.trigger,
    skillGeneration: row.skill_generation,
    samples: row.samples,
    loss: row.loss,
    metrics: row.metrics ? (JSON.parse(row.metrics) as Record<string, number>) : {},
    samplerPath: row.sampler_path,
    statePath: row.state_path,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    error: row.error,
  };
}

/** The training steps taken, with what each one reported and where its weights went (table `rl_steps`). */
export class TrainingSteps implements StepStore {
  /** Steps up to this one belong to an earlier run (another base model, backend or rank): never resumed from nor served. */
  afterStep = 0;

  constructor(private readonly db: Db) {}

  /** The last step ever taken (0 when none). */
  lastStep(): number {
    return this.db.prepare<[], { step: number | null }>('SELECT MAX(step) AS step FROM rl_steps').get()?.step ?? 0;
  }

  /** Opens a step: its number is one past the last step ever taken. */
  begin(trigger: StepTrigger, skillGeneration: number, samples: number, now: number): number {
    const step = this.lastStep() + 1;
    this.db
      .prepare('INSERT INTO rl_steps (step, status, trigger, skill_generation, samples, started_at) VALUES (?, ?, ?, ?, ?, ?)')
      .run(step, 'running', trigger, skillGeneration, samples, now);
    return step;
  }

  finish(step: number, result: { metrics: StepMetrics; samplerPath: string; statePath: string | null }, now: number): boolean {
    const done = this.db
      .prepare(
        "UPDATE rl_steps SET status = 'done', loss = ?, metrics = ?, sampler_path = ?, state_path = ?, finished_at = ? WHERE step = ? AND status = 'running'",
      )
      .run(finiteOrNull(result.metrics.loss), JSON.stringify(finiteMetrics(result.metrics.metrics)), result.samplerPath, result.statePath, now, step);
    return done.changes > 0;
  }

  end(step: number, status: 'empty' | 'abandoned' | 'failed', error: string, now: number, refusedBatch?: string): boolean {
    return (
      this.db
        .prepare("UPDATE rl_steps SET status = ?, error = ?, finished_at = ?, refused_batch = ? WHERE step = ? AND status = 'running'")
        .run(status, error, now, refusedBatch ?? null, step).changes > 0
    );
  }

  refusals(batch: string, limit: number): number {
    const rows = this.db
      .prepare<[number], { refused_batch: string }>('SELECT refused_batch FROM rl_steps WHERE refused_batch IS NOT NULL ORDER BY step DESC LIMIT ?')
      .all(limit);
    return refusalsInRow(rows, batch);
  }

  /** Steps left `running` by a process that died: they were never applied, so they are abandoned. */
  abandonInterrupted(now: number): number {
    return this.db
      .prepare("UPDATE rl_steps SET status = 'abandoned', error = 'the process stopped during the step', finished_at = ? WHERE status = 'running'")
      .run(now).changes;
  }

  get(step: number): StepRecord | undefined {
    const row = this.db.prepare<[number], StepRow>('SELECT * FROM rl_steps WHERE step = ?').get(step);
    return row ? fromRow(row) : undefined;
  }

  /** The newest steps first. */
  recent(limit: number): StepRecord[] {
    return this.db.prepare<[number], StepRow>('SELECT * FROM rl_steps ORDER BY step DESC LIMIT ?').all(limit).map(fromRow);
  }

  /** Steps whose weights can be served again (`rl checkpoints`), newest first. */
  checkpoints(): StepRecord[] {
    return this.db
      .prepare<[number], StepRow>("SELECT * FROM rl_steps WHERE status = 'done' AND sampler_path IS NOT NULL AND step > ? ORDER BY step DESC")
      .all(this.afterStep)
      .map(fromRow);
  }

  /** The newest step whose full state was saved: where training resumes after a restart. */
  latestState(): StepRecord | undefined {
    const row = this.db
      .prepare<[number], StepRow>("SELECT * FROM rl_steps WHERE status = 'done' AND state_path IS NOT NULL AND step > ? ORDER BY step DESC LIMIT 1")
      .get(this.afterStep);
    return row ? fromRow(row) : undefined;
  }
}

/** How many of the latest refused batches (the steps' `refused_batch`, newest first) are `batch`, before one that is not. */
export function refusalsInRow(newestFirst: ReadonlyArray<{ refused_batch: string }>, batch: string): number {
  const other = newestFirst.findIndex((row) => row.refused_batch !== batch);
  return other === -1 ? newestFirst.length : other;
}

/**
 * What names a batch in the step records: a digest of its samples' turn ids, in any order (the
 * same samples offered again are the same batch, whichever step or trainer offers them).
 */
export function batchKey(turnIds: readonly string[]): string {
  return createHash('sha256')
    .update([...turnIds].sort().join('\n'))
    .digest('hex');
}

export function finiteOrNull(value: number): number | null {
  return Number.isFinite(value) ? value : null;
}

/** A backend's metrics as stored: finite numbers only (JSON has no NaN). */
export function finiteMetrics(metrics: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(metrics).filter(([, value]) => Number.isFinite(value)));
}
