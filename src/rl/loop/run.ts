import { z } from 'zod';
import type { StateStore } from '../../store/index.js';

/** The state key of the training run's record: what its steps were trained on. */
export const TRAINING_RUN_KEY = 'rl.training_run';

/** What a run's steps are bound to: a LoRA saved on one backend, for one base model at one rank, loads nowhere else. */
export interface TrainingRun {
  backend: string;
  base_model: string;
  lora_rank: number;
  /** the last step of the runs before this one: only later steps are resumed from, served or rolled back to */
  after_step: number;
  /**
   * The weights the run opened with, saved for sampling before its first step: its step 0, what
   * `rl rollback 0` serves again. Absent until the backend opened on the run, and for runs begun
   * before it was kept.
   */
  start?: RunStart;
}

/** A run's step 0: the sampler path of the LoRA it opened with (fresh, or `rl.resume_from_ckpt`), and when it was saved. */
export interface RunStart {
  sampler_path: string;
  at: number;
}

const runSchema = z.object({
  backend: z.string(),
  base_model: z.string(),
  lora_rank: z.number().int(),
  after_step: z.number().int().nonnegative(),
  // a damaged step 0 is dropped (`rl rollback 0` then says it was not kept), never the run's boundary with it
  start: z
    .object({ sampler_path: z.string().min(1), at: z.number().int().nonnegative() })
    .optional()
    .catch(undefined),
});

/**
 * The run the configured backend, base model and LoRA rank belong to. A database with no record
 * (a first start, or steps from before runs were recorded) takes every step so far as this run's.
 * When the configuration changed, a new run starts after the last step taken: the old steps stay in
 * the history, but are never resumed from, served or rolled back to. The new run is recorded only by
 * `begin`, once the backend has opened on it (with its fresh LoRA serving as its step 0): a typo in
 * `rl.model` that never opens does not cost the real run its resume point. `begin` is given the
 * run's step 0 when it is known then; `recordRun` adds it to a run recorded without it.
 */
export function currentTrainingRun(
  state: StateStore,
  configured: Omit<TrainingRun, 'after_step' | 'start'>,
  lastStep: () => number,
): { run: TrainingRun; previous: Omit<TrainingRun, 'after_step' | 'start'> | undefined; begin: (start?: RunStart) => void } {
  let stored: TrainingRun | undefined;
  try {
    const parsed = runSchema.safeParse(JSON.parse(state.get(TRAINING_RUN_KEY) ?? 'null'));
    stored = parsed.success ? parsed.data : undefined;
  } catch {
    stored = undefined;
  }
  const begin = (run: TrainingRun) => (start?: RunStart) => void recordRun(state, run, start);
  if (stored && stored.backend === configured.backend && stored.base_model === configured.base_model && stored.lora_rank === configured.lora_rank)
    return { run: stored, previous: undefined, begin: () => undefined };
  const run: TrainingRun = { ...configured, after_step: stored ? lastStep() : 0 };
  if (!stored) {
    begin(run)();
    return { run, previous: undefined, begin: () => undefined };
  }
  return { run, previous: { backend: stored.backend, base_model: stored.base_model, lora_rank: stored.lora_rank }, begin: begin(run) };
}

/** Records the run (again), with its step 0 when given; returns the record written. */
export function recordRun(state: StateStore, run: TrainingRun, start: RunStart | undefined): TrainingRun {
  const record: TrainingRun = start ? { ...run, start } : run;
  state.set(TRAINING_RUN_KEY, JSON.stringify(record));
  return record;
}
