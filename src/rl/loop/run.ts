import { z } from 'zod';
import type { StateStore } from '../../store/index.js';
import type { PolicySampler, RlBackend } from '../types.js';

/** The state key of the training run's record: what its steps were trained on (SQLite's state table, and the team store's). */
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

/** The name a run's step 0 is saved under for sampling (the personal engine's and the team trainer's). */
const RUN_START_NAME = 'step-0000';

/**
 * Whether opening a run keeps its step 0 now: a new run always; the current one when it has none
 * and no step of it was resumed, so the backend holds exactly the weights the run started from (a
 * run begun before step 0 was kept gets it at its next opening, unless a step saved its state).
 */
export function keepsRunStart(run: TrainingRun, begins: boolean, resumedStep: boolean): boolean {
  return begins || (!run.start && !resumedStep);
}

/** Saves the weights the backend just opened the run with for sampling: the run's step 0, and its record. */
export async function saveRunStart(backend: Pick<RlBackend, 'saveForSampler'>, now: () => number): Promise<{ sampler: PolicySampler; record: RunStart }> {
  const sampler = await backend.saveForSampler(RUN_START_NAME);
  return { sampler, record: { sampler_path: sampler.version, at: now() } };
}

/** What `rl rollback 0` serves and `GET /v1/rl/checkpoints` lists as `start`: the run's step 0, when kept. */
export function runStartOf(run: TrainingRun | undefined): { samplerPath: string; at: number } | undefined {
  return run?.start ? { samplerPath: run.start.sampler_path, at: run.start.at } : undefined;
}

/** What decides which run a step belongs to: the backend, base model and LoRA rank. */
export type RunConfiguration = Omit<TrainingRun, 'after_step' | 'start'>;

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

/** The stored record, or undefined when there is none or it is damaged (then every step so far is taken as this run's). */
export function parseTrainingRun(raw: string | undefined | null): TrainingRun | undefined {
  try {
    const parsed = runSchema.safeParse(JSON.parse(raw ?? 'null'));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** True when steps trained under `run` load into the `configured` backend, base model and rank. */
export function sameRun(run: RunConfiguration, configured: RunConfiguration): boolean {
  return run.backend === configured.backend && run.base_model === configured.base_model && run.lora_rank === configured.lora_rank;
}

/** How a run reads in logs and reports: "the tinker LoRA of rank 32 on org/model". */
export function describeRun(run: RunConfiguration): string {
  return `the ${run.backend} LoRA of rank ${run.lora_rank} on ${run.base_model}`;
}

/**
 * The run a configuration belongs to, given the stored record (on either store): with no record
 * (a first start, or steps from before runs were recorded) every step so far is this run's, and the
 * record is written now (`record`). When the configuration changed, a new run starts after the last
 * step taken (`lastStep`, read only then): the old steps stay in the history, but are never resumed
 * from, served or rolled back to. The new run is to be recorded (`begin`) only once the backend has
 * opened on it (with its fresh LoRA serving as its step 0): a typo in `rl.model` that never opens
 * does not cost the real run its resume point.
 */
export function decideTrainingRun(
  stored: TrainingRun | undefined,
  configured: RunConfiguration,
  lastStep: () => number,
): { run: TrainingRun; previous: RunConfiguration | undefined; record: TrainingRun | undefined; begin: TrainingRun | undefined } {
  if (stored && sameRun(stored, configured)) return { run: stored, previous: undefined, record: undefined, begin: undefined };
  if (!stored) {
    const run = { ...configured, after_step: 0 };
    return { run, previous: undefined, record: run, begin: undefined };
  }
  const run: TrainingRun = { ...configured, after_step: lastStep() };
  return { run, previous: { backend: stored.backend, base_model: stored.base_model, lora_rank: stored.lora_rank }, record: undefined, begin: run };
}

/**
 * `decideTrainingRun` on a personal install's state table; `begin` records the new run, with its
 * step 0 when it is known then (`recordRun` adds it to a run recorded without it).
 */
export function currentTrainingRun(
  state: StateStore,
  configured: RunConfiguration,
  lastStep: () => number,
): { run: TrainingRun; previous: RunConfiguration | undefined; begin: (start?: RunStart) => void } {
  const decided = decideTrainingRun(parseTrainingRun(state.get(TRAINING_RUN_KEY)), configured, lastStep);
  if (decided.record) recordRun(state, decided.record, undefined);
  const begin = decided.begin;
  return { run: decided.run, previous: decided.previous, begin: begin ? (start) => void recordRun(state, begin, start) : () => undefined };
}

/** The log line when a new run starts (the personal engine's and the team trainer's). */
export function newRunMessage(previous: RunConfiguration, run: TrainingRun): string {
  return `rl: a new training run starts (${describeRun(previous)} does not load into ${describeRun(run)}); steps up to ${run.after_step} stay in the history but are not resumed from, served or rolled back to`;
}

/** Why a new run sets the earlier run's untrained samples aside (`earlierRunSamplesWhere`), for `rl status` and the export. */
export function earlierRunReason(previous: RunConfiguration): string {
  return `served by an earlier training run (${describeRun(previous)}): its token ids and logprobs do not train the new run`;
}

/** Records the run (again), with its step 0 when given; returns the record written. */
export function recordRun(state: StateStore, run: TrainingRun, start: RunStart | undefined): TrainingRun {
  const record: TrainingRun = start ? { ...run, start } : run;
  state.set(TRAINING_RUN_KEY, JSON.stringify(record));
  return record;
}
