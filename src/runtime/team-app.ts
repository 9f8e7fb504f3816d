import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import { hostname } from 'node:os';
import { maskDatabaseUrl, resolveUpstreams, type LoadedConfig, type UpstreamTarget } from '../config/index.js';
import { ContextPlanner, type ContextProvider } from '../context/index.js';
import { dashboardRoutes } from '../dashboard/index.js';
import { teamDashboardReads } from '../dashboard/team-reads.js';
import { RemoteConversation, SpooledRecorder, TurnJournal } from '../conversation/index.js';
import { EmbeddingClient } from '../embeddings/index.js';
import { ConfigError, errorMessage } from '../errors.js';
import type { Logger } from '../logging/index.js';
import { ProxyMetrics, teamStoreFigures } from '../metrics/index.js';
import {
  AdminToken,
  AfterServing,
  createProxyServer,
  memoryRoutes,
  notServedRoutes,
  learningJobRoutes,
  logRoutes,
  rlRoutes,
  ProxyAuth,
  ProxyStats,
  teamSkillsRoutes,
  turnFromJournal,
} from '../proxy/index.js';
import type { QueueCounts } from '../learning/index.js';
import { SHARED_SCOPE } from '../memory/index.js';
import { configuredMirrorRetrieval, type SkillMirror } from '../skills/mirror.js';
import type { SkillVectors } from '../skills/vectors.js';
import { SkillsContextProvider } from '../skills/provider.js';
import { StoreHealth } from '../store/index.js';
import {
  isUnreachable,
  describeStoreError,
  openPool,
  PgConversationReads,
  PgJobQueue,
  PgMemberDirectory,
  PgMemoryApi,
  PgMemoryVectors,
  pgEmbedHandler,
  enableVectorsIfInstalled,
  type VectorSupport,
  PgLearningBudget,
  PgMemoryContextProvider,
  PgSkillProposals,
  PgSkillStore,
  pgHousekeepingHandler,
  pgReindexHandler,
  pgMemoryJobHandlers,
  pgMemorySearchKeysHandler,
  PgMemorySearch,
  type PgSkillKeys,
  pgSkillEvolveHandler,
  pgSkillSearchKeysHandler,
  PgUserLanguages,
  queueSkillSearchKeys,
  queueTeamReindex,
  scheduleTeamHousekeeping,
  PgTurnSink,
  pgRecordingListeners,
  postgresSchemaVersion,
  schemaMismatch,
  SessionPlacements,
  type SkillSubscription,
  followTeamSkills,
} from '../store/postgres/index.js';
import { MemberCache, TeamLearningRunner } from '../team/index.js';
import { glossaryLanguages, similarWords, thesaurus, warmGlossary } from '../text/index.js';
import { CredentialMemory, UpstreamForwarder } from '../upstream/index.js';
import { VERSION } from '../version.js';
import { closeServer, describeTarget, endServing, refuseIfRunning, runtimeLogger, startServing, reportEscapedError, servingDeps } from './serving.js';
import { teamRlRoutes } from '../proxy/team-rl-routes.js';
import { TeamRl } from '../team/rl.js';
import { recordingSettings } from './recording.js';
import { embedsMemory, forwarderOptions, memorySettings, skillsSettings } from './settings.js';
import { describeRetrieval, skillsMode, teamSkillsRetrieval, type RetrievalDecision } from './retrieval-mode.js';
import type { RuntimeOptions } from './app.js';

/** How often a node re-reads the team's members (a new, removed or rotated key takes effect within this). */
const MEMBERS_REFRESH_MS = 1_000;
/** How often a node makes sure today's memory housekeeping is queued (a day's job is queued once for the team). */
const HOUSEKEEPING_CHECK_MS = 60 * 60_000;
/** How often /status's team queue counts are re-read. */
const QUEUE_COUNTS_REFRESH_MS = 5_000;
/** The longest a statement of this node's writes may run: a slow store never holds a turn record for long. */
const STATEMENT_TIMEOUT_MS = 5_000;
/** The longest start waits for memory recall to be warmed before serving. */
const WARM_MEMORY_MAX_MS = 2_000;
/** The longest to wait for a connection: an unreachable store is noticed fast. */
const CONNECT_TIMEOUT_MS = 2_000;

/**
 * One node of a team: the proxy serving from the team store (PostgreSQL) that many nodes share.
 * Forwarding never waits for the store. On the request path a node reads only what it keeps in
 * memory (members, the skills mirror kept in step by LISTEN/NOTIFY, standing memory rules) plus
 * one memory recall bounded by a short timeout; turns are journaled on this machine and written
 * to the store by a spool that rides out outages. Learning jobs are queued in the store with each
 * turn, and any node runs them (TeamLearningRunner).
 */
export class TeamRuntime {
  readonly logger: Logger;
  readonly stats = new ProxyStats();
  readonly forwarder: UpstreamForwarder;
  readonly targets: UpstreamTarget[];
  private readonly credentials = new CredentialMemory();
  private readonly url: string;
  private readonly pool: ReturnType<typeof openPool>;
  private readonly members: MemberCache;
  private readonly directory: PgMemberDirectory;
  private readonly skillStore: PgSkillStore;
  private readonly proposals: PgSkillProposals;
  private readonly mirror: SkillMirror;
  /** The team's skill search keys, indexed with the mirror's skills. */
  private readonly skillKeys: PgSkillKeys;
  private housekeepingTimer: NodeJS.Timeout | undefined;
  private readonly subscription: SkillSubscription;
  private readonly memoryProvider: PgMemoryContextProvider | undefined;
  private readonly recorder: SpooledRecorder;
  private readonly queue: PgJobQueue;
  private readonly budget: PgLearningBudget;
  private readonly runner: TeamLearningRunner;
  readonly conversation: RemoteConversation;
  private readonly reads: PgConversationReads;
  private readonly placements: SessionPlacements;
  private readonly memoryApi: PgMemoryApi | undefined;
  private readonly rl: TeamRl;
  private vectorSupport: VectorSupport | undefined;
  /** Memory vectors in pgvector: this node's when memory.embedding is configured; used once start finds pgvector installed. */
  private readonly vectors: PgMemoryVectors | undefined;
  /** Skills by keyword, or with embeddings when skills.embedding.* is set (a node does not probe). */
  private readonly skillRetrieval: RetrievalDecision;
  /** The mirror's skill vectors, in memory; undefined when skills are found by keyword. */
  private skillVectors: SkillVectors | undefined;
  readonly auth: ProxyAuth;
  readonly metrics: ProxyMetrics;
  readonly afterServing: AfterServing;
  readonly pendingRecords = new Map<string, Promise<void>>();
  private readonly providers: ContextProvider[] = [];
  private readonly startedAt = Date.now();
  private context: ContextPlanner | undefined;
  private server: Server | undefined;
  private membersTimer: NodeJS.Timeout | undefined;
  private queueTimer: NodeJS.Timeout | undefined;
  /** The team queue's counts as last read (every few seconds, off the request path); null until read. */
  private queueCounts: QueueCounts | null = null;
  private membersError: string | null = null;
  private stopping: Promise<void> | undefined;

  constructor(readonly options: RuntimeOptions) {
    const { values, paths } = options.config;
    this.url = values['store.url'];
    if (!this.url) throw new ConfigError('The team runtime needs store.url (or METACLAW_DATABASE_URL, or --store).');
    if (values['proxy.api_key'] === '')
      throw new ConfigError(
        'A node of a team store needs the proxy key (the owner and the management routes use it): set METACLAW_PROXY_API_KEY or proxy.api_key in config.yaml.',
      );
    this.logger = runtimeLogger(options.config, options.foreground);
    this.afterServing = new AfterServing(this.logger);
    this.pool = openPool(this.url, { statementTimeoutMs: STATEMENT_TIMEOUT_MS, connectTimeoutMs: CONNECT_TIMEOUT_MS, max: 8 });
    this.targets = resolveUpstreams(options.config, options.env ?? process.env);
    this.forwarder = new UpstreamForwarder(this.targets, forwarderOptions(options.config), this.logger, this.credentials);

    this.directory = new PgMemberDirectory(this.pool);
    this.members = new MemberCache();
    this.auth = new ProxyAuth(values['proxy.api_key'], this.members, values['proxy.allowed_origins']);

    const skills = skillsSettings(options.config);
    this.skillStore = new PgSkillStore(this.pool);
    this.proposals = new PgSkillProposals(this.pool, this.skillStore);
    const followed = followTeamSkills(this.url, this.pool, this.skillStore, {
      applicationName: 'metaclaw-skills',
      logger: this.logger.child({ part: 'skills' }),
    });
    this.skillKeys = followed.keys;
    this.mirror = followed.mirror;
    this.subscription = followed.subscription;
    this.skillRetrieval = teamSkillsRetrieval(options.config);
    if (values['skills.enabled']) {
      // In memory, refreshed as the mirror changes (its first fill included): a skill not embedded yet is found by keywords.
      const { retriever, vectors } = configuredMirrorRetrieval(
        this.mirror,
        { ...skills, retrievalMode: skillsMode(this.skillRetrieval) },
        this.skillRetrieval.mode === 'keyword' ? undefined : this.skillRetrieval.embedding,
        this.logger.child({ part: 'skills' }),
      );
      this.skillVectors = vectors;
      this.providers.push(
        new SkillsContextProvider(retriever, { maxTokens: skills.maxTokens, fullBodyTopN: skills.fullBodyTopN }, () => this.mirror.generation),
      );
    }
    const memory = memorySettings(options.config);
    this.vectors = embedsMemory(memory)
      ? new PgMemoryVectors(this.pool, new EmbeddingClient(memory.embedding), this.logger.child({ part: 'memory' }))
      : undefined;
    this.memoryProvider = values['memory.enabled']
      ? new PgMemoryContextProvider({
          url: this.url,
          settings: { topK: memory.topK, maxTokens: memory.maxTokens, coreMaxTokens: memory.coreMaxTokens, minRelevance: memory.minRelevance },
          logger: this.logger.child({ part: 'memory' }),
          ...(this.vectors ? { vectors: this.vectors, retrievalMode: memory.retrievalMode } : {}),
        })
      : undefined;
    if (this.memoryProvider) this.providers.push(this.memoryProvider);

    const instanceId = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
    this.queue = new PgJobQueue(this.pool, instanceId, values['learning.max_attempts']);
    this.memoryApi = values['memory.enabled']
      ? new PgMemoryApi(
          this.pool,
          this.logger.child({ part: 'memory' }),
          { queue: this.queue, settings: memory },
          this.vectors ? { store: this.vectors, queue: this.queue, mode: memory.retrievalMode } : undefined,
        )
      : undefined;
    this.budget = new PgLearningBudget(this.pool, values['learning.daily_token_budget'], instanceId);
    this.runner = new TeamLearningRunner(this.queue, this.budget, this.logger.child({ part: 'learning' }), {
      concurrency: values['learning.concurrency'],
      leaseMs: values['learning.lease_seconds'] * 1000,
      isOutage: isUnreachable,
      storeDown: () => this.recorder.status().degraded,
      yieldTo: { activity: () => this.stats.requests + this.stats.active, quietMs: 150, maxDeferMs: 2_000 },
    });
    const recording = recordingSettings(options.config);
    const journal = new TurnJournal(paths.journalDir);
    const hooks = {
      enqueued: () => this.runner.wake(),
      failed: (trigger: string, error: unknown) => this.logger.error({ err: error, trigger }, 'learning trigger failed; the turn is recorded without it'),
    };
    const sink = new PgTurnSink(this.pool, { redactTurns: recording.redactTurns, listeners: pgRecordingListeners(this.queue, recording, hooks) });
    this.recorder = new SpooledRecorder({
      sink,
      journal,
      rebuild: turnFromJournal,
      isOutage: isUnreachable,
      logger: this.logger.child({ part: 'recording' }),
    });
    const reads = new PgConversationReads(this.pool, sink);
    this.reads = reads;
    this.placements = new SessionPlacements(this.url, this.pool, instanceId, (fingerprint, session) =>
      this.conversation.fingerprints.learn(fingerprint, session),
    );
    this.conversation = new RemoteConversation(reads, this.recorder, journal, this.logger, isUnreachable, (fingerprint, session) =>
      this.placements.announce(fingerprint, session),
    );
    const languages = new PgUserLanguages(this.pool);
    if (values['memory.enabled']) {
      const search = new PgMemorySearch(this.pool);
      this.runner.register(
        pgMemorySearchKeysHandler({
          pool: this.pool,
          queue: this.queue,
          search,
          languages,
          reads,
          settings: memory,
          mainUpstream: this.forwarder.mainTarget,
          credentials: this.credentials,
        }),
      );
      this.runner.register(pgHousekeepingHandler(this.pool, search, memory));
      this.runner.register(pgReindexHandler(this.queue, search));
    }
    if (values['memory.enabled'])
      for (const handler of pgMemoryJobHandlers({
        pool: this.pool,
        queue: this.queue,
        reads,
        settings: memory,
        mainUpstream: this.forwarder.mainTarget,
        credentials: this.credentials,
        // As a personal extraction's recall: English words are also searched in the languages the team writes.
        languages: () => glossaryLanguages(languages.current),
        logger: this.logger.child({ part: 'memory' }),
        ...(this.vectors ? { vectors: this.vectors } : {}),
      }))
        this.runner.register(handler);
    if (this.vectors) this.runner.register(pgEmbedHandler(this.vectors, this.queue));
    if (values['skills.enabled']) {
      const keyJobs = {
        pool: this.pool,
        queue: this.queue,
        keys: this.skillKeys,
        library: this.mirror,
        languages,
        reads,
        settings: skills,
        mainUpstream: this.forwarder.mainTarget,
        credentials: this.credentials,
      };
      this.runner.register(pgSkillSearchKeysHandler(keyJobs));
      // As the personal install does when its library changes (and at start, when the mirror first fills): one job for the team (its dedupe key).
      this.mirror.onChange(
        () => void queueSkillSearchKeys(keyJobs).catch((error: unknown) => this.logger.warn({ err: error }, 'skills: search keys could not be queued')),
      );
    }
    if (values['skills.enabled'])
      this.runner.register(
        pgSkillEvolveHandler({
          pool: this.pool,
          reads,
          skills: this.skillStore,
          proposals: this.proposals,
          library: this.mirror,
          settings: skills,
          mainUpstream: this.forwarder.mainTarget,
          credentials: this.credentials,
        }),
      );
    this.rl = new TeamRl({
      pool: this.pool,
      url: this.url,
      reads,
      config: options.config,
      mainUpstream: this.forwarder.mainTarget,
      credentials: this.credentials,
      logger: this.logger.child({ part: 'rl' }),
      generation: () => this.mirror.generation,
      fallback: this.forwarder,
      env: options.env ?? process.env,
      queue: this.queue,
      wake: () => this.runner.wake(),
    });
    for (const handler of this.rl.handlers()) this.runner.register(handler);
    this.mirror.onChange(() => void this.rl.skillsChanged());
    // Read from the team store at each scrape, so every node reports the team's figures.
    this.metrics = new ProxyMetrics(
      teamStoreFigures(
        this.pool,
        async () => ({ ...(await this.queue.counts()) }),
        () => this.mirror.all().map((skill) => skill.category),
      ),
      (error) => this.logger.warn({ err: error }, 'metrics: could not read a figure for a scrape'),
    );
  }

  get config(): LoadedConfig {
    return this.options.config;
  }

  /** A member's first request recalls as fast as any later one (PgMemoryContextProvider.warm); bounded, so a slow store cannot hold up serving. */
  private async warmMemory(): Promise<void> {
    if (!this.memoryProvider) return;
    const started = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, WARM_MEMORY_MAX_MS);
    });
    await Promise.race([this.memoryProvider.warm(), bound])
      .then(() => this.logger.debug({ ms: Date.now() - started }, 'memory recall warmed'))
      .catch((error: unknown) => this.logger.warn({ err: errorMessage(error) }, 'memory recall could not be warmed; the first request may go without recall'))
      .finally(() => clearTimeout(timer));
  }

  async start(): Promise<{ url: string }> {
    const { values, paths } = this.options.config;
    refuseIfRunning(paths.pidFile);
    await this.checkSchema();
    this.vectorSupport = await enableVectorsIfInstalled(this.pool, this.vectors);
    // Units stored while no node embedded them (an import, keyword-only nodes) are embedded now, in the background.
    if (this.vectors?.enabled) await this.vectors.queueEmbed(this.queue, this.pool, 2_000);
    // A node learns who may use it and what the team knows once before serving; after that an outage only makes it stale.
    await this.refreshMembers();
    await this.subscription.start();
    // The library may have moved on while this node was down: older samples leave the trainable buffer.
    await this.rl.skillsChanged();
    await this.memoryProvider?.start();
    await this.placements.start();
    // Read now, not by the first request that needs them.
    warmGlossary(['zh', 'ja']);
    thesaurus();
    similarWords();
    await this.warmMemory();
    this.context = new ContextPlanner(this.providers, this.logger, values['max_context_tokens']);
    const deps = servingDeps(this, this.context, {
      routeGroups: [
        ...(this.memoryApi ? [memoryRoutes(this.memoryApi, values['memory.scope'], AdminToken.ensure(paths.adminToken))] : []),
        teamSkillsRoutes({ library: this.mirror, store: this.skillStore, proposals: this.proposals, refresh: () => this.subscription.catchUp() }),
        teamRlRoutes(this.rl),
        dashboardRoutes(this.dashboardReads(), this.auth),
        rlRoutes(
          this.rl.training
            ? { engine: this.rl.training }
            : { engine: undefined, reason: `the mode in effect is ${this.rl.describeMode().effective} (${this.rl.describeMode().reason})` },
          AdminToken.ensure(paths.adminToken),
        ),
        learningJobRoutes(this.queue, () => this.runner.wake()),
        logRoutes(paths.logFile),
        notServedRoutes(
          this.memoryApi ? NOT_SERVED : [{ path: '/v1/memory', why: 'memory is turned off on this node (memory.enabled: false)' }, ...NOT_SERVED],
        ),
      ],
      health: new StoreHealth(this.logger),
      ...(this.rl.training ? { policy: this.rl.training.policyUpstream } : {}),
    });
    const server = createProxyServer(deps);
    await startServing(server, this.options.config, this.startedAt, this.lastResort, () => (this.server = server));
    const recovered = await this.conversation.recoverJournal(turnFromJournal);
    if (recovered > 0) this.logger.info({ turns: recovered }, 'recorded turns an earlier run had answered but not stored (turn journal)');
    this.runner.start();
    this.rl.start();
    if (values['memory.enabled']) {
      void this.scheduleHousekeeping();
      // Entries older nodes indexed with other bundled words are rewritten with this node's (memory-reindex.ts).
      void queueTeamReindex(this.pool, this.queue)
        .then((job) => job !== undefined && this.runner.wake())
        .catch((error: unknown) => this.logger.warn({ err: errorMessage(error) }, 'memory.reindex could not be queued'));
      this.housekeepingTimer = setInterval(() => void this.scheduleHousekeeping(), HOUSEKEEPING_CHECK_MS);
      this.housekeepingTimer.unref();
    }
    void this.refreshQueueCounts();
    this.queueTimer = setInterval(() => void this.refreshQueueCounts(), QUEUE_COUNTS_REFRESH_MS);
    this.queueTimer.unref();
    this.membersTimer = setInterval(() => void this.refreshMembers(), MEMBERS_REFRESH_MS);
    this.membersTimer.unref();
    const url = `http://${values['proxy.host'].includes(':') ? `[${values['proxy.host']}]` : values['proxy.host']}:${values['proxy.port']}`;
    this.logger.info({ url, store: maskDatabaseUrl(this.url), version: VERSION }, 'MetaClaw proxy listening (team store)');
    return { url };
  }

  /** The dashboard over the team store: the proxy key sees the whole team; a member key is refused (member-access.ts). */
  private dashboardReads() {
    return teamDashboardReads({
      pool: this.pool,
      status: () => this.statusReport(),
      conversation: this.reads,
      queue: this.queue,
      budget: this.budget,
      skills: {
        enabled: this.options.config.values['skills.enabled'],
        review: skillsSettings(this.options.config).review,
        mirror: this.mirror,
        store: this.skillStore,
        proposals: this.proposals,
      },
      memory: this.memoryApi,
      addedLatency: () => this.metrics.recentAddedLatency(),
      windows: (from, to, limit) => this.rl.schedulerWindows(from, to, limit),
    });
  }

  /** The schema must be this build's: `metaclaw store migrate` brings it there (a node never migrates by itself). */
  private async checkSchema(): Promise<void> {
    let version: number;
    try {
      version = await postgresSchemaVersion(this.pool);
    } catch (error) {
      throw new ConfigError(`Cannot start a team node: ${describeStoreError(error, this.url)}`);
    }
    const mismatch = schemaMismatch(version, maskDatabaseUrl(this.url));
    if (mismatch) throw new ConfigError(mismatch);
  }

  private async refreshMembers(): Promise<void> {
    try {
      this.members.replace(await this.directory.rows());
      this.membersError = null;
    } catch (error) {
      // The last copy stands: keys keep working through an outage.
      if (this.membersError === null) this.logger.warn({ err: errorMessage(error) }, 'could not read the team members; the last copy stands');
      this.membersError = errorMessage(error);
      if (!this.members.ready) throw new ConfigError(`Cannot start a team node: ${describeStoreError(error, this.url)}`);
    }
  }

  /** Today's memory housekeeping, queued once for the team whichever node asks first (an outage: the next hour's try). */
  private async scheduleHousekeeping(): Promise<void> {
    try {
      if ((await scheduleTeamHousekeeping(this.pool, this.queue)) !== undefined) this.runner.wake();
    } catch (error) {
      this.logger.debug({ err: errorMessage(error) }, 'memory housekeeping could not be queued; trying again within the hour');
    }
  }

  private async refreshQueueCounts(): Promise<void> {
    try {
      this.queueCounts = await this.queue.counts();
      await this.rl.refresh();
    } catch {
      // The store is out of reach: /status says so (store.degraded); the last counts stand.
    }
  }

  /** An error that escaped every handler (a database connection's late 'error' event) is logged and counted; the node keeps serving. */
  private readonly lastResort = (error: unknown): void => reportEscapedError(this.stats, this.logger, error);

  stop(reason = 'stop requested'): Promise<void> {
    this.stopping ??= this.shutdown(reason);
    return this.stopping;
  }

  private async shutdown(reason: string): Promise<void> {
    const { values } = this.options.config;
    this.logger.info({ reason }, 'shutting down');
    if (this.membersTimer) clearInterval(this.membersTimer);
    if (this.queueTimer) clearInterval(this.queueTimer);
    if (this.housekeepingTimer) clearInterval(this.housekeepingTimer);
    if (this.server)
      await closeServer(this.server, this.stats, values['proxy.shutdown_timeout_seconds'] * 1000, () =>
        this.forwarder.abortInFlight('MetaClaw is shutting down: the request was cut after proxy.shutdown_timeout_seconds.'),
      );
    this.afterServing.runAll();
    await Promise.allSettled([...this.pendingRecords.values()]);
    await this.runner.stop();
    await this.rl.stop();
    await this.recorder.drain();
    await this.subscription.stop();
    await this.placements.stop();
    await this.memoryProvider?.stop();
    this.memoryApi?.close();
    await this.pool.end().catch(() => undefined);
    await endServing(this.options.config, this.lastResort, this.logger);
  }

  /** This node's share of the team's learning (the queue and the budget are the team's: see `metaclaw store status`). */
  private learningStatus() {
    const runner = this.runner.snapshot();
    return {
      running_here: true,
      queue: this.queueCounts,
      kinds: this.runner.kinds(),
      paused: runner.pausedReason !== undefined,
      paused_reason: runner.pausedReason ?? null,
      running: runner.running,
      completed: runner.completed,
      duplicates: runner.duplicates,
      leases_lost: runner.leasesLost,
      failed: runner.failed,
      dead_lettered: runner.deadLettered,
      last_errors: runner.lastErrors,
    };
  }

  statusReport() {
    const { values } = this.options.config;
    const spool = this.recorder.status();
    return {
      ok: true,
      version: VERSION,
      pid: process.pid,
      mode: this.rl.describeMode().effective,
      mode_configured: values['mode'],
      mode_reason: this.rl.describeMode().reason,
      started_at: new Date(this.startedAt).toISOString(),
      uptime_seconds: Math.round((Date.now() - this.startedAt) / 1000),
      listen: { host: values['proxy.host'], port: values['proxy.port'] },
      auth_required: true,
      upstream: describeTarget(this.forwarder.mainTarget),
      fallbacks: this.targets.slice(1).map(describeTarget),
      requests: this.stats.snapshot(),
      store: {
        engine: 'postgres',
        url: maskDatabaseUrl(this.url),
        degraded: spool.degraded || this.membersError !== null || !this.subscription.listening,
        session_placement: { listening: this.placements.listening, unsent: this.placements.unsent },
        recording: spool,
        members_error: this.membersError,
        search: this.vectors?.ready ? values['memory.retrieval_mode'] : 'keyword',
        vectors: this.vectorsNotice(),
      },
      learning: this.learningStatus(),
      rl: this.rl.cachedReport(),
      scheduler: this.rl.schedulerStatus(),
      context: { providers: this.context?.providerNames ?? [], failures: this.context?.failures ?? 0, trimmed: this.context?.trimmed ?? 0 },
      skills: {
        count: this.mirror.size,
        generation: this.mirror.generation,
        listening: this.subscription.listening,
        embedded: this.skillVectors?.count ?? 0,
        retrieval: describeRetrieval(this.skillRetrieval),
      },
      memory: this.memoryProvider?.status() ?? { enabled: false },
      team: { members: this.members.list().length, shared_scope: SHARED_SCOPE },
      config: { file: this.options.config.file, loaded: this.options.config.fileExists, warnings: this.options.config.warnings },
    };
  }

  /** What /status says of memory vectors on this node: in use, or why recall is keyword-only. */
  private vectorsNotice(): string {
    const support = this.vectorSupport;
    if (!support) return 'keyword-only recall: whether the team store has pgvector could not be read at start';
    if (support.state !== 'installed') return support.notice;
    if (!this.vectors)
      return `keyword-only recall on this node: pgvector ${support.version} is installed, but memory.embedding.api_base and memory.embedding.model are not set here (or memory.retrieval_mode is keyword)`;
    const model = this.vectors.model;
    if (this.vectors.ready)
      return `vectors in use: pgvector ${support.version}, ${model!.model} (${model!.dimensions} dimensions), ${this.options.config.values['memory.retrieval_mode']} recall`;
    if (model) return `keyword-only recall on this node: the store's vectors are of ${model.model}, this node embeds with ${this.vectors.client.model}`;
    return `vectors starting: pgvector ${support.version} is installed and ${this.vectors.client.model} embeds memories; keyword-only until the first vectors are stored`;
  }
}

/**
 * What a node refuses with 501 (notServedRoutes) rather than a bare 404: the admin routes are the
 * personal install's (`metaclaw store` and `metaclaw team` manage the team store).
 */
const NOT_SERVED = [{ path: '/v1/admin' }];
