import { errorMessage } from '../errors.js';
import { urlHost } from '../shared/url-host.js';
import type { JobHandler } from '../learning/index.js';
import type { Logger } from '../logging/index.js';
import type { Db } from '../store/index.js';
import { StateStore } from '../store/index.js';
import {
  ServedPolicy,
  TrainingLoop,
  TrainingSteps,
  currentTrainingRun,
  earlierRunReason,
  keepsRunStart,
  newRunMessage,
  recordRun,
  runStartOf,
  saveRunStart,
  MAX_STEP_RETRY_DELAY_MS,
  type RunConfiguration,
  type RunStart,
  type ServedPolicyRecord,
  type StepOutcome,
  type StepFunction,
  type StepRecord,
  type SteppingWindow,
  type TrainingBuffer,
  type TrainingRun,
} from './loop/index.js';
import { loadChatTokenizer, PolicyUpstream, type ChatTokenizer, type Forwarding } from './policy/index.js';
import { TEACHER_JOB, type TeacherEndpoint } from './teacher/index.js';
import { ReopenSchedule, type OpeningFailure } from './reopen.js';
import { TinkerBackend, type BackendSelection } from './tinker/index.js';
import { trainStep } from './train/index.js';
import type { LossFunction, PolicySampler } from './types.js';

/** One GRPO step with the run's settings (`rl/train`'s trainStep), as the training loop runs it. */
export function grpoStep(settings: Pick<RlEngineSettings, 'lossFn' | 'learningRate' | 'opd'>): StepFunction {
  return (samples, backend, { step, signal }) =>
    trainStep(samples, backend, {
      lossFn: settings.lossFn,
      adam: { learningRate: settings.learningRate },
      samplerName: `step-${String(step).padStart(4, '0')}`,
      ...(settings.opd ? { klPenaltyCoef: settings.opd.klPenaltyCoef } : {}),
      signal,
    });
}

/**
 * The policy as the proxy serves it: a main turn goes to the sampler `serving` names, once both it
 * and the tokenizer are there; until then (and past the sampling budget) to the normal upstream.
 */
export function servingPolicy(
  fallback: Forwarding,
  settings: Pick<RlEngineSettings, 'samplingBudgetMs' | 'defaultMaxTokens'>,
  logger: Logger,
  serving: () => { tokenizer: ChatTokenizer | undefined; sampler: PolicySampler | undefined },
): PolicyUpstream {
  return new PolicyUpstream(fallback, {
    current: () => {
      const { tokenizer, sampler } = serving();
      return sampler && tokenizer ? { tokenizer, sampler } : undefined;
    },
    budgetMs: settings.samplingBudgetMs,
    defaultMaxTokens: settings.defaultMaxTokens,
    logger,
  });
}

/** A step as the training report lists it. */
export function stepSummary(record: StepRecord): EngineReport['last_steps'][number] {
  return {
    step: record.step,
    status: record.status,
    samples: record.samples,
    loss: record.loss,
    reward: record.metrics['reward:mean'] ?? null,
    error: record.error,
    finished_at: record.finishedAt === null ? null : new Date(record.finishedAt).toISOString(),
  };
}

/** The training report's wait after failed automatic steps (null when the last step did not fail). */
export function stepRetryReport(loop: TrainingLoop): EngineReport['step_retry'] {
  const retry = loop.stepRetry;
  return retry ? { failures: retry.failures, at: new Date(retry.at).toISOString() } : null;
}

/** The learning job that runs one training step in a window (queued by the engine's check). */
export const TRAIN_STEP_JOB = 'rl.train_step';

/** What the engine needs from the configuration (runtime/settings.ts builds it). */
export interface RlEngineSettings {
  backend: BackendSelection;
  /** the base model to train and serve (`rl.model`, else `llm.model_id`) */
  baseModel: string;
  loraRank: number;
  batchSize: number;
  learningRate: number;
  lossFn: LossFunction;
  /** `rl.resume_from_ckpt`: a backend path; a step's own saved state wins over it */
  resumeFrom: string;
  /** `rl.manual_train_trigger`: steps run only when asked */
  manualOnly: boolean;
  tokenizerPath: string;
  home: string;
  /** how long the policy may take on a turn before the normal upstream answers it */
  samplingBudgetMs: number;
  defaultMaxTokens: number;
  /** how often the engine looks for a full batch in an open window */
  checkIntervalMs: number;
  /** on-policy distillation (opd.*): the teacher, and the weight of its KL term */
  opd?: { teacher: TeacherEndpoint; klPenaltyCoef: number } | undefined;
}

export interface RlEngineDependencies {
  db: Db;
  logger: Logger;
  settings: RlEngineSettings;
  buffer: TrainingBuffer;
  /** judged samples ready to train, for the batch check (cheap count) */
  readyCount: () => number;
  skillGeneration: () => number;
  /** the scheduler (mode auto or scheduler.enabled); absent: any time is a window */
  window: SteppingWindow | undefined;
  /** the user's normal upstream, which answers whatever the policy does not */
  fallback: Forwarding;
  /** OPD: marks up to `limit` samples as queued for the teacher and returns them */
  queueForTeacher?: (limit: number) => string[];
  /** queues a learning job (the runner's enqueue) */
  enqueue: (kind: string, payload: unknown, options?: { dedupeKey?: string }) => number | undefined;
}

export type EngineState = 'starting' | 'ready' | 'failed' | 'stopped';

/** What /status, `metaclaw rl status` and `doctor` show of training. */
export interface EngineReport {
  state: EngineState;
  /** why it is not ready, when it failed */
  error: string | null;
  /** when a failed opening is tried again */
  retry_at: string | null;
  /** while the backend cannot be opened: the last failure, since when, how many tries, the next one (null once it opened) */
  opening_failed: OpeningFailure | null;
  /** after automatic steps failed in a row: how many, and when the next one may run (a step by hand runs any time) */
  step_retry: { failures: number; at: string } | null;
  backend: { kind: string; base_url: string };
  base_model: string;
  served: ServedPolicyRecord | null;
  trigger: 'manual' | 'window' | 'always';
  batch_size: number;
  ready_samples: number;
  window: string;
  /** on-policy distillation: the teacher's host and model, the KL weight */
  opd: { teacher: string; model: string; kl_penalty_coef: number } | null;
  last_steps: Array<{
    step: number;
    status: string;
    samples: number;
    loss: number | null;
    reward: number | null;
    error: string | null;
    finished_at: string | null;
  }>;
}

/**
 * RL in the running proxy (modes rl and auto): opens the training backend in the background
 * (resuming from the last saved state), loads the base model's tokenizer, serves main turns from
 * the current policy (`policyUpstream`), and runs a GRPO step as a learning job whenever a full
 * batch of judged samples waits in an open window. Until the backend and tokenizer are ready, and
 * whenever they fail, the agent is served by its normal upstream and the reason is in /status.
 */
export class RlEngine {
  readonly steps: TrainingSteps;
  readonly policy: ServedPolicy;
  readonly loop: TrainingLoop;
  readonly policyUpstream: PolicyUpstream;
  private readonly backend: TinkerBackend;
  private tokenizer: ChatTokenizer | undefined;
  private state: EngineState = 'starting';
  private error: string | null = null;
  private timer: NodeJS.Timeout | undefined;
  private opening: Promise<void> | undefined;
  private retry: NodeJS.Timeout | undefined;
  private readonly reopen: ReopenSchedule;
  /**
   * Set while a new training run waits for the backend to open on it: `record` records the run,
   * and `previous` is the run before it, whose untrained samples the new one sets aside.
   */
  private newRun: { record: (start: RunStart) => void; previous: RunConfiguration } | undefined;
  /** the training run the configuration belongs to (its step 0 once kept) */
  private run: TrainingRun;
  private readonly stateStore: StateStore;

  constructor(private readonly deps: RlEngineDependencies) {
    const { settings, logger } = deps;
    this.backend = new TinkerBackend({
      kind: settings.backend.kind,
      apiKey: settings.backend.apiKey,
      baseUrl: settings.backend.baseUrl,
      onWarning: (message) => logger.warn(message),
    });
    this.reopen = new ReopenSchedule(
      settings.checkIntervalMs,
      logger,
      'rl: the training backend could not be opened; the normal upstream serves every turn until it can',
    );
    this.steps = new TrainingSteps(deps.db);
    const state = (this.stateStore = new StateStore(deps.db));
    const { run, previous, begin } = currentTrainingRun(
      state,
      { backend: settings.backend.kind, base_model: settings.baseModel, lora_rank: settings.loraRank },
      () => this.steps.lastStep(),
    );
    this.steps.afterStep = run.after_step;
    this.run = run;
    if (previous) {
      this.newRun = { record: begin, previous };
      logger.warn(
        { previous, now: { backend: run.backend, base_model: run.base_model, lora_rank: run.lora_rank }, after_step: run.after_step },
        newRunMessage(previous, run),
      );
    }
    // Samplers are lazy: the served policy can be read before the backend opens; it samples only once it has.
    this.policy = new ServedPolicy(state, (path) => this.backend.samplerFor(path));
    this.loop = new TrainingLoop({
      backend: this.backend,
      buffer: deps.buffer,
      steps: this.steps,
      policy: this.policy,
      step: grpoStep(settings),
      ...(deps.window ? { window: deps.window } : {}),
      batchSize: settings.batchSize,
      skillGeneration: deps.skillGeneration,
      logger,
      failureBackoffMs: { first: settings.checkIntervalMs, max: MAX_STEP_RETRY_DELAY_MS },
    });
    this.policyUpstream = servingPolicy(deps.fallback, settings, logger, () => ({
      tokenizer: this.tokenizer,
      sampler: this.state === 'ready' ? this.policy.current() : undefined,
    }));
  }

  /** The job handler for training steps queued by the window check. */
  handler(): JobHandler {
    return {
      kind: TRAIN_STEP_JOB,
      usesLlm: false,
      run: async () => {
        const outcome = await this.runStep('window');
        if (outcome.status === 'failed') this.deps.logger.warn({ step: outcome.step, err: outcome.error }, 'rl training step failed');
      },
    };
  }

  /** Opens the backend in the background and starts the batch check; serving never waits for either. */
  start(): void {
    this.opening = this.open();
    this.timer = setInterval(() => {
      this.queueTeacher();
      this.checkBatch();
    }, this.deps.settings.checkIntervalMs);
    this.timer.unref();
    this.queueTeacher();
  }

  /** One step now (`rl train-step`), or in a window (the queued job). */
  async runStep(trigger: 'window' | 'manual'): Promise<StepOutcome> {
    if (this.state !== 'ready') return { status: 'skipped', reason: this.notReady() };
    return this.loop.runStep(trigger);
  }

  /** Why training cannot act now, or undefined when it can. */
  notReady(): string {
    if (this.state === 'starting') return `the ${this.deps.settings.backend.kind} backend is still opening`;
    if (this.state === 'failed') return `the ${this.deps.settings.backend.kind} backend could not be opened: ${this.error ?? 'unknown error'}`;
    return 'the proxy is stopping';
  }

  get ready(): boolean {
    return this.state === 'ready';
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    if (this.retry) clearTimeout(this.retry);
    this.state = 'stopped';
    // A step in flight on a service that hangs or cannot be reached must not hold the shutdown: its
    // requests are cut, it is recorded abandoned, and its samples train at the next start.
    this.backend.abort('the proxy is stopping');
    await this.loop.stop();
    await this.opening?.catch(() => undefined);
    await this.backend.close();
  }

  report(): EngineReport {
    const { settings } = this.deps;
    let ready = 0;
    let last: StepRecord[] = [];
    try {
      ready = this.deps.readyCount();
      last = this.steps.recent(5);
    } catch {
      // a locked or full store: the report shows what it can
    }
    return {
      state: this.state,
      error: this.error,
      retry_at: this.state === 'failed' ? new Date(this.reopen.nextAt).toISOString() : null,
      opening_failed: this.reopen.report(),
      step_retry: stepRetryReport(this.loop),
      backend: { kind: settings.backend.kind, base_url: settings.backend.baseUrl },
      base_model: settings.baseModel,
      served: this.newRun ? null : (this.policy.describe() ?? null),
      trigger: settings.manualOnly ? 'manual' : this.deps.window ? 'window' : 'always',
      batch_size: settings.batchSize,
      ready_samples: ready,
      window: this.deps.window ? this.deps.window.describe() : 'any time (mode rl without the scheduler)',
      opd: settings.opd
        ? { teacher: urlHost(settings.opd.teacher.baseUrl) ?? 'its URL', model: settings.opd.teacher.model, kl_penalty_coef: settings.opd.klPenaltyCoef }
        : null,
      last_steps: last.map(stepSummary),
    };
  }

  private async open(): Promise<void> {
    const { settings, logger } = this.deps;
    try {
      const interrupted = this.steps.abandonInterrupted(Date.now());
      if (interrupted > 0) logger.info({ steps: interrupted }, 'rl: steps cut by the last stop were abandoned; their samples wait for the next step');
      const resumedStep = this.steps.latestState();
      const resumeFrom = resumedStep?.statePath ?? (settings.resumeFrom || undefined);
      const [tokenizer] = await Promise.all([
        loadChatTokenizer({ tokenizerPath: settings.tokenizerPath, model: settings.baseModel, home: settings.home }),
        this.backend.open({ baseModel: settings.baseModel, loraRank: settings.loraRank, ...(resumeFrom ? { resumeFrom } : {}) }),
      ]);
      if (this.state === 'stopped') return;
      this.tokenizer = tokenizer;
      // Opened on the run's own start (no step of it resumed) and its step 0 not kept yet: kept now.
      const start = keepsRunStart(this.run, this.newRun !== undefined, resumedStep !== undefined) ? await this.keepRunStart() : undefined;
      // First start (or a new run): the fresh LoRA serves, so the first turns are already trainable samples.
      if (start && this.newRun) {
        // Before the run is recorded: a crash in between begins it again, with nothing left to set aside.
        await this.setAsideEarlierRun(this.newRun.previous, start.record.at);
        this.newRun.record(start.record);
        this.newRun = undefined;
        this.policy.startOver(start.sampler, start.sampler.version);
      } else if (!this.policy.describe()) {
        const { sampler } = start ?? (await saveRunStart(this.backend, Date.now));
        this.policy.installFromStep(0, sampler, sampler.version);
      }
      this.state = 'ready';
      this.error = null;
      this.reopen.opened();
      logger.info(
        { backend: settings.backend.kind, model: settings.baseModel, resumed_from: resumeFrom ?? null, served: this.policy.describe() },
        'rl: training backend open; main turns are served from the policy',
      );
      this.checkBatch();
    } catch (error) {
      if (this.state === 'stopped') return;
      // While it is tried again the report keeps saying why it failed (and `retry_at` when it was due).
      this.state = 'failed';
      this.error = errorMessage(error);
      // A service that was down, a key or tokenizer fixed meanwhile: opening is tried again, less and less often.
      const delay = this.reopen.failed(error, { backend: settings.backend.kind });
      await this.backend.close();
      this.retry = setTimeout(() => {
        this.retry = undefined;
        if (this.state === 'failed') this.opening = this.open();
      }, delay);
      this.retry.unref();
    }
  }

  /**
   * The LoRA as the run opened it (fresh, or `rl.resume_from_ckpt`), saved for sampling as the run's
   * step 0: its path goes into the run's record, so `rl rollback 0` can serve it after later steps
   * and restarts, and a new run's record (another base model) replaces it.
   */
  private async keepRunStart(): Promise<{ sampler: PolicySampler; record: RunStart }> {
    const start = await saveRunStart(this.backend, Date.now);
    this.run = { ...this.run, start: start.record };
    // A new run is recorded by `newRun.record`, once it serves; the current one gets its step 0 added now.
    if (!this.newRun) recordRun(this.stateStore, this.run, start.record);
    return start;
  }

  /** A new run's first act: the samples the earlier run's policy served (another model's tokens) never train it. */
  private async setAsideEarlierRun(previous: RunConfiguration, began: number): Promise<void> {
    const count = await this.deps.buffer.setAsideEarlierRun?.(began, earlierRunReason(previous));
    if (count) this.deps.logger.info({ samples: count }, 'rl: the earlier training run’s untrained samples were set aside');
  }

  /** The run's step 0 (`rl rollback 0`), unless a new run still waits to open or the run began before it was kept. */
  runStart(): { samplerPath: string; at: number } | undefined {
    return this.newRun ? undefined : runStartOf(this.run);
  }

  /** OPD: every sample with token ids gets a teacher job (they do not need the backend, only the teacher). */
  private queueTeacher(): void {
    if (!this.deps.settings.opd || !this.deps.queueForTeacher) return;
    try {
      for (const turnId of this.deps.queueForTeacher(100)) this.deps.enqueue(TEACHER_JOB, { turnId }, { dedupeKey: `${TEACHER_JOB}:${turnId}` });
    } catch (error) {
      this.deps.logger.warn({ err: errorMessage(error) }, 'rl: could not queue samples for the OPD teacher; trying again later');
    }
  }

  /** Queues a step when a full batch waits in an open window (the job runs it; a second one is not queued while one waits). */
  private checkBatch(): void {
    if (this.state !== 'ready' || this.deps.settings.manualOnly || this.loop.busy || this.loop.waitingAfterFailure()) return;
    try {
      if (this.deps.window && !this.deps.window.isOpen()) return;
      if (this.deps.readyCount() < this.deps.settings.batchSize) return;
      this.deps.enqueue(TRAIN_STEP_JOB, {}, { dedupeKey: TRAIN_STEP_JOB });
    } catch (error) {
      this.deps.logger.warn({ err: errorMessage(error) }, 'rl: could not check for a training batch; trying again later');
    }
  }
}
