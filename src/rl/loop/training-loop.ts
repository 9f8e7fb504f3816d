import { errorMessage } from '../../errors.js';
import type { Logger } from '../../logging/index.js';
import { BatchRefused, type TrainStepResult } from '../train/index.js';
import type { RlBackend, RlSample, StepMetrics, TrainingWindow } from '../types.js';
import type { Awaitable } from '../../types/index.js';
import type { PolicyInstaller, StepStore } from './ports.js';
import { batchKey, type StepTrigger } from './steps.js';

/**
 * A window that runs the step itself (the scheduler): it moves to UPDATING, hands the step a signal
 * that fires when the window closes, and records how the step ended.
 */
export interface SteppingWindow extends TrainingWindow {
  runStep<T>(
    step: { id: string; batch: unknown },
    run: (signal: AbortSignal) => Promise<T>,
  ): Promise<{ ran: true; outcome: 'done'; value: T } | { ran: true; outcome: 'abandoned' | 'failed'; error: string } | { ran: false; reason: string }>;
  pendingStep(): { id: string } | null;
  discardPendingStep(reason: string): boolean;
}

/**
 * What the loop needs of the sample buffer: the samples ready, and how a step takes them. One
 * process training alone (the personal install) marks them trained when the step finished. Where
 * another process may start training while a step runs (the nodes of a team store), the step claims
 * them when it starts instead, all or none, so a sample belongs to at most one step; the step store
 * gives them back when it records the step abandoned or failed.
 */
export type TrainingBuffer = {
  /** Judged, trainable samples of the current skill generation not trained (nor claimed) yet, oldest first. */
  ready(limit: number): Awaitable<RlSample[]>;
  /**
   * Samples whose batch the backend kept refusing: kept with the reason, never offered again (on a
   * team store, once the failed step gave them back). A buffer without it retries such a batch
   * after the backoff, as any failed one.
   */
  setAside?(turnIds: readonly string[], reason: string): Awaitable<void>;
  /** A new training run began at `before`: the earlier run's samples are set aside (`earlierRunSamplesWhere`); how many. */
  setAsideEarlierRun?(before: number, reason: string): Awaitable<number>;
} & (
  | { markTrained(turnIds: readonly string[], step: number): Awaitable<void> }
  | { /** false when another step holds any of them: nothing was claimed */ claim(turnIds: readonly string[], step: number): Awaitable<boolean> }
);

/**
 * One GRPO step on a batch (`rl/train`'s `trainStep` with the run's settings): forward-backward
 * (awaited), optimizer step, weights saved for sampling; or why the batch could not train.
 */
export type StepFunction = (samples: RlSample[], backend: RlBackend, options: { step: number; signal: AbortSignal }) => Promise<TrainStepResult>;

export interface TrainingLoopOptions {
  backend: RlBackend;
  buffer: TrainingBuffer;
  steps: StepStore;
  policy: PolicyInstaller;
  step: StepFunction;
  /** the scheduler; absent in `rl` mode without it, where any time is a window */
  window?: SteppingWindow;
  batchSize: number;
  skillGeneration: () => number;
  logger: Logger;
  now?: () => number;
  /**
   * After an automatic step failed, the next one waits this long, twice as long after each further
   * failure, at most `max` (a step by hand never waits; one that trains ends the wait).
   */
  failureBackoffMs?: { first: number; max: number };
}

/** After automatic steps failed in a row: how many, and when the next automatic one may run. */
export interface StepRetry {
  failures: number;
  at: number;
}

/** The longest wait before the next automatic step after steps failed. */
export const MAX_STEP_RETRY_DELAY_MS = 30 * 60_000;

/** After the backend refused the same batch this many times, its samples are set aside (when the buffer can). */
export const MAX_BATCH_REFUSALS = 3;

/** Why a step cut by a stop was abandoned (a process that died during one is recorded so at the next start). */
export const STOPPED_DURING_STEP = 'the proxy stopped during the step; its samples wait for the next start';

const DEFAULT_FAILURE_BACKOFF = { first: 5_000, max: MAX_STEP_RETRY_DELAY_MS };

export type StepOutcome =
  | { status: 'done'; step: number; samples: number; metrics: StepMetrics; served: boolean }
  | { status: 'skipped'; reason: string }
  | { status: 'empty'; step: number; samples: number; reason: string }
  | { status: 'abandoned'; step: number; reason: string }
  | { status: 'failed'; step: number; error: string; /** samples set aside after this refusal of their batch */ setAside?: number };

/**
 * Runs training steps one at a time. A step runs when a window is open (or when asked by hand)
 * and a full batch of judged samples waits; if the window closes before the step reached the
 * backend it is abandoned and its samples wait for the next window. After a step,
 * the new weights serve the next requests (hot swap). Samples are marked trained only by a step
 * that finished (or claimed by a step that is given them back unless it finishes), so a crash at
 * any point loses none.
 */
export class TrainingLoop {
  private running: Promise<StepOutcome> | undefined;
  private readonly now: () => number;
  private retry: StepRetry | undefined;
  private stopping = false;

  constructor(private readonly options: TrainingLoopOptions) {
    this.now = options.now ?? Date.now;
  }

  get busy(): boolean {
    return this.running !== undefined;
  }

  /** Set while automatic steps wait after failing: a batch check queues none before `at`. */
  get stepRetry(): StepRetry | undefined {
    return this.retry ? { ...this.retry } : undefined;
  }

  /** True while an automatic step must wait after the last ones failed. */
  waitingAfterFailure(): boolean {
    return this.retry !== undefined && this.now() < this.retry.at;
  }

  /**
   * The proxy stops (its backend's requests in flight are aborted): a step that fails from now on
   * was cut by the stop, so it is recorded abandoned, not failed, and its samples wait for the next
   * start. Resolves once the step in flight (if any) has recorded how it ended.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.running?.catch(() => undefined);
  }

  /** One step now if it can run; a second call while one runs waits for it rather than starting another. */
  runStep(trigger: StepTrigger): Promise<StepOutcome> {
    if (this.running) return this.running;
    const run = this.stepOnce(trigger)
      .then((outcome) => {
        this.afterStep(trigger, outcome);
        return outcome;
      })
      .finally(() => {
        this.running = undefined;
      });
    this.running = run;
    return run;
  }

  private async stepOnce(trigger: StepTrigger): Promise<StepOutcome> {
    const { window, buffer, batchSize, steps, logger } = this.options;
    if (trigger === 'window' && window && !window.isOpen()) return { status: 'skipped', reason: `no window: ${window.describe()}` };
    if (trigger === 'window' && this.retry && this.waitingAfterFailure())
      return { status: 'skipped', reason: `the last step failed; the next try at ${new Date(this.retry.at).toISOString()}` };
    // A step by hand trains on what is there; one in a window waits for a full batch.
    const samples = await buffer.ready(batchSize);
    if (samples.length === 0 || (trigger === 'window' && samples.length < batchSize)) {
      return { status: 'skipped', reason: `${samples.length} of ${batchSize} judged samples are ready` };
    }
    const generation = this.options.skillGeneration();
    const step = await steps.begin(trigger, generation, samples.length, this.now());
    const turnIds = samples.map((sample) => sample.turnId);
    if ('claim' in buffer && !(await buffer.claim(turnIds, step)))
      return this.stepEnded(step, 'abandoned', 'some of its samples were taken by another step or dropped meanwhile');
    let refused: readonly string[] | undefined;
    const train = async (signal: AbortSignal): Promise<TrainStepResult> => {
      try {
        return await this.options.step(samples, this.options.backend, { step, signal });
      } catch (error) {
        if (error instanceof BatchRefused) refused = turnIds;
        throw error;
      }
    };
    let result: TrainStepResult;
    if (trigger === 'window' && window) {
      // The batch is chosen again from the buffer (oldest first), so a step left pending by a
      // closed window or a restart is simply superseded by this one.
      const pending = window.pendingStep();
      if (pending) window.discardPendingStep(`training step ${step} takes its samples again from the buffer`);
      // Once forward-backward ran, the step finishes even if the window closed meanwhile: the
      // service holds its gradients until optim_step (trainStep stops only before it).
      const outcome = await window.runStep({ id: `step-${step}`, batch: { turnIds } }, train);
      if (!outcome.ran) return this.stepEnded(step, 'abandoned', outcome.reason);
      if (outcome.outcome !== 'done') return this.stepEnded(step, outcome.outcome, outcome.error, refused);
      result = outcome.value;
    } else {
      try {
        result = await train(new AbortController().signal);
      } catch (error) {
        return this.stepEnded(step, 'failed', errorMessage(error), refused);
      }
    }
    if (!result.trained) {
      // Nothing to learn from this batch (rewards all equal): its samples are used up, not retried.
      if (!(await steps.end(step, 'empty', result.reason, this.now()))) return this.cutShort(step);
      if ('markTrained' in buffer) await buffer.markTrained(turnIds, step);
      return { status: 'empty', step, samples: samples.length, reason: result.reason };
    }
    const statePath = await this.saveState(step);
    if (!(await steps.finish(step, { metrics: result.metrics, samplerPath: result.samplerPath, statePath }, this.now()))) return this.cutShort(step);
    if ('markTrained' in buffer) await buffer.markTrained(turnIds, step);
    const served = await this.options.policy.installFromStep(step, result.sampler, result.samplerPath);
    logger.info({ step, samples: samples.length, loss: result.metrics.loss, served }, 'rl training step done');
    return { status: 'done', step, samples: samples.length, metrics: result.metrics, served };
  }

  /**
   * A backend that refuses every step (a request it will never take, a service down for hours) is
   * not asked again at every batch check: automatic steps back off after a failure, and the first
   * step that trains (or finds nothing to learn) ends the wait.
   */
  private afterStep(trigger: StepTrigger, outcome: StepOutcome): void {
    if (outcome.status === 'done' || outcome.status === 'empty') this.retry = undefined;
    else if (outcome.status === 'failed' && trigger === 'window') {
      const { first, max } = this.options.failureBackoffMs ?? DEFAULT_FAILURE_BACKOFF;
      const failures = (this.retry?.failures ?? 0) + 1;
      this.retry = { failures, at: this.now() + Math.min(first * 2 ** (failures - 1), max) };
      this.options.logger.warn(
        { step: outcome.step, failures, retry_at: new Date(this.retry.at).toISOString() },
        'rl: automatic training steps wait before the next try',
      );
    }
  }

  private async stepEnded(step: number, ended: 'abandoned' | 'failed', why: string, refused?: readonly string[]): Promise<StepOutcome> {
    const [status, reason] = this.stopping && ended === 'failed' ? (['abandoned', `${STOPPED_DURING_STEP} (${why})`] as const) : [ended, why];
    // The refused batch is named in the step's record, so its count goes on after a restart (or on the next trainer).
    const batch = status === 'failed' && refused ? batchKey(refused) : undefined;
    await this.options.steps.end(step, status, reason, this.now(), batch);
    if (status === 'abandoned') {
      this.options.logger.info({ step, reason }, 'rl training step abandoned; its samples wait for the next window');
      return { status, step, reason };
    }
    const setAside = refused && batch ? await this.refusedBatch(step, refused, batch, reason) : 0;
    if (setAside > 0) return { status, step, error: reason, setAside };
    this.options.logger.warn({ step, err: reason }, 'rl training step failed; its samples wait for the next one');
    return { status, step, error: reason };
  }

  /**
   * The backend refused the batch itself (a client error on forward-backward). The same batch
   * refused MAX_BATCH_REFUSALS times in a row is set aside with the reason, so the batches after it
   * can train; until then it is tried again like any failed step. The refusals are counted from the
   * step records (this one's included), not this process's memory: a restart, or another node taking
   * over a team's training, does not give the batch MAX_BATCH_REFUSALS more tries. Returns how many
   * samples were set aside.
   */
  private async refusedBatch(step: number, turnIds: readonly string[], batch: string, reason: string): Promise<number> {
    const { buffer, logger, steps } = this.options;
    const times = await steps.refusals(batch, MAX_BATCH_REFUSALS);
    if (times < MAX_BATCH_REFUSALS || !buffer.setAside) return 0;
    await buffer.setAside(turnIds, `the training backend refused their batch ${times} times (last at step ${step}): ${reason}`);
    logger.warn(
      { step, samples: turnIds.length, err: reason },
      `rl: the training backend refused the same batch ${times} times; its samples are set aside (rl status shows them) and the next batch trains`,
    );
    return turnIds.length;
  }

  /**
   * The step was recorded abandoned while it ran (a team node that lost the trainer's lock: the next
   * trainer gave its samples back and resumes from the last finished step): its weights never serve.
   */
  private cutShort(step: number): StepOutcome {
    const reason = 'another trainer abandoned the step while it ran; its weights are not served';
    this.options.logger.warn({ step }, `rl training step cut short: ${reason}`);
    return { status: 'abandoned', step, reason };
  }

  /** The full training state after a step, for a restart to resume from; a failure here costs the resume point only. */
  private async saveState(step: number): Promise<string | null> {
    try {
      return await this.options.backend.saveState(`state-${String(step).padStart(4, '0')}`);
    } catch (error) {
      this.options.logger.warn({ step, err: errorMessage(error) }, 'could not save the training state; a restart resumes from an earlier step');
      return null;
    }
  }
}
