import pg from 'pg';
import type { ContextProvider, ContextRequest, ContextSection } from '../../context/index.js';
import { errorMessage } from '../../errors.js';
import { silentLogger, type Logger } from '../../logging/index.js';
import { chooseCore } from '../../memory/core-selection.js';
import {
  memorySection,
  mergeRecalls,
  scopeCore,
  SectionCache,
  sectionRecall,
  withoutReplaced,
  type MemoryInjectionSettings,
  type ScopeCore,
} from '../../memory/provider.js';
import { MemoryRetriever, type MemoryRetrievalMode } from '../../memory/retrieval.js';
import { SHARED_SCOPE, type MemoryUnit } from '../../memory/types.js';
import type { GlossaryLanguage } from '../../text/index.js';
import { MEMORY_CHANNEL } from '../postgres-schema.js';
import { ChannelListener, type ChannelListenerOptions } from './channel-listener.js';
import { hearConnectionErrors } from './connect.js';
import { MemorySearchTimeout, PgMemorySearch } from './memory-search.js';
import type { PgMemoryVectors } from './memory-vectors.js';
import { knownScopeSize, pgRecallStore } from './recall-store.js';
import { readScopeRules } from './memory-units.js';
import { ReplayedReads } from './replayed-reads.js';

/** How long a request waits for memory from PostgreSQL before going on without recall. */
export const DEFAULT_MEMORY_TIMEOUT_MS = 100;
/** After a failed read, requests skip PostgreSQL this long: a down store must not cost each request a connect attempt. */
export const DEFAULT_MEMORY_BACKOFF_MS = 1_000;
/** A scope's rules older than this are re-read in the background when a request uses them: a lost notification is not forever. */
export const DEFAULT_RULES_MAX_AGE_MS = 60_000;

export interface PgMemoryProviderOptions {
  /** The team store (postgres://…). The provider opens its own small pool and one listening connection. */
  readonly url: string;
  readonly settings: MemoryInjectionSettings;
  /** The longest a request waits for memory (rules not yet loaded, recall); default 100 ms. */
  readonly timeoutMs?: number;
  /** How long requests skip PostgreSQL after a failure; default 1 s. */
  readonly backoffMs?: number;
  /** Rules held longer than this are re-read, off the request path, by the next request of their scope; default 60 s. */
  readonly rulesMaxAgeMs?: number;
  /** Connections for request-path reads (default 4). */
  readonly poolSize?: number;
  /** Languages besides English the members write in (English questions also search translations), as MemoryRetriever takes them. */
  readonly languages?: () => readonly GlossaryLanguage[];
  readonly logger?: Logger;
  readonly listener?: ChannelListenerOptions;
  /**
   * The store's memory vectors (pgvector), when this node uses them: recall then fuses the query's
   * nearest units with the keyword results as `retrievalMode` says, as a personal install does.
   */
  readonly vectors?: PgMemoryVectors;
  /** memory.retrieval_mode (default hybrid); keyword when there are no vectors. */
  readonly retrievalMode?: MemoryRetrievalMode;
}

/** What /status shows of team memory on the request path. */
export interface PgMemoryStatus {
  /** Whether change notifications are being heard (caches are trusted only while they are). */
  readonly listening: boolean;
  readonly reconnects: number;
  /** Sections made (not from the cache). */
  readonly requests: number;
  /** Requests that went on without recall because PostgreSQL took longer than timeoutMs. */
  readonly timeouts: number;
  /** Requests whose reads failed (PostgreSQL down, a statement error). */
  readonly failures: number;
  /** Requests that did not try PostgreSQL, within the backoff after a failure. */
  readonly skipped: number;
  readonly lastError: string | undefined;
}

/** A scope's rules as last read, and which change they are of. */
interface ScopeState {
  core: ScopeCore | undefined;
  /** Units in the scope (all statuses): whether `team` is read at all, and the N of its IDF. */
  size: number;
  /** Bumped by every notification for the scope: rules read before it are stale. */
  version: number;
  /** The version `core` was read at (-1: never read). */
  readAt: number;
  /** When `core` was read (Date.now()), and what it was: a re-read finding other rules drops the scope's sections. */
  loadedAt: number;
  fingerprint: string;
  loading: Promise<void> | undefined;
}

/** The scope `warm` recalls in: no member's (scopes of members are `user:…`, the team's is SHARED_SCOPE). */
const WARM_SCOPE = 'metaclaw:warm-up';
const TIMED_OUT = Symbol('timed out');
const FAILED = Symbol('failed');

/**
 * The memory part of each request's context when memory lives in the team store (PostgreSQL): the
 * same section, for the same units, as MemoryContextProvider makes from SQLite — it runs the same
 * core choice, recall and rendering (src/memory), over reads of PostgreSQL (ReplayedReads).
 *
 * A slow or down database never holds a request: the standing rules of each scope are kept in
 * memory (read on first use, re-read when they change), and a request waits at most `timeoutMs`
 * for what it lacks. Past that, or when PostgreSQL fails, it gets the rules this node holds
 * (possibly none) and no recall, and the miss is counted (`status`). After a failure, requests skip
 * PostgreSQL for `backoffMs` instead of each paying a connection attempt.
 *
 * Other nodes and the CLI write memory too: a trigger on memory_units notifies MEMORY_CHANNEL with
 * the scope (migration 22); the provider listens on a dedicated connection and drops that scope's
 * sections and re-reads its rules. When that connection is re-established every cache is dropped:
 * notifications sent while it was down were missed. A notification lost otherwise is bounded by
 * `rulesMaxAgeMs`: older rules are re-read in the background by the next request of their scope.
 */
export class PgMemoryContextProvider implements ContextProvider {
  readonly name = 'memory';
  private readonly pool: pg.Pool;
  private readonly search: PgMemorySearch;
  private readonly listener: ChannelListener;
  private readonly scopes = new Map<string, ScopeState>();
  private readonly sections = new SectionCache();
  private readonly timeoutMs: number;
  private readonly backoffMs: number;
  private readonly rulesMaxAgeMs: number;
  private readonly poolSize: number;
  private backoffUntil = 0;
  private counts = { requests: 0, timeouts: 0, failures: 0, skipped: 0 };
  private lastError: string | undefined;

  constructor(private readonly options: PgMemoryProviderOptions) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_MEMORY_TIMEOUT_MS;
    this.backoffMs = options.backoffMs ?? DEFAULT_MEMORY_BACKOFF_MS;
    this.rulesMaxAgeMs = options.rulesMaxAgeMs ?? DEFAULT_RULES_MAX_AGE_MS;
    this.poolSize = options.poolSize ?? 4;
    this.pool = new pg.Pool({
      connectionString: options.url,
      application_name: 'metaclaw-memory',
      max: this.poolSize,
      // A statement still running well after its request stopped waiting is of no use to anyone (the
      // slack lets the request's own deadline come first: that is what it counts as a timeout).
      statement_timeout: 2 * Math.max(this.timeoutMs, 50),
      // A connection may take longer than one request waits (a busy server forks a backend): the
      // request stops waiting at its deadline, and the connection, once made, serves the next ones.
      connectionTimeoutMillis: Math.max(this.timeoutMs * 20, 2_000),
      idleTimeoutMillis: 60_000,
    });
    // A connection whose server went away, idle or checked out: the read on it fails and is counted.
    hearConnectionErrors(this.pool);
    this.search = new PgMemorySearch(this.pool);
    this.listener = new ChannelListener(
      options.url,
      MEMORY_CHANNEL,
      { notified: (scope) => this.changed(scope), listening: () => this.changedAll() },
      { applicationName: 'metaclaw-memory-listen', logger: options.logger, ...options.listener },
    );
  }

  /**
   * Starts listening for changes. An unreachable store does not fail it: listening is retried in
   * the background, and requests meanwhile get what the store can answer (see `provide`).
   */
  async start(): Promise<void> {
    await this.listener
      .start()
      .catch((error: unknown) => this.options.logger?.warn({ err: errorMessage(error) }, 'cannot listen for team memory changes yet; retrying'));
  }

  /**
   * Does a fresh node's cold work before its first request: opens the pool's connections and runs
   * one recall on each, through the request's own code, in a scope no member has. Measured on a
   * fresh node (2 busy cores): the first recall took 160–200 ms against a 100 ms budget, most of
   * it first-run work no later recall repeats (connections, each connection's first statements,
   * the ranking's lazily read word data); the second took ~30 ms. Failures only mean the first
   * request pays for it.
   */
  async warm(): Promise<void> {
    const request: ContextRequest = {
      format: 'openai',
      body: {},
      userRequest: { text: 'What did we decide about the meeting schedules?', messageIndex: 0, isReset: false, earlier: '' },
      turnType: 'main',
      scope: WARM_SCOPE,
      sessionId: WARM_SCOPE,
    };
    // Concurrently: one after another, the pool would hand the same connection to each.
    await Promise.all(Array.from({ length: this.poolSize }, () => this.make(request))).finally(() => this.scopes.delete(WARM_SCOPE));
  }

  async stop(): Promise<void> {
    await this.listener.stop();
    await this.pool.end().catch(() => undefined);
  }

  status(): PgMemoryStatus {
    return { listening: this.listener.listening, reconnects: this.listener.reconnects, ...this.counts, lastError: this.lastError };
  }

  provide(request: ContextRequest): ContextSection | undefined | Promise<ContextSection | undefined> {
    this.rereadIfOld(request.scope);
    if (request.scope !== SHARED_SCOPE) this.rereadIfOld(SHARED_SCOPE);
    const cached = this.sections.lookup(request);
    if (cached.found) return cached.section;
    if (Date.now() < this.backoffUntil) {
      this.counts.skipped++;
      return this.heldRules(request);
    }
    this.counts.requests++;
    let waiting = true;
    const made = this.make(request).then(
      (section) => cached.remember(section),
      (error: unknown) => {
        // A read failing after the request stopped waiting (its statement timed out too) still backs off, counted once as a timeout.
        this.failed(error, waiting);
        return FAILED;
      },
    );
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<typeof TIMED_OUT>((resolve) => {
      timer = setTimeout(() => resolve(TIMED_OUT), this.timeoutMs);
    });
    return Promise.race([made, deadline]).then((outcome) => {
      clearTimeout(timer);
      waiting = false;
      if (typeof outcome !== 'symbol') return outcome;
      // Past the wait, the reads go on: rules read late are held for the next request.
      if (outcome === TIMED_OUT) this.counts.timeouts++;
      return this.heldRules(request);
    });
  }

  /** The full section: rules (read if this node lacks them) and recall, for each of the request's scopes. */
  private async make(request: ContextRequest): Promise<ContextSection | undefined> {
    const { settings } = this.options;
    const [own, team] = await Promise.all([this.rules(request.scope), request.scope === SHARED_SCOPE ? undefined : this.rules(SHARED_SCOPE)]);
    const scopes: Array<[string, ScopeState]> = [[request.scope, own]];
    // The shared scope is read beside the caller's own once it holds anything, as on SQLite.
    if (team && team.size > 0) scopes.push([SHARED_SCOPE, team]);
    const reads = new ReplayedReads();
    const store = pgRecallStore(reads, this.search, this.pool);
    for (const [scope, state] of scopes) knownScopeSize(reads, scope, state.size);
    const budget = { maxTokens: settings.coreMaxTokens, minRelevance: settings.minRelevance };
    const text = request.userRequest.text;
    const recalling = text !== '' && settings.topK > 0;
    const { vectors } = this.options;
    // Vector neighbours are read from this provider's pool, under its short statement timeout, like every other recall read.
    const retriever = vectors
      ? new MemoryRetriever(
          store,
          vectors.forRecall(reads, this.pool),
          this.options.logger ?? silentLogger(),
          this.options.retrievalMode ?? 'hybrid',
          this.options.languages,
        )
      : new MemoryRetriever(store, undefined, this.options.logger ?? silentLogger(), 'keyword', this.options.languages);
    const [cores, recalls] = await Promise.all([
      Promise.all(scopes.map(([scope, state]) => reads.run(() => chooseCore(store, scope, state.core!, text, budget)))),
      Promise.all(
        scopes.map(async ([scope, state]) =>
          recalling ? withoutReplaced(await reads.run(() => retriever.recall(sectionRecall(request, scope, settings))), state.core!.replaced) : [],
        ),
      ),
    ]);
    return memorySection(cores.flat(), recalling ? mergeRecalls(recalls, settings.topK) : [], request.scope, settings);
  }

  /** What a request gets without PostgreSQL: the rules this node holds, chosen without reads (no recall). Never cached. */
  private heldRules(request: ContextRequest): ContextSection | undefined {
    const { settings } = this.options;
    const held: MemoryUnit[] = [];
    const scopes = request.scope === SHARED_SCOPE ? [request.scope] : [request.scope, SHARED_SCOPE];
    for (const scope of scopes) {
      const state = this.scopes.get(scope);
      if (!state?.core || (scope === SHARED_SCOPE && scope !== request.scope && state.size === 0)) continue;
      // No term weights without the database: rules that overflow the budget are chosen by pin, importance and recency.
      const offline = { termWeights: () => new Map<string, { idf: number; held: boolean }>(), scopeSize: () => state.size };
      held.push(
        ...chooseCore(offline, scope, state.core, request.userRequest.text, { maxTokens: settings.coreMaxTokens, minRelevance: settings.minRelevance }),
      );
    }
    return memorySection(held, [], request.scope, settings);
  }

  /** A scope's current rules: read (or re-read after a change) when this node's are stale. */
  private async rules(scope: string): Promise<ScopeState> {
    const state = this.state(scope);
    // Another change may land while reading: read until the rules are of the latest one.
    while (state.readAt !== state.version) await this.load(scope, state);
    return state;
  }

  private load(scope: string, state: ScopeState): Promise<void> {
    if (state.loading) return state.loading;
    const version = state.version;
    state.loading = readScopeRules(this.pool, scope)
      .then((rules) => {
        const fingerprint = JSON.stringify([rules.core, [...rules.replacedTurns], rules.size]);
        // A re-read of rules no notification said were stale found them changed (a notification was
        // lost): sections made with the old ones go too.
        if (state.readAt === version && fingerprint !== state.fingerprint) this.sections.changed(scope);
        // Even when a change came meanwhile, these are newer than what was held: keep them, stale.
        state.core = scopeCore(rules.core, rules.replacedTurns);
        state.size = rules.size;
        state.readAt = version;
        state.loadedAt = Date.now();
        state.fingerprint = fingerprint;
      })
      .finally(() => {
        state.loading = undefined;
      });
    return state.loading;
  }

  private state(scope: string): ScopeState {
    let state = this.scopes.get(scope);
    if (!state) {
      state = { core: undefined, size: 0, version: 0, readAt: -1, loadedAt: 0, fingerprint: '', loading: undefined };
      this.scopes.set(scope, state);
    }
    return state;
  }

  /** A scope's units changed somewhere: its sections go and its rules are re-read now, off the request path. */
  private changed(scope: string): void {
    this.sections.changed(scope);
    const state = this.scopes.get(scope);
    if (!state) return;
    state.version++;
    this.refresh(scope);
  }

  /** Listening (again): whatever was notified while not listening was missed, so nothing held can be trusted. */
  private changedAll(): void {
    this.sections.clear();
    for (const [scope, state] of this.scopes) {
      state.version++;
      this.refresh(scope);
    }
  }

  /**
   * Rules held past `rulesMaxAgeMs` are re-read in the background: the request goes on with them.
   * Notifications keep the rules current; this only bounds how long a lost one leaves them stale.
   */
  private rereadIfOld(scope: string): void {
    const state = this.scopes.get(scope);
    if (!state || state.loading || state.readAt !== state.version || Date.now() - state.loadedAt < this.rulesMaxAgeMs) return;
    if (Date.now() < this.backoffUntil) return;
    this.load(scope, state).catch((error: unknown) => this.failed(error, false));
  }

  private refresh(scope: string): void {
    if (Date.now() < this.backoffUntil) return;
    this.rules(scope).catch((error: unknown) => this.failed(error, false));
  }

  private failed(error: unknown, counted = true): void {
    // Out of time on the database's side (a statement, or every connection busy) is slowness, not an outage.
    if (counted) this.counts[outOfTime(error) ? 'timeouts' : 'failures']++;
    this.lastError = errorMessage(error);
    this.backoffUntil = Date.now() + this.backoffMs;
    this.options.logger?.warn({ err: this.lastError }, 'team memory unavailable; requests go on with the rules held');
  }
}

/** The search's own time-out, or a statement PostgreSQL cancelled at its statement_timeout (SQLSTATE 57014). */
function outOfTime(error: unknown): boolean {
  return error instanceof MemorySearchTimeout || (error as { code?: unknown } | null)?.code === '57014';
}
