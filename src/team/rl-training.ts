import { errorMessage } from '../errors.js';
import type { Logger } from '../logging/index.js';
import { grpoStep, servingPolicy, stepRetryReport, stepSummary, type EngineReport, type EngineState, type RlEngineSettings } from '../rl/engine.js';
import {
  decideTrainingRun,
  describeRun,
  MAX_STEP_RETRY_DELAY_MS,
  earlierRunReason,
  keepsRunStart,
  newRunMessage,
  runStartOf,
  sameRun,
  saveRunStart,
  SharedServedPolicy,
  TrainingLoop,
  type RunConfiguration,
  type StepOutcome,
  type StepRecord,
  type SteppingWindow,
  type TrainingRun,
} from '../rl/loop/index.js';
import { loadChatTokenizer, type ChatTokenizer, type Forwarding, type PolicyUpstream } from '../rl/policy/index.js';
import { ReopenSchedule, type OpeningFailure } from '../rl/reopen.js';
import { TinkerBackend } from '../rl/tinker/index.js';
import { urlHost } from '../shared/url-host.js';
// Loaded by team-app.ts only (through team/rl.ts): it pulls in `pg`.
import {
  beginTeamRun,
  ChannelListener,
  PgRunPresence,
  PgTrainerLease,
  PgTrainingSteps,
  pgServedPolicyState,
  readTeamRun,
  recordTeamRun,
  recordTeamRunStart,
  SERVED_POLICY_CHANNEL,
  trainerLockHeld,
  type PgRlSamples,
} from '../store/postgres/index.js';
import type pg from 'pg';

/** How often a node asks for the trainer's lock and (as the trainer) looks for a full batch. */
const TICK_MS = 1_000;
/**
 * How often a node reads the team's served policy although no notification came: a listening
 * connection that died silently (no FIN) takes minutes to notice. Without a listener, every tick.
 */
const POLICY_POLL_MS = 30_000;

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

/** What /status shows of training on a node: the personal engine's report, plus which node trains and the team's run. */
export type TeamTrainingReport = EngineReport & {
  /** 'no node': the trainer's lock is free (no node could open the team's run, or none has asked yet) */
  trainer: 'this node' | 'another node' | 'no node';
  /** the team's training run (what its steps were trained on), null until a trainer recorded one */
  run: TrainingRun | null;
  /** why this node neither serves nor trains the team's run (it is configured for another), or null */
  waiting: string | null;
  /**
   * This node took the trainer's lock but could not open the team's run (the service refused or
   * never answered): the last failure, since when, how many tries, and when it asks for the lock
   * again. Null once it opened the run as the trainer, or before it failed to.
   */
  trainer_opening_failed: OpeningFailure | null;
};

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
  /** the trainer's backend while this node opens the team's run */
  private openingTrainer: TinkerBackend | undefined;
  private tokenizer: ChatTokenizer | undefined;
  private state: EngineState = 'starting';
  private error: string | null = null;
  private samplingOpen = false;
  /** when this node's sampling session, which failed to open, is tried again */
  private readonly reopen: ReopenSchedule;
  /** when this node, whose opening of the team's run failed as its trainer, asks for the trainer's lock again */
  private readonly retrain: ReopenSchedule;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private readyCount = 0;
  private lastSteps: StepRecord[] = [];
  /** when a node that does not train reads the report's figures again */
  private nextReportRead = 0;
  /** another session holds the trainer's lock (what this node saw last); see `trainer` in the report */
  private trainsElsewhere = false;
  /** the store failed the last tick: said once, not every second */
  private storeTrouble = false;
  /** the backend, base model and LoRA rank this node is configured for */
  private readonly configured: RunConfiguration;
  /** holds this node's configuration's presence lock, so other nodes know a node is configured for it */
  private readonly presence: PgRunPresence;
  /** the team's run as last read (undefined: none recorded yet) */
  private teamRun: TrainingRun | undefined;
  /** why this node neither serves nor trains the team's run (another configuration), or null */
  private conflict: string | null = null;

  constructor(private readonly options: TeamRlTrainingOptions) {
    const { settings, pool, logger } = options;
    this.sampling = this.newBackend();
    this.reopen = new ReopenSchedule(
      settings.checkIntervalMs,
      logger,
      'rl: the training backend could not be opened; the normal upstream serves every turn until it can',
    );
    this.retrain = new ReopenSchedule(settings.checkIntervalMs, logger, 'rl: could not open the team’s training run; the trainer’s lock is released');
    this.steps = new PgTrainingSteps(pool);
    this.policy = new SharedServedPolicy(pgServedPolicyState(pool), (path) => this.sampling.samplerFor(path));
    this.lease = new PgTrainerLease(options.url, (error) => this.stepDown(error));
    this.configured = { backend: settings.backend.kind, base_model: settings.baseModel, lora_rank: settings.loraRank };
    this.presence = new PgRunPresence(options.url, this.configured, pool);
    // A (re)connection may have missed notifications: it reads the record too.
    this.policyListener = new ChannelListener(
      options.url,
      SERVED_POLICY_CHANNEL,
      { notified: () => void this.readPolicy().catch(() => undefined), listening: () => this.readPolicy().catch(() => undefined) },
      { applicationName: 'metaclaw-rl-policy', logger },
    );
    this.policyUpstream = servingPolicy(options.fallback, settings, logger, () => ({
      tokenizer: this.tokenizer,
      // A node configured for another run never serves the team's: its LoRA does not fit this tokenizer.
      sampler: this.state === 'ready' && this.conflict === null ? this.policy.current() : undefined,
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
    // An opening in flight is cut too: a service that never answers must not hold the shutdown.
    this.sampling.abort('the node is stopping');
    this.openingTrainer?.abort('the node is stopping');
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
    await this.presence.release();
    await this.sampling.close();
  }

  /** One step now (`metaclaw rl train-step` on this node): only the trainer takes it. */
  async runStep(trigger: 'window' | 'manual'): Promise<StepOutcome> {
    if (this.state !== 'ready') return { status: 'skipped', reason: this.notReady() };
    if (!this.trainer)
      return { status: 'skipped', reason: 'another node of the team trains (it holds the trainer’s lock); ask it, or wait for its next batch' };
    return this.trainer.loop.runStep(trigger);
  }

  /** The team's run's step 0 (`rl rollback 0` on any node), read from the team store; none for a run begun before it was kept. */
  async runStart(): Promise<{ samplerPath: string; at: number } | undefined> {
    return runStartOf(await readTeamRun(this.options.pool));
  }

  report(): TeamTrainingReport {
    const { settings } = this.options;
    return {
      state: this.conflict === null ? this.state : 'starting',
      error: this.error,
      retry_at: this.state === 'failed' ? new Date(this.reopen.nextAt).toISOString() : null,
      opening_failed: this.reopen.report(),
      step_retry: this.trainer ? stepRetryReport(this.trainer.loop) : null,
      backend: { kind: settings.backend.kind, base_url: settings.backend.baseUrl },
      base_model: settings.baseModel,
      served: this.conflict === null ? (this.policy.describe() ?? null) : null,
      trigger: settings.manualOnly ? 'manual' : this.options.window ? 'window' : 'always',
      batch_size: settings.batchSize,
      ready_samples: this.readyCount,
      window: this.options.window ? this.options.window.describe() : 'any time (mode rl without the scheduler)',
      opd: settings.opd
        ? { teacher: urlHost(settings.opd.teacher.baseUrl) ?? 'its URL', model: settings.opd.teacher.model, kl_penalty_coef: settings.opd.klPenaltyCoef }
        : null,
      last_steps: this.lastSteps.map(stepSummary),
      trainer: this.trainer ? 'this node' : this.trainsElsewhere ? 'another node' : 'no node',
      run: this.teamRun ?? null,
      waiting: this.conflict,
      trainer_opening_failed: this.retrain.report(),
    };
  }

  private notReady(): string {
    if (this.conflict !== null) return this.conflict;
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
    if (!this.samplingOpen && !(await this.openSampling())) return this.readTrainsElsewhere();
    if (!this.policyListener.listening || Date.now() >= this.nextPolicyRead) await this.readPolicy();
    const mayTrain = await this.checkRun();
    // After its opening of the team's run failed, this node leaves the lock to the others for a while.
    if (mayTrain && !this.trainer && this.state !== 'stopped' && !this.retrain.waiting()) {
      const acquired = await this.lease.tryAcquire();
      this.trainsElsewhere = !acquired;
      if (acquired) await this.becomeTrainer();
    } else await this.readTrainsElsewhere();
    if (this.state !== 'stopped' && this.policy.current() && this.conflict === null) this.state = 'ready';
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

  /**
   * Holds this node's presence and reads the team's run. A node configured for another backend,
   * base model or LoRA rank than the team's run neither serves nor trains it (the team's LoRA does
   * not load into its model) while any node configured for the team's run is up: a node left on the
   * old `rl.model` cannot undo a change, and a changed one cannot cut the team's run short while
   * other nodes still serve it. Once none is up (every node was moved over), the node that takes
   * the trainer's lock begins the new run. True when this node may take the lock.
   */
  private async checkRun(): Promise<boolean> {
    await this.presence.hold();
    const run = (this.teamRun = await readTeamRun(this.options.pool));
    if (!run || sameRun(run, this.configured)) {
      if (this.conflict !== null) this.options.logger.info({ run }, 'rl: this node’s configuration is the team’s run again');
      this.conflict = null;
      return true;
    }
    if (this.trainer) return true;
    const othersOnRun = await this.presence.configuredFor(run);
    const conflict = `the team trains ${describeRun(run)}, and this node is configured for ${describeRun(this.configured)} (rl.backend, rl.model, rl.lora_rank): ${
      othersOnRun
        ? 'it neither serves nor trains the team’s policy while a node configured for the team’s run is up; once none is, the team’s trainer begins a new run on this configuration'
        : 'no node configured for the team’s run is up, so the node that takes the trainer’s lock begins a new run on this configuration'
    }`;
    if (conflict !== this.conflict) this.options.logger.warn({ team_run: run, configured: this.configured }, `rl: ${conflict}`);
    this.conflict = conflict;
    return !othersOnRun;
  }

  /** Whether another node holds the trainer's lock, when this node does not ask for it (see `trainerLockHeld`). */
  private async readTrainsElsewhere(): Promise<void> {
    this.trainsElsewhere = !this.trainer && !this.lease.held && this.state !== 'stopped' && (await trainerLockHeld(this.options.pool));
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
    if (this.reopen.waiting()) return false;
    const { settings } = this.options;
    try {
      const [tokenizer] = await Promise.all([
        loadChatTokenizer({ tokenizerPath: settings.tokenizerPath, model: settings.baseModel, home: settings.home }),
        this.sampling.openForSampling(),
      ]);
      this.tokenizer = tokenizer;
      this.samplingOpen = true;
      this.error = null;
      this.reopen.opened();
      if (this.state === 'failed') this.state = 'starting';
      return true;
    } catch (error) {
      await this.sampling.close();
      if (this.state === 'stopped') return false;
      this.state = 'failed';
      this.error = errorMessage(error);
      this.reopen.failed(error, { backend: settings.backend.kind });
      return false;
    }
  }

  /** This node holds the lock: it opens the team's training run where the last trainer left it. */
  private async becomeTrainer(): Promise<void> {
    const { settings, samples, generation, logger } = this.options;
    const backend = (this.openingTrainer = this.newBackend());
    try {
      const interrupted = await this.steps.abandonInterrupted(Date.now());
      if (interrupted > 0) logger.info({ steps: interrupted }, 'rl: steps cut by the last trainer were abandoned; their samples wait for the next step');
      const stored = await readTeamRun(this.options.pool);
      const lastStep = stored && !sameRun(stored, this.configured) ? await this.steps.lastStep() : 0;
      const { run, previous, record, begin } = decideTrainingRun(stored, this.configured, () => lastStep);
      if (record) await recordTeamRun(this.options.pool, record);
      // A new run resumes from nothing of the earlier ones (only rl.resume_from_ckpt, if set).
      const resumedStep = begin ? undefined : await this.steps.latestState();
      const resumeFrom = resumedStep?.statePath ?? (settings.resumeFrom || undefined);
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
      if (this.stoppedTraining()) {
        await backend.close();
        return;
      }
      // Opened on the run's own start (a new run, or one whose step 0 is not kept and no step resumed): kept now, as on one proxy.
      const start = keepsRunStart(run, begin !== undefined, resumedStep !== undefined) ? await saveRunStart(backend, Date.now) : undefined;
      if (begin && previous && start) {
        // A new run counts once the backend opened on it: its fresh LoRA serves as its step 0 on every node.
        const setAside = await beginTeamRun(
          this.options.pool,
          { ...begin, start: start.record },
          { step: 0, samplerPath: start.record.sampler_path, pinned: false },
          { before: Date.now(), reason: earlierRunReason(previous) },
        );
        if (setAside > 0) logger.info({ samples: setAside }, 'rl: the earlier training run’s untrained samples were set aside');
        this.teamRun = begin;
        this.conflict = null;
        await this.policy.refresh();
        logger.warn({ previous, now: this.configured, after_step: run.after_step }, newRunMessage(previous, run));
      } else {
        if (start && !this.stoppedTraining()) await recordTeamRunStart(this.options.pool, run, start.record);
        if (!this.policy.describe()) {
          // The team's first trainer: the fresh LoRA serves, so the first turns are already trainable samples.
          const { sampler } = start ?? (await saveRunStart(backend, Date.now));
          await this.policy.installFromStep(0, sampler, sampler.version);
        }
      }
      if (this.stoppedTraining()) {
        await backend.close();
        return;
      }
      this.trainer = { backend, loop };
      this.retrain.opened();
      logger.info({ backend: settings.backend.kind, model: settings.baseModel, resumed_from: resumeFrom ?? null }, 'rl: this node trains the team’s policy');
    } catch (error) {
      // Another node may do better (its own key, its own way to the backend): the lock goes back,
      // and this node asks for it again later and later, not at every tick.
      await backend.close();
      await this.lease.release();
      if (this.state !== 'stopped') this.retrain.failed(error, { backend: settings.backend.kind });
    } finally {
      this.openingTrainer = undefined;
    }
  }

  /** The node is stopping, or lost the trainer's lock while it opened the run (checked after each wait). */
  private stoppedTraining(): boolean {
    return this.state === 'stopped' || !this.lease.held;
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
