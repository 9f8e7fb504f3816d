import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import { hostname } from 'node:os';
import { resolveUpstreams, type LoadedConfig, type UpstreamTarget } from '../config/index.js';
import { ContextPlanner, type ContextProvider } from '../context/index.js';
import { ConversationStore, IdleSessionSweeper, TurnJournal, UserLanguages } from '../conversation/index.js';
import { ConfigError, errorMessage } from '../errors.js';
import { JobQueue, LearningBudget, LearningRunner } from '../learning/index.js';
import type { Logger } from '../logging/index.js';
import {
  AdminToken,
  AfterServing,
  createProxyServer,
  learningJobRoutes,
  logRoutes,
  memoryRoutes,
  ProxyAuth,
  rlRoutes,
  ProxyStats,
  skillsRoutes,
  turnFromJournal,
  type ProxyApp,
} from '../proxy/index.js';
import { MemoryService, personalMemoryApi, SHARED_SCOPE } from '../memory/index.js';
import { Scheduler, schedulerEnabled, schedulerOffReason, schedulerSettings, SchedulerStateStore } from '../scheduler/index.js';
import { decideMode, RlEngine, RlService } from '../rl/index.js';
import { SkillQuotes, SkillsService } from '../skills/index.js';
import { MemberDirectory } from '../team/index.js';
import { openDatabase, StoreHealth, WalCheckpointer, type Db } from '../store/index.js';
import { similarWords, thesaurus, warmGlossary } from '../text/index.js';
import { CredentialMemory, UpstreamForwarder } from '../upstream/index.js';
import { VERSION } from '../version.js';
import { closeServer, describeTarget, endServing, refuseIfRunning, runtimeLogger, startServing, reportEscapedError, servingDeps, sleep } from './serving.js';
import { recordingListeners, recordingSettings, type RecordingSettings } from './recording.js';
import { ProxyMetrics, storeFigures } from '../metrics/index.js';
import { dashboardRoutes, sqliteDashboardReads } from '../dashboard/index.js';
import { forwarderOptions, judgeSettings, memorySettings, rlEngineSettings, skillsSettings } from './settings.js';
import { isLoopbackHost } from '../shared/loopback.js';
import {
  describeRetrieval,
  probeProviderEmbeddings,
  retrievalModes,
  saveProbe,
  skillsMode,
  storedProbe,
  withMemoryRetrieval,
  withSkillsRetrieval,
  type RetrievalDecision,
} from './retrieval-mode.js';
import type { TurnWriterData } from './turn-writer-worker.js';

export interface RuntimeOptions {
  config: LoadedConfig;
  /** Also log to standard output. */
  foreground: boolean;
  env?: NodeJS.ProcessEnv;
}

/** What /status answers (and the dashboard's overview reads). */
export type StatusReport = ReturnType<MetaclawRuntime['statusReport']>;

/** The longest the proxy's own connection waits for another's write lock (ms): the event loop waits with it. */
const MAIN_THREAD_BUSY_TIMEOUT_MS = 200;
/** How long a probe waits for a lock another connection holds: it only asks whether the lock was let go. */
const BUSY_PROBE_TIMEOUT_MS = 5;

/**
 * The running proxy process: composes config → store → conversation → learning → context →
 * upstream → proxy, and owns start-up and graceful shutdown.
 */
export class MetaclawRuntime {
  readonly logger: Logger;
  readonly db: Db;
  /** Whether the store can be written: a full disk pauses recording and learning, never serving. */
  readonly health: StoreHealth;
  readonly conversation: ConversationStore;
  readonly queue: JobQueue;
  readonly budget: LearningBudget;
  readonly runner: LearningRunner;
  readonly forwarder: UpstreamForwarder;
  readonly targets: UpstreamTarget[];
  readonly stats = new ProxyStats();
  readonly credentials = new CredentialMemory();
  readonly skills: SkillsService;
  readonly memory: MemoryService;
  /** The idle-window scheduler (scheduler.enabled or mode auto): the trainer's TrainingWindow. */
  readonly scheduler: Scheduler | undefined;
  readonly rl: RlService;
  /** Modes rl and auto with a training backend: serving from the policy and training it. */
  readonly engine: RlEngine | undefined;
  /** Which retrieval skills and memory use (keyword or with embeddings), and why. */
  private retrieval: { skills: RetrievalDecision; memory: RetrievalDecision };
  /** Cancels the start-up embeddings probe when the proxy stops first. */
  private readonly probing = new AbortController();
  private readonly providers: ContextProvider[] = [];
  private readonly routeGroups: Array<(app: ProxyApp) => void> = [];
  readonly auth: ProxyAuth;
  private readonly members: MemberDirectory;
  readonly metrics: ProxyMetrics;
  private readonly sweeper: IdleSessionSweeper;
  readonly pendingRecords = new Map<string, Promise<void>>();
  readonly afterServing: AfterServing;
  private context: ContextPlanner | undefined;
  private server: Server | undefined;
  private maintenanceTimer: NodeJS.Timeout | undefined;
  private readonly checkpointer: WalCheckpointer;
  private readonly recording: RecordingSettings;
  private readonly startedAt = Date.now();
  private stopping: Promise<void> | undefined;

  constructor(readonly options: RuntimeOptions) {
    const { values, paths } = options.config;
    if (!isLoopbackHost(values['proxy.host']) && values['proxy.api_key'] === '') {
      throw new ConfigError(
        `Refusing to listen on ${values['proxy.host']} without a proxy key: anyone on the network could spend your upstream key and read your data. Set the METACLAW_PROXY_API_KEY environment variable (or proxy.api_key in config.yaml, edited by hand: a key typed on the command line stays in your shell history), or bind 127.0.0.1.`,
      );
    }
    this.logger = runtimeLogger(options.config, options.foreground);
    this.afterServing = new AfterServing(this.logger);
    // A write on this connection waits for a lock on the event loop, so every request waits with it:
    // with SQLite's usual 5 s, a `sqlite3` shell or a backup holding the write lock stalled the proxy
    // for 5 s per learning step. A write refused here pauses learning until a probe write works
    // (StoreHealth); the turn writer has its own connection and thread, and keeps the long wait.
    this.db = openDatabase(paths.database, { busyTimeoutMs: MAIN_THREAD_BUSY_TIMEOUT_MS });
    this.checkpointer = new WalCheckpointer(this.db, paths.database, this.logger);
    const instanceId = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
    this.queue = new JobQueue(this.db, instanceId, values['learning.max_attempts']);
    this.budget = new LearningBudget(this.db, values['learning.daily_token_budget']);
    this.health = new StoreHealth(this.logger);
    // Jobs run in the gaps between requests: on two cores a job running mid-request is added latency.
    this.runner = new LearningRunner(this.queue, this.budget, this.logger, {
      concurrency: values['learning.concurrency'],
      leaseMs: values['learning.lease_seconds'] * 1000,
      yieldTo: { activity: () => this.stats.requests + this.stats.active, quietMs: 150, maxDeferMs: 2_000 },
      storage: this.health,
    });
    this.conversation = new ConversationStore(this.db, {
      redactTurns: values['store.redact_turns'],
      health: this.health,
      journal: new TurnJournal(paths.journalDir),
      failed: (turnId, error) => {
        this.stats.recordFailures++;
        this.stats.rememberError(turnId, null, `turn record failed: ${errorMessage(error)}`);
        this.logger.error({ err: error, request_id: turnId }, 'could not record the turn');
      },
    });
    this.health.setProbe(() => {
      if (this.health.busy) {
        // The probe's write waits for the lock on the event loop, and every request with it: while
        // another connection holds the lock it gives up almost at once (probes come every 500 ms at
        // most), instead of stalling requests for the full busy timeout each time. A checkpoint
        // would only wait on the same lock: the write alone tells.
        this.db.pragma(`busy_timeout = ${BUSY_PROBE_TIMEOUT_MS}`);
        try {
          this.conversation.probeWrite();
        } finally {
          this.db.pragma(`busy_timeout = ${MAIN_THREAD_BUSY_TIMEOUT_MS}`);
        }
        return;
      }
      // On a full disk the WAL itself may hold the space: copied into the database and cut to zero, it
      // gives it back.
      try {
        this.db.pragma('wal_checkpoint(TRUNCATE)');
      } catch {
        // the write below tells whether the store can be written
      }
      this.conversation.probeWrite();
    });
    this.recording = recordingSettings(options.config);
    const hooks = { enqueued: () => this.runner.wake(), failed: (trigger: string, error: unknown) => this.runner.triggerFailed(trigger, error) };
    for (const listener of recordingListeners(this.db, this.queue, this.recording, hooks)) this.conversation.addListener(listener);
    this.sweeper = new IdleSessionSweeper(this.conversation, values['session.idle_timeout_minutes'] * 60_000, this.logger, this.health);
    this.targets = resolveUpstreams(options.config, options.env ?? process.env);
    this.forwarder = new UpstreamForwarder(this.targets, forwarderOptions(options.config), this.logger, this.credentials);

    // The last probe (by setup or the previous start) decides until this start's probe answers.
    this.retrieval = retrievalModes(options.config, options.env ?? process.env, storedProbe(this.db));
    // The languages the user writes in: skills get search keys in them, memory searches their translations.
    const languages = new UserLanguages(this.db);
    languages.refresh();
    this.skills = new SkillsService({
      db: this.db,
      logger: this.logger.child({ part: 'skills' }),
      settings: withSkillsRetrieval(skillsSettings(options.config), this.retrieval.skills),
      conversation: this.conversation,
      mainUpstream: this.forwarder.mainTarget,
      credentials: this.credentials,
      languages,
    });
    this.runner.register(this.skills.evolveHandler());
    this.runner.register(this.skills.searchKeysHandler());
    this.skills.attachQueue(this.runner.enqueue);
    if (values['skills.enabled']) this.addContextProvider(this.skills.provider);
    this.addRoutes(skillsRoutes(this.skills));

    this.memory = new MemoryService({
      db: this.db,
      logger: this.logger.child({ part: 'memory' }),
      settings: withMemoryRetrieval(memorySettings(options.config), this.retrieval.memory),
      conversation: this.conversation,
      quotes: new SkillQuotes(this.db, this.skills.library.dir),
      mainUpstream: this.forwarder.mainTarget,
      credentials: this.credentials,
      languages,
    });
    for (const handler of this.memory.handlers()) this.runner.register(handler);

    const env = options.env ?? process.env;
    const mode = decideMode(values, env);
    const engineSettings = mode.backend ? rlEngineSettings(options.config, env) : undefined;
    this.rl = new RlService({
      db: this.db,
      logger: this.logger.child({ part: 'rl' }),
      mode,
      teacher: engineSettings?.opd?.teacher,
      judge: judgeSettings(options.config),
      generation: () => this.skills.history.generation,
      conversation: this.conversation,
      credit: this.skills.credit,
      mainUpstream: this.forwarder.mainTarget,
      credentials: this.credentials,
    });
    for (const handler of this.rl.handlers()) this.runner.register(handler);
    // Support/query separation: a new skill generation drops older samples from the trainable buffer.
    this.skills.library.onChange(() => this.rl.skillsChanged());
    this.memory.attachQueue(this.runner.enqueue);
    if (values['memory.enabled']) this.addContextProvider(this.memory.provider);
    const adminToken = AdminToken.ensure(paths.adminToken);
    // Team members' keys are looked up per request, so `metaclaw team …` takes effect without a restart.
    this.members = new MemberDirectory(this.db);
    this.auth = new ProxyAuth(values['proxy.api_key'], this.members, values['proxy.allowed_origins']);
    this.addRoutes(memoryRoutes(personalMemoryApi(this.memory), values['memory.scope'], adminToken));

    this.scheduler = schedulerEnabled(options.config)
      ? new Scheduler({
          state: new SchedulerStateStore(this.db),
          settings: schedulerSettings(options.config),
          activity: this.conversation.activity,
          logger: this.logger.child({ part: 'scheduler' }),
        })
      : undefined;

    this.engine = engineSettings
      ? new RlEngine({
          db: this.db,
          logger: this.logger.child({ part: 'rl-train' }),
          settings: engineSettings,
          buffer: this.rl.training,
          queueForTeacher: (limit) => this.rl.buffer.queueForTeacher(limit),
          readyCount: () => this.rl.readyCount(),
          skillGeneration: () => this.skills.history.generation,
          window: this.scheduler,
          fallback: this.forwarder,
          enqueue: this.runner.enqueue,
        })
      : undefined;
    if (this.engine) this.runner.register(this.engine.handler());
    this.addRoutes(
      rlRoutes(
        this.engine ? { engine: this.engine } : { engine: undefined, reason: `the mode in effect is ${this.rl.mode.effective} (${this.rl.mode.reason})` },
        adminToken,
      ),
    );
    this.addRoutes(learningJobRoutes(this.queue, () => this.runner.wake()));
    this.addRoutes(logRoutes(paths.logFile));

    this.metrics = new ProxyMetrics(
      storeFigures(
        this.db,
        () => ({ ...this.queue.counts() }),
        () => this.skills.library.all().map((skill) => skill.category),
      ),
      (error) => this.logger.warn({ err: error }, 'metrics: could not read the store for a scrape'),
    );
    this.addRoutes(
      dashboardRoutes(
        sqliteDashboardReads({
          db: this.db,
          status: () => this.statusReport(),
          conversation: this.conversation,
          queue: this.queue,
          skills: this.skills,
          memory: this.memory,
          addedLatency: () => this.metrics.recentAddedLatency(),
        }),
        this.auth,
      ),
    );
  }

  get config(): LoadedConfig {
    return this.options.config;
  }

  /** An error that escaped every handler is logged, counted and shown in /status; the proxy keeps serving. */
  private readonly lastResort = (error: unknown): void => reportEscapedError(this.stats, this.logger, error);

  /** Adds a context provider (skills, memory). Call before start; order is injection order. */
  addContextProvider(provider: ContextProvider): void {
    this.providers.push(provider);
  }

  /** Adds HTTP routes (skills, memory, admin). Call before start. */
  addRoutes(group: (app: ProxyApp) => void): void {
    this.routeGroups.push(group);
  }

  async start(): Promise<{ url: string }> {
    const { values, paths } = this.options.config;
    refuseIfRunning(paths.pidFile);
    this.skills.open({ watch: true });
    // Read now, not by the first request that needs it (≈0.1 s).
    warmGlossary(this.memory.crossLingualLanguages());
    // Memory units are indexed with it when written (≈0.05 s to read): not by the first write on this thread.
    thesaurus();
    // Memory recall looks up a query's similar words (≈0.01 s to read): not the first recall.
    similarWords();
    this.context = new ContextPlanner(this.providers, this.logger, values['max_context_tokens']);
    const deps = servingDeps(this, this.context, {
      routeGroups: this.routeGroups,
      health: this.health,
      ...(this.engine ? { policy: this.engine.policyUpstream } : {}),
    });
    const server = createProxyServer(deps);
    await startServing(server, this.options.config, this.startedAt, this.lastResort, () => (this.server = server));
    this.startTurnWriter();
    await this.recoverJournal();
    this.runner.start();
    // The backend opens in the background: until it is ready the normal upstream serves every turn.
    this.engine?.start();
    this.sweeper.start();
    this.scheduleMaintenance();
    // Probes (keyboard, calendar) run in the background; serving never waits for them.
    this.scheduler?.start();
    for (const warning of this.options.config.warnings) this.logger.warn(warning);
    const url = `http://${values['proxy.host'].includes(':') ? `[${values['proxy.host']}]` : values['proxy.host']}:${values['proxy.port']}`;
    const mode = this.rl.mode;
    this.logger.info({ url, mode: mode.effective, upstream: describeTarget(this.forwarder.mainTarget), version: VERSION }, 'MetaClaw proxy listening');
    // `metaclaw start` also warns (printed and logged) when the configured mode cannot run as configured.
    this.logger.info({ configured: mode.configured, effective: mode.effective, backend: mode.backend, rl_samples: mode.recording }, `mode: ${mode.reason}`);
    this.logRetrieval();
    void this.probeEmbeddings();
    return { url };
  }

  /**
   * Probes the provider's embeddings endpoint once, in the background (serving never waits for
   * it), stores what it found for the next start and `doctor`, and switches skills and memory to
   * the mode it decides when that differs from the one they started with.
   */
  private async probeEmbeddings(): Promise<void> {
    const env = this.options.env ?? process.env;
    const probe = await probeProviderEmbeddings(this.options.config, env, 'start', this.probing.signal);
    if (this.probing.signal.aborted) return;
    try {
      saveProbe(this.db, probe);
    } catch (error) {
      this.logger.warn({ err: error }, 'could not store the embeddings probe');
    }
    const before = this.retrieval;
    this.retrieval = retrievalModes(this.options.config, env, probe);
    const { skills, memory } = this.retrieval;
    if (skills.mode !== before.skills.mode || skills.embedding.model !== before.skills.embedding.model)
      this.skills.useRetrieval(skillsMode(skills), skills.embedding);
    if (memory.mode !== before.memory.mode || memory.embedding.model !== before.memory.embedding.model) this.memory.useRetrieval(memory.mode, memory.embedding);
    this.logRetrieval();
  }

  private logRetrieval(): void {
    const { skills, memory } = this.retrieval;
    this.logger.info({ skills: describeRetrieval(skills), memory: describeRetrieval(memory) }, `retrieval: skills ${skills.mode}, memory ${memory.mode}`);
  }

  /** Stops accepting, lets running streams finish (up to proxy.shutdown_timeout_seconds), closes the database. */
  stop(reason = 'stop requested'): Promise<void> {
    this.stopping ??= this.shutdown(reason);
    return this.stopping;
  }

  private async shutdown(reason: string): Promise<void> {
    const { values } = this.options.config;
    this.logger.info({ reason }, 'shutting down');
    this.probing.abort();
    this.scheduler?.stop();
    if (this.maintenanceTimer) clearInterval(this.maintenanceTimer);
    if (this.server)
      await closeServer(this.server, this.stats, values['proxy.shutdown_timeout_seconds'] * 1000, async () => {
        this.logger.warn({ active: this.stats.active }, 'cutting requests still running at the shutdown deadline');
        // Each client is told, in its own API's error shape, instead of seeing a stream that just stops.
        this.forwarder.abortInFlight(
          `MetaClaw is shutting down: the request was cut after proxy.shutdown_timeout_seconds (${values['proxy.shutdown_timeout_seconds']} s).`,
        );
        const flushed = Date.now() + 1_000;
        while (this.stats.active > 0 && Date.now() < flushed) await sleep(10);
      });
    this.afterServing.runAll();
    await this.conversation.drain();
    await Promise.allSettled([...this.pendingRecords.values()]);
    this.conversation.closeJournal();
    this.health.stop();
    this.sweeper.stop();
    this.skills.close();
    await this.engine?.stop();
    await this.runner.stop();
    await this.checkpointer.stop();
    try {
      this.db.close();
    } catch (error) {
      this.logger.error({ err: error }, 'closing the database failed');
    }
    await endServing(this.options.config, this.lastResort, this.logger);
  }

  /** Turns answered by an earlier run that stopped before recording them (killed, crashed) are recorded now. */
  private async recoverJournal(): Promise<void> {
    try {
      const { recovered, skipped } = await this.conversation.recoverJournal(turnFromJournal);
      if (recovered > 0)
        this.logger.info({ turns: recovered, already_recorded: skipped }, 'recorded turns an earlier run had answered but not recorded (turn journal)');
    } catch (error) {
      this.logger.error({ err: error }, 'could not read the turn journal; its files are kept for the next start');
    }
  }

  /** Turn records are written on their own thread, off the request path (runtime/turn-writer-worker.ts). */
  private startTurnWriter(): void {
    const { values, paths } = this.options.config;
    // Compiled, the worker sits beside this module as .js; run from source (tsx), as .ts.
    const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
    const data: Omit<TurnWriterData, 'segmentGeneration'> = {
      databasePath: paths.database,
      maxAttempts: values['learning.max_attempts'],
      settings: this.recording,
      checkpoints: this.checkpointer.settings,
    };
    this.checkpointer.handOff();
    this.conversation.startWriterThread(
      new URL(`./turn-writer-worker${extension}`, import.meta.url),
      { ...data },
      {
        enqueued: () => this.runner.wake(),
        triggerFailed: (trigger, message) => this.runner.triggerFailed(trigger, new Error(message)),
        died: (error) => {
          this.logger.error({ err: error }, 'the turn writer thread stopped; turns are written on the main thread from now on');
          // Its WAL checkpoints went with it: they get a thread of their own.
          this.checkpointer.start();
        },
        checkpoint: (event) => this.checkpointer.report(event),
        sendFailed: (error) => this.logger.error({ err: error }, 'turns could not be handed to the turn writer thread; they were written on the main thread'),
      },
    );
  }

  statusReport() {
    const { values } = this.options.config;
    const runner = this.runner.snapshot();
    const spend = this.budget.summary();
    const sessions = this.conversation.counts();
    return {
      ok: true,
      version: VERSION,
      pid: process.pid,
      mode: this.rl.mode.effective,
      mode_configured: this.rl.mode.configured,
      mode_reason: this.rl.mode.reason,
      started_at: new Date(this.startedAt).toISOString(),
      uptime_seconds: Math.round((Date.now() - this.startedAt) / 1000),
      listen: { host: values['proxy.host'], port: values['proxy.port'] },
      auth_required: values['proxy.api_key'] !== '',
      upstream: describeTarget(this.forwarder.mainTarget),
      fallbacks: this.targets.slice(1).map(describeTarget),
      requests: this.stats.snapshot(),
      sessions: { total: sessions.sessions, open: sessions.openSessions, turns: sessions.turns },
      store: { ...this.health.status(), checkpoints: this.checkpointer.status(), recording: this.conversation.recordingCounts() },
      queue: this.queue.counts(),
      learning: {
        paused: runner.pausedReason !== undefined,
        paused_reason: runner.pausedReason ?? null,
        running: runner.running,
        completed: runner.completed,
        failed: runner.failed,
        dead_lettered: runner.deadLettered,
        trigger_failures: runner.triggerFailures,
        spend: {
          tokens_today: spend.tokensToday,
          tokens_total: spend.tokensTotal,
          calls_today: spend.callsToday,
          calls_total: spend.callsTotal,
          daily_budget: this.budget.dailyLimit,
          by_kind_today: spend.byKindToday,
        },
        last_errors: runner.lastErrors,
      },
      context: { providers: this.context?.providerNames ?? [], failures: this.context?.failures ?? 0, trimmed: this.context?.trimmed ?? 0 },
      skills: { ...this.skills.status(), retrieval: describeRetrieval(this.retrieval.skills) },
      memory: { ...this.memory.status(), retrieval: describeRetrieval(this.retrieval.memory) },
      team: { members: this.members.list().length, shared_scope: SHARED_SCOPE, shared_memories: this.memory.store.stats(SHARED_SCOPE).active },
      scheduler: this.scheduler?.status() ?? { enabled: false, reason: schedulerOffReason(this.options.config) },
      rl: { ...this.rl.report(), training: this.engine?.report() ?? null },
      config: { file: this.options.config.file, loaded: this.options.config.fileExists, warnings: this.options.config.warnings },
    };
  }

  /** Retention: old turn bodies and finished jobs are dropped once a day (summaries stay). */
  private scheduleMaintenance(): void {
    const run = () => {
      try {
        const days = this.options.config.values['store.payload_retention_days'];
        if (days > 0) {
          // In short transactions, with requests served between them.
          this.conversation.prunePayloads(Date.now() - days * 86_400_000).then(
            (removed) => removed > 0 && this.logger.info({ removed }, 'pruned turn bodies past retention'),
            (error: unknown) => this.health.report('maintenance', error) || this.logger.error({ err: errorMessage(error) }, 'maintenance failed'),
          );
        }
        this.queue.pruneDone(Date.now() - 30 * 86_400_000);
        if (this.options.config.values['memory.enabled']) this.memory.scheduleHousekeeping();
      } catch (error) {
        if (!this.health.report('maintenance', error)) this.logger.error({ err: errorMessage(error) }, 'maintenance failed');
      }
    };
    run();
    this.maintenanceTimer = setInterval(run, 86_400_000);
    this.maintenanceTimer.unref();
  }
}
