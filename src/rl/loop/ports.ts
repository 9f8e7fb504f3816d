import type { Awaitable } from '../../types/index.js';
import type { PolicySampler, StepMetrics } from '../types.js';
import type { ServedPolicyRecord } from './served-policy.js';
import type { StepRecord, StepTrigger } from './steps.js';

/**
 * The training steps taken, on either engine: `TrainingSteps` (SQLite, synchronous, the personal
 * install) and `PgTrainingSteps` (the team store). The loop awaits every answer, which costs the
 * synchronous one nothing.
 */
export interface StepStore {
  /** Opens a step: its number is one past the last step ever taken. */
  begin(trigger: StepTrigger, skillGeneration: number, samples: number, now: number): Awaitable<number>;
  /** Records a running step done; false when it no longer runs (another trainer abandoned it meanwhile). */
  finish(step: number, result: { metrics: StepMetrics; samplerPath: string; statePath: string | null }, now: number): Awaitable<boolean>;
  /**
   * Records how a running step ended; false when it no longer runs. `refusedBatch`: the key of the
   * batch (`batchKey`) a failed step's backend refused itself, kept with the step for `refusals`.
   */
  end(step: number, status: 'empty' | 'abandoned' | 'failed', error: string, now: number, refusedBatch?: string): Awaitable<boolean>;
  /**
   * How many times in a row, up to `limit`, the backend refused `batch`: the latest steps that
   * recorded a refused batch, newest first, while they name it. Kept with the steps, so the count
   * goes on after a restart or on the next trainer of a team.
   */
  refusals(batch: string, limit: number): Awaitable<number>;
  /** Steps left `running` by a process that died: they were never applied, so they are abandoned. */
  abandonInterrupted(now: number): Awaitable<number>;
  get(step: number): Awaitable<StepRecord | undefined>;
  /** The newest steps first. */
  recent(limit: number): Awaitable<StepRecord[]>;
  /** Steps whose weights can be served again, newest first. */
  checkpoints(): Awaitable<StepRecord[]>;
  /** The newest step whose full state was saved: where training resumes. */
  latestState(): Awaitable<StepRecord | undefined>;
}

/** Where the served-policy record is kept: SQLite's state table, or the team store's. */
export interface ServedPolicyState {
  read(): Awaitable<ServedPolicyRecord | undefined>;
  write(record: ServedPolicyRecord): Awaitable<void>;
}

/** What the loop does with a finished step's weights: serve them, unless a rollback pinned an earlier policy. */
export interface PolicyInstaller {
  installFromStep(step: number, sampler: PolicySampler, samplerPath: string): Awaitable<boolean>;
}
