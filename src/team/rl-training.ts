import { errorMessage } from '../errors.js';
import type { Logger } from '../logging/index.js';
import { grpoStep, servingPolicy, stepRetryReport, stepSummary, type EngineReport, type EngineState, type RlEngineSettings } from '../rl/engine.js';
import { MAX_STEP_RETRY_DELAY_MS, SharedServedPolicy, TrainingLoop, type StepOutcome, type StepRecord, type SteppingWindow } from '../rl/loop/index.js';
import { loadChatTokenizer, type ChatTokenizer, type Forwarding, type PolicyUpstream } from '../rl/policy/index.js';
import { TinkerBackend } from '../rl/tinker/index.js';
import { urlHost } from '../shared/url-host.js';
// Loaded by team-app.ts only (through team/rl.ts): it pulls in `pg`.
import { ChannelListener, PgTrainerLease, PgTrainingSteps, pgServedPolicyState, SERVED_POLICY_CHANNEL, type PgRlSamples } from '../store/postgres/index.js';
import type pg from 'pg';

/** How often a node asks for the trainer's lock and (as the trainer) looks for a full batch. */
const TICK_MS = 1_000;
/**
 * How often a node reads the team's served policy although no notification came: a listening
 * connection that died silently (no FIN) takes minutes to notice. Without a listener, every tick.
 */
const POLICY_POLL_MS = 30_000;
/** The longest wait before opening a failed backend again. */
const MAX_REOPEN_DELAY_MS = 5 * 60_000;

export interface TeamRlTrainingOptions {
  pool: pg.Pool;
  /** the team store's URL: the trainer's lock lives on a connection of its own */
  url: string;
  settings: RlEngineSettings;
  samples: PgRlSamples;
  /** the generation of the team's skill library this node has caught up to */
  generation: () => number;
  /** the node's normal upstream, which answers whatever the policy does not */
  fallback: Forwarding;
  logger: Logger;
  /** OPD (settings.opd): queues the teacher's jobs for samples not yet asked; the trainer runs it every tick */
  queueTeacher?: (() => Promise<unknown>) | undefined;
  /** the scheduler (mode auto, or scheduler.enabled): the trainer steps only in its windows; absent: any time is a window */
  window?: SteppingWindow | undefined;
}

/** What /status shows of training on a node: the personal engine's report, plus which node trains. */
export type TeamTrainingReport = EngineReport & { trainer: 'this node' | 'another node' };

/**
 * RL training on a node of a team store (modes rl and auto with a training backend). Every node
 * serves main turns from the team's current policy (the record in the team store, read again when
 * its write is notified, so a new step or a rollback reaches every node at once; and every 30 s
 * should a notification be missed), through a sampling session of its own,
 * so its turns are recorded with their token ids and logprobs. One node trains: the one holding the
 * trainer's advisory lock (PgTrainerLease). It opens the training run (resuming from the last
 * saved state, whichever node saved it) and runs GRPO steps on the team's judged samples whenever a
 * full batch waits in a window of the scheduler, where one runs (every node runs the same one, so
 * a node that takes the lock keeps to the same windows); when it stops or loses the store, another
 * node takes the lock and carries on.
 */
export class TeamRlTraining {
  readonly steps: PgTrainingSteps;
  readonly policy: SharedServedPolicy;
  readonly policyUpstream: PolicyUpstream;
  /** this node's session: samples whatever the team serves, trainer or not */
  private readonly sampling: TinkerBackend;
  private readonly lease: PgTrainerLease;
  /** hears the served-policy record change (a step on the trainer, a rollback on any node) */
  private readonly policyListener: ChannelListener;
  private policyRead: Promise<void> | undefined;
  private nextPolicyRead = 0;
  private trainer: { backend: TinkerBackend; loop: TrainingLoop } | undefined;
  private tokenizer: ChatTokenizer | undefined;
  private state: EngineState = 'starting';
  private error: string | null = null;
  private samplingOpen = false;
  private reopenAt = 0;
  private failedOpenings = 0;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private readyCount = 0;
  private lastSteps: StepRecord[] = [];
  /** when a node that does not train reads the report's figures again */
  private nextReportRead = 0;
  /** the store failed the last tick: said once, not every second */
  private storeTrouble = false;

  constructor(private readonly options: TeamRlTrainingOptions) {
    const { settings, pool, logger } = options;
    this.sampling = this.newBackend();
    this.steps = new PgTrainingSteps(pool);
    this.policy = new SharedServedPolicy(pgServedPolicyState(pool), (path) => this.sampling.samplerFor(path));
    this.lease = new PgTrainerLease(options.url, (error) => this.stepDown(error));
    // A (re)connection may have missed notifications: it reads the record too.
    this.policyListener = new ChannelListener(
      options.url,
      SERVED_POLICY_CHANNEL,
      { notified: () => void this.readPolicy().catch(() => undefined), listening: () => this.readPolicy().catch(() => undefined) },
      { applicationName: 'metaclaw-rl-policy', logger },
    );
    this.policyUpstream = servingPolicy(options.fallback, settings, logger, () => ({
      tokenizer: this.tokenizer,
      sampler: this.state === 'ready' ? this.policy.current() : undefined,
    }));
  }

  get training(): boolean {
    return this.trainer !== undefined;
  }

  /** Opens the sampling session and starts the tick in the background; serving never waits for either. */
  start(): void {
    this.timer = setInterval(() => this.tick(), TICK_MS);
    this.timer.unref();
    this.tick();
    // Until it listens (it keeps retrying), every tick reads the record.
    this.policyListener.start().catch(() => undefined);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.state = 'stopped';
    // A step in flight is cut (a service that hangs must not hold the shutdown): it is recorded
    // abandoned, its samples go back to the buffer, before the lock goes to another node.
    const trainer = this.trainer;
    trainer?.backend.abort('the node is stopping');
    await trainer?.loop.stop();
    await this.policyListener.stop();
    await this.ticking?.catch(() => undefined);
    this.trainer = undefined;
    await trainer?.backend.close();
    await this.lease.release();
    await this.sampling.close();
  }

  /** One step now (`metaclaw rl train-step` on this node): only the trainer takes it. */
  async runStep(trigger: 'window' | 'manual'): Promise<StepOutcome> {
    if (this.state !== 'ready') return { status: 'skipped', reason: this.notReady() };
    if (!this.trainer)
      return { status: 'skipped', reason: 'another node of the team trains (it holds the trainer’s lock); ask it, or wait for its next batch' };
    return this.trainer.loop.runStep(trigger);
  }

  report(): TeamTrainingReport {
    const { settings } = this.options;
    return {
      state: this.state,
      error: this.error,
      retry_at: this.state === 'failed' ? new Date(this.reopenAt).toISOString() : null,
      step_retry: this.trainer ? stepRetryReport(this.trainer.loop) : null,
      backend: { kind: settings.backend.kind, base_url: settings.backend.baseUrl },
      base_model: settings.baseModel,
      served: this.policy.describe() ?? null,
      trigger: settings.manualOnly ? 'manual' : this.options.window ? 'window' : 'always',
      batch_size: settings.batchSize,
      ready_samples: this.readyCount,
      window: this.options.window ? this.options.window.describe() : 'any time (mode rl without the scheduler)',
      opd: settings.opd
        ? { teacher: urlHost(settings.opd.teacher.baseUrl) ?? 'its URL', model: settings.opd.teacher.model, kl_penalty_coef: settings.opd.klPenaltyCoef }
        : null,
      last_steps: this.lastSteps.map(stepSummary),
      trainer: this.trainer ? 'this node' : 'another node',
    };
  }

  private notReady(): string {
    if (this.state === 'starting') return `the ${this.options.settings.backend.kind} backend is still opening, or the team serves no policy yet`;
    if (this.state === 'failed') return `the ${this.options.settings.backend.kind} backend could not be opened: ${this.error ?? 'unknown error'}`;
    return 'the node is stopping';
  }

  private newBackend(): TinkerBackend {
    const { backend } = this.options.settings;
    return new TinkerBackend({
      kind: backend.kind,
      apiKey: backend.apiKey,
      baseUrl: backend.baseUrl,
      onWarning: (message) => this.options.logger.warn(message),
    });
  }

  /** One tick at a time: a slow store or backend delays the next rather than piling ticks up. */
  private tick(): void {
    if (this.ticking || this.state === 'stopped') return;
    this.ticking = this.tickOnce()
      .then(() => {
        this.storeTrouble = false;
      })
      .catch((error: unknown) => {
        if (!this.storeTrouble)
          this.options.logger.warn({ err: errorMessage(error) }, 'rl: the team store could not be read; the node keeps serving its policy and tries again');
        this.storeTrouble = true;
      })
      .finally(() => (this.ticking = undefined));
  }

  private async tickOnce(): Promise<void> {
    if (!this.samplingOpen && !(await this.openSampling())) return;
    if (!this.policyListener.listening || Date.now() >= this.nextPolicyRead) await this.readPolicy();
    if (!this.trainer && this.state !== 'stopped' && (await this.lease.tryAcquire())) await this.becomeTrainer();
    if (this.state !== 'stopped' && this.policy.current()) this.state = 'ready';
    const trainer = this.trainer;
    if (trainer) await this.options.queueTeacher?.();
    // The trainer needs the count every tick; the others, and the recent steps, only for the report.
    const reportDue = Date.now() >= this.nextReportRead;
    if (trainer || reportDue) this.readyCount = await this.options.samples.trainableCount(this.options.generation(), this.waitsForTeacher());
    if (reportDue) {
      this.lastSteps = await this.steps.recent(5);
      this.nextReportRead = Date.now() + this.options.settings.checkIntervalMs;
    }
    if (this.state !== 'ready' || !trainer || this.options.settings.manualOnly || trainer.loop.busy || trainer.loop.waitingAfterFailure()) return;
    if (this.readyCount < this.options.settings.batchSize) return;
    if (this.options.window && !this.options.window.isOpen()) return;
    // Not awaited: the policy is read again meanwhile; the loop runs one step at a time.
    void trainer.loop.runStep('window').then((outcome) => {
      this.nextReportRead = 0; // the report shows this node's own step at the next tick
      if (outcome.status === 'failed') this.options.logger.warn({ step: outcome.step, err: outcome.error }, 'rl training step failed');
    });
  }

  /** Reads the served-policy record again, one read at a time; before the sampling session opens, the tick's first read does. */
  private readPolicy(): Promise<void> {
    const read = (this.policyRead ?? Promise.resolve())
      .catch(() => undefined)
      .then(async () => {
        if (!this.samplingOpen) return;
        this.nextPolicyRead = Date.now() + POLICY_POLL_MS;
        try {
          if (await this.policy.refresh()) this.options.logger.info({ served: this.policy.describe() }, 'rl: serving the team’s new policy');
        } catch (error) {
          this.nextPolicyRead = 0;
          throw error;
        }
      });
    this.policyRead = read;
    return read;
  }

  /** OPD: a sample trains once the teacher has answered it or given up, as on one proxy. */
  private waitsForTeacher(): { teacher: boolean } {
    return { teacher: this.options.settings.opd !== undefined };
  }

  /** The tokenizer and this node's sampling session; a failure is tried again, less and less often. */
  private async openSampling(): Promise<boolean> {
    if (Date.now() < this.reopenAt) return false;
    const { settings, logger } = this.options;
    try {
      const [tokenizer] = await Promise.all([
        loadChatTokenizer({ tokenizerPath: settings.tokenizerPath, model: settings.baseModel, home: settings.home }),
        this.sampling.openForSampling(),
      ]);
      this.tokenizer = tokenizer;
      this.samplingOpen = true;
      this.error = null;
      this.failedOpenings = 0;
      if (this.state === 'failed') this.state = 'starting';
      return true;
    } catch (error) {
      await this.sampling.close();
      this.state = 'failed';
      this.error = errorMessage(error);
      const delay = Math.min(settings.checkIntervalMs * 2 ** this.failedOpenings, MAX_REOPEN_DELAY_MS);
      this.failedOpenings += 1;
      this.reopenAt = Date.now() + delay;
      logger.error(
        { err: this.error, backend: settings.backend.kind, retry_in_s: Math.round(delay / 1000) },
        'rl: the training backend could not be opened; the normal upstream serves every turn until it can',
      );
      return false;
    }
  }

  /** This node holds the lock: it opens the team's training run where the last trainer left it. */
  private async becomeTrainer(): Promise<void> {
    const { settings, samples, generation, logger } = this.options;
    const backend = this.newBackend();
    try {
      const interrupted = await this.steps.abandonInterrupted(Date.now());
      if (interrupted > 0) logger.info({ steps: interrupted }, 'rl: steps cut by the last trainer were abandoned; their samples wait for the next step');
      const resumeFrom = (await this.steps.latestState())?.statePath ?? (settings.resumeFrom || undefined);
      await backend.open({ baseModel: settings.baseModel, loraRank: settings.loraRank, ...(resumeFrom ? { resumeFrom } : {}) });
      const loop = new TrainingLoop({
        backend,
        // Claimed at step start: this node may lose the lock mid-step, and the next trainer must not train them too.
        buffer: {
          ready: (limit) => samples.trainable(generation(), limit, this.waitsForTeacher()),
          claim: (turnIds, step) => samples.claim(turnIds, step),
          // A batch the backend keeps refusing leaves the team's buffer, as on one proxy.
          setAside: (turnIds, reason) => samples.setAside(turnIds, reason),
        },
        steps: this.steps,
        policy: this.policy,
        step: grpoStep(settings),
        ...(this.options.window ? { window: this.options.window } : {}),
        batchSize: settings.batchSize,
        skillGeneration: generation,
        logger,
        failureBackoffMs: { first: settings.checkIntervalMs, max: MAX_STEP_RETRY_DELAY_MS },
      });
      // The team's first trainer: the fresh LoRA serves, so the first turns are already trainable samples.
      if (!this.policy.describe()) {
        const sampler = await backend.saveForSampler('step-0000');
        await this.policy.installFromStep(0, sampler, sampler.version);
      }
      if (this.state === 'stopped' || !this.lease.held) {
        await backend.close();
        return;
      }
      this.trainer = { backend, loop };
      logger.info({ backend: settings.backend.kind, model: settings.baseModel, resumed_from: resumeFrom ?? null }, 'rl: this node trains the team’s policy');
    } catch (error) {
      // Another node may do better (its own key, its own way to the backend): the lock goes back.
      await backend.close();
      await this.lease.release();
      logger.warn({ err: errorMessage(error) }, 'rl: could not open the team’s training run; the trainer’s lock is released');
    }
  }

  /** The lock went with its connection: another node may train now, so this one stops. */
  private stepDown(error: Error | undefined): void {
    const trainer = this.trainer;
    this.trainer = undefined;
    if (!trainer) return;
    this.options.logger.warn({ err: error ? errorMessage(error) : null }, 'rl: lost the trainer’s lock with its connection; another node may train now');
    void trainer.backend.close();
  }
}
