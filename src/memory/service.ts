import type { UpstreamTarget } from '../config/index.js';
import type { ConversationStore, UserLanguages } from '../conversation/index.js';
import { EmbeddingClient, type EmbeddingEndpoint } from '../embeddings/index.js';
import {
  callPromptForJson,
  LearningMisconfiguredError,
  parsePayload,
  resolveLearningTarget,
  type Enqueue,
  type JobContext,
  type JobHandler,
  type LearningEndpointConfig,
} from '../learning/index.js';
import type { Logger } from '../logging/index.js';
import { loadPrompt } from '../prompts/index.js';
import { StateStore, type Db } from '../store/index.js';
import { SharedMemoryRevision } from './shared-revision.js';
import { glossaryLanguages, redactSecrets, type GlossaryLanguage } from '../text/index.js';
import { indexWordsVersion } from './keyword-index.js';
import type { CredentialMemory } from '../upstream/index.js';
import { extractorOutputSchema, type MemoryCandidate } from './extraction/schema.js';
import { housekeep, type HousekeepingReport } from './housekeeping.js';
import { MemoryContextProvider } from './provider.js';
import { EXTRACT_JOB, RECORD_TURN_JOB } from './recording.js';
import { extractPayload, recordTurnPayload, SEARCH_KEYS_JOB, SEARCH_KEYS_LANGUAGES } from './recording-rules.js';
import { MemoryRetriever, type MemoryRetrievalMode, type RecallRequest } from './retrieval.js';
import { languageName, languagesOf } from './languages.js';
import {
  announcedSubject,
  appliesRule,
  contradicts,
  detectRules,
  instanceTemplate,
  namesIn,
  readRule,
  replacing,
  ruleSubject,
  sameSubject,
  type RuleSubject,
  type StatedRule,
} from './rules.js';
import { MemoryStore, type MemoryPatch, type Scrubber } from './store.js';
import { escapeMemoryText } from './render.js';
import { rawContent, turnPreparer, type IngestTurn, type PreparedTurn } from './raw-turns.js';
import { inSlices } from '../shared/event-loop.js';
import type { MemoryDraft, MemoryHit, MemoryType, MemoryUnit } from './types.js';
import { eraseStoredVectors, MemoryVectors } from './vectors.js';
import { askMemorySearchKeys, MemorySearchKeys, UNITS_PER_JOB } from './search-keys.js';
import { InternalError, MemoryError } from '../errors.js';

export const HOUSEKEEPING_JOB = 'memory.housekeeping';
export const EMBED_JOB = 'memory.embed';
export { SEARCH_KEYS_JOB, SEARCH_KEYS_LANGUAGES } from './recording-rules.js';
/** Rewrites the index entries of stored units after an upgrade brought other glossary or thesaurus words. */
export const REINDEX_JOB = 'memory.reindex';
/** Units re-indexed per transaction: a few tens of milliseconds, so requests and the writer thread get their turn between. */
const REINDEX_BATCH = 200;

export interface MemorySettings {
  enabled: boolean;
  defaultScope: string;
  topK: number;
  maxTokens: number;
  coreMaxTokens: number;
  minRelevance: number;
  retrievalMode: MemoryRetrievalMode;
  flushEveryNTurns: number;
  autoExtract: boolean;
  /** memory.search_keys: the keys job runs (see MemoryRecordingSettings) */
  searchKeys: boolean;
  manualTrigger: boolean;
  ignoreTurnType: boolean;
  autoConsolidate: boolean;
  retentionDays: number;
  maxUnitsPerScope: number;
  embedding: EmbeddingEndpoint;
  extractor: Omit<LearningEndpointConfig, 'name'>;
}

/** What memory reads of the conversation record (and scrubs when forgetting). */
export type MemoryConversation = Pick<ConversationStore, 'getTurnSummary' | 'lastModelOf' | 'latestModel' | 'scrubTexts' | 'scrubInjected'>;

/**
 * Records outside memory and the conversation that quote session text word for word (the skill
 * evolution log and proposals): a forgotten memory's texts are scrubbed from them too.
 */
export interface QuotedTexts {
  scrubTexts(texts: readonly string[]): number;
}

/** Recall of the units extraction is shown (see `MemoryDependencies.recall`). */
export type RelatedRecall = (request: RecallRequest) => Promise<MemoryHit[]>;

export interface MemoryDependencies {
  db: Db;
  logger: Logger;
  settings: MemorySettings;
  conversation?: MemoryConversation;
  quotes?: QuotedTexts;
  /**
   * Where extraction recalls the units it shows the extractor. Default: this database's own recall.
   * A team node runs jobs in a workspace holding only part of the team's memory, so it recalls from
   * the whole team store instead (store/postgres/memory-jobs.ts).
   */
  recall?: RelatedRecall;
  mainUpstream?: UpstreamTarget;
  credentials?: CredentialMemory;
  /** The languages the user writes in: English questions also search memories in them, by translation. */
  languages?: Pick<UserLanguages, 'current' | 'refresh'>;
  /**
   * For searches someone waits on (`metaclaw memory search`, MCP), not a proxy's: how long a search
   * waits for its query's vector, and who hears when keywords alone answered.
   */
  waitedSearch?: { embedTimeoutMs: number; keywordsOnly: (why: string) => void };
}

export { rawContent, type IngestTurn } from './raw-turns.js';

/** A turn written: its unit's id (empty when it was already stored) and the turn id it keeps. */
interface StoredTurn {
  id: string;
  turnId: string;
  stored: boolean;
}

const EXTRACT_TURN_LIMIT = 40;
/** Importance a rule gains each time the user states or applies it again. */
const RESTATED_IMPORTANCE = 0.01;
/** Share of an instance's subject a rule must hold to count as the rule it applies. */
const APPLIES = 0.5;

/** The item scoring highest, if any scores above 0 (and at least `least`). */
function highestScoring<T>(items: readonly T[], score: (item: T) => number, least = Number.MIN_VALUE): T | undefined {
  let found: { item: T; score: number } | undefined;
  for (const item of items) {
    const value = score(item);
    if (value >= least && (!found || value > found.score)) found = { item, score: value };
  }
  return found?.item;
}

/**
 * What an instance is about without the things it names: "改 src/app.py 之前要先备份成 src/app.py.bak"
 * is about "<file>.bak", which a rule in English ("make a .bak copy") shares.
 */
function instanceSubject(sentence: string): RuleSubject {
  return ruleSubject(instanceTemplate(sentence));
}

/** Whether a subject says nothing its `whole` does not. */
function isPartOf(part: ReadonlySet<string>, whole: ReadonlySet<string>): boolean {
  for (const term of part) if (!whole.has(term)) return false;
  return part.size > 0;
}

/**
 * State key: the bundled words (glossary and thesaurus versions) the index entries of stored units
 * were written with. Its progress key holds that version and the last rowid re-indexed for it, so an
 * interrupted re-index goes on where it stopped.
 */
const GLOSS_INDEX_STATE = 'memory.gloss_index';
const GLOSS_INDEX_PROGRESS_STATE = 'memory.gloss_index.progress';

/**
 * Long-term memory: raw turns kept as searchable episodic units, extraction of durable units by an
 * LLM (with a deterministic detector for standing instructions), recall and the core block for
 * each main turn, housekeeping, and real forgetting.
 */
export class MemoryService {
  readonly store: MemoryStore;
  readonly retriever: MemoryRetriever;
  readonly provider: MemoryContextProvider;
  private vectorStore: MemoryVectors | undefined;
  private readonly searchKeys: MemorySearchKeys;
  private readonly state: StateStore;
  private enqueue: Enqueue | undefined;

  constructor(private readonly deps: MemoryDependencies) {
    const { db, logger, settings } = deps;
    this.store = new MemoryStore(db);
    this.state = new StateStore(db);
    this.searchKeys = new MemorySearchKeys(db);
    this.store.useSearchKeys(this.searchKeys);
    // A new database is indexed with these words from its first unit on; an older one is re-indexed by a job (`attachQueue`).
    if (this.state.get(GLOSS_INDEX_STATE) !== indexWordsVersion() && this.store.isEmpty()) this.state.set(GLOSS_INDEX_STATE, indexWordsVersion());
    const embeddings = embeddingClient(settings, deps.waitedSearch?.embedTimeoutMs);
    this.vectorStore = embeddings ? new MemoryVectors(db, this.store, embeddings, logger, this.vectorOptions()) : undefined;
    if (!this.vectorStore) eraseStoredVectors(db, this.store);
    this.retriever = new MemoryRetriever(
      this.store,
      this.vectorStore,
      logger,
      settings.retrievalMode,
      () => this.crossLingualLanguages(),
      deps.waitedSearch?.keywordsOnly,
    );
    const revision = new SharedMemoryRevision(this.state, this.store);
    this.provider = new MemoryContextProvider(
      this.store,
      this.retriever,
      {
        topK: settings.topK,
        maxTokens: settings.maxTokens,
        coreMaxTokens: settings.coreMaxTokens,
        minRelevance: settings.minRelevance,
      },
      () => revision.look(),
    );
  }

  get settings(): MemorySettings {
    return this.deps.settings;
  }

  get vectors(): MemoryVectors | undefined {
    return this.vectorStore;
  }

  /** Switches recall to `mode` with `embedding` (the proxy's start-up probe of the provider's embeddings endpoint decides). */
  useRetrieval(mode: MemoryRetrievalMode, embedding: EmbeddingEndpoint): void {
    this.deps.settings = { ...this.deps.settings, retrievalMode: mode, embedding };
    const embeddings = embeddingClient(this.deps.settings, this.deps.waitedSearch?.embedTimeoutMs);
    // A new store keeps the stored vectors when the model is the same, and drops them when it differs.
    if (embeddings) this.vectorStore = new MemoryVectors(this.deps.db, this.store, embeddings, this.deps.logger, this.vectorOptions());
    this.retriever.useEmbeddings(embeddings ? mode : 'keyword', embeddings ? this.vectorStore : undefined);
    if (embeddings && mode !== 'keyword') this.enqueue?.(EMBED_JOB, {}, { dedupeKey: EMBED_JOB, rerunIfRunning: true });
  }

  /** A process whose searches someone waits on only searches: it waits longer for a query's vector and never drops vectors. */
  private vectorOptions(): ConstructorParameters<typeof MemoryVectors>[4] {
    const waited = this.deps.waitedSearch;
    return waited ? { queryTimeoutMs: waited.embedTimeoutMs, searchOnly: true } : {};
  }

  /** The glossary languages besides English the user writes (so their memories are in them). */
  crossLingualLanguages(): GlossaryLanguage[] {
    return glossaryLanguages(this.deps.languages?.current ?? []);
  }

  /** The runner's enqueue, so API ingestion can queue extraction. */
  attachQueue(enqueue: Enqueue): void {
    this.enqueue = enqueue;
    // Keyword retrieval never reads vectors, so nothing is embedded for it; the vectors are still
    // opened, so that forgetting a unit removes the vector an earlier mode gave it.
    this.store.onChange(() => {
      if (this.vectors && this.settings.retrievalMode !== 'keyword') enqueue(EMBED_JOB, {}, { dedupeKey: EMBED_JOB, delayMs: 500, rerunIfRunning: true });
      this.queueSearchKeys();
    });
    this.queueSearchKeys();
    // Once per database and bundled words: units indexed before (without glosses or related words, or older ones) gain these.
    // A job, not here: rewriting a large memory's index takes seconds, which neither start nor requests should wait for.
    if (this.state.get(GLOSS_INDEX_STATE) !== indexWordsVersion()) enqueue(REINDEX_JOB, {}, { dedupeKey: REINDEX_JOB });
  }

  handlers(): JobHandler[] {
    return [
      { kind: RECORD_TURN_JOB, usesLlm: false, run: async (payload) => this.recordTurn(parsePayload(recordTurnPayload, payload, RECORD_TURN_JOB)) },
      { kind: EXTRACT_JOB, usesLlm: true, run: (payload, context) => this.extract(parsePayload(extractPayload, payload, EXTRACT_JOB), context) },
      {
        kind: HOUSEKEEPING_JOB,
        usesLlm: false,
        run: async (_payload, context) => void context.logger.info({ report: this.housekeep() }, 'memory housekeeping done'),
      },
      { kind: EMBED_JOB, usesLlm: true, run: (_payload, context) => this.embed(context) },
      { kind: SEARCH_KEYS_JOB, usesLlm: true, run: (_payload, context) => this.writeSearchKeys(context) },
      { kind: REINDEX_JOB, usesLlm: false, run: (_payload, context) => this.reindexWords(context) },
    ];
  }

  /**
   * Rewrites every unit's index entry with the bundled words of this version, a batch at a time,
   * yielding between batches; resumes after the last batch an interrupted run finished. Units
   * stored meanwhile are indexed with these words already.
   */
  private async reindexWords(context: JobContext): Promise<void> {
    const version = indexWordsVersion();
    if (this.state.get(GLOSS_INDEX_STATE) === version) return;
    const progress = /^(.*):(\d+)$/.exec(this.state.get(GLOSS_INDEX_PROGRESS_STATE) ?? '');
    let after = progress?.[1] === version ? Number(progress[2]) : 0;
    let units = 0;
    for (;;) {
      if (context.signal.aborted) throw new MemoryError('re-indexing stopped; it goes on from here next time');
      const batch = this.store.reindexAfter(after, REINDEX_BATCH);
      if (!batch) break;
      units += batch.count;
      after = batch.last;
      this.state.set(GLOSS_INDEX_PROGRESS_STATE, `${version}:${after}`);
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.state.set(GLOSS_INDEX_STATE, version);
    context.logger.info({ units }, 'memory index entries rewritten with the bundled glossary and thesaurus');
  }

  /* ---------- raw turns ---------- */

  /** Stores a proxied turn's words as raw episodic units and captures the rules it states. */
  private recordTurn(payload: { turnId: string; sessionId: string; scope: string }): void {
    const conversation = this.deps.conversation;
    if (!conversation) throw new InternalError('recording turns needs the running proxy');
    const turn = conversation.getTurnSummary(payload.turnId);
    if (!turn) return; // pruned meanwhile
    const turns: IngestTurn[] = [];
    if (turn.query) turns.push({ role: 'user', content: turn.query, id: turn.id, timestamp: turn.started_at });
    if (turn.response_text)
      turns.push({ role: 'assistant', content: turn.response_text, id: turn.id, timestamp: turn.started_at + Math.round(turn.duration_ms ?? 0) });
    // An agent's tool loop sends the same user request with every step: keep it once per session.
    const fresh = turns.filter((item) => !this.store.hasRawInSession(payload.scope, payload.sessionId, item.role, rawContent(item.content)));
    this.storeTurns(payload.scope, payload.sessionId, fresh);
    this.maybeQueueExtraction(payload.scope, payload.sessionId);
  }

  /**
   * Keeps turns as raw episodic units (secrets redacted), idempotently by session and turn id, and
   * turns explicit rules the user states into standing instructions at once, word for word.
   */
  storeTurns(scope: string, sessionId: string, turns: readonly IngestTurn[]): StoredTurn[] {
    const prepare = turnPreparer(this.store, scope, sessionId, turns);
    const prepared = turns.map((_, index) => prepare(index));
    return this.store.batch(() => this.writeTurns(scope, sessionId, prepared));
  }

  /** Writes prepared turns (`turnPreparer`; undefined: nothing to keep) and captures the rules their user turns state; inside a `batch`. */
  private writeTurns(scope: string, sessionId: string, turns: ReadonlyArray<PreparedTurn | undefined>): StoredTurn[] {
    const results: StoredTurn[] = [];
    for (const turn of turns) {
      if (!turn) continue;
      const id = this.store.addPrepared(turn.unit, { rawKey: turn.rawKey });
      results.push({ id: id ?? '', turnId: turn.turnId, stored: id !== undefined });
      if (!id || turn.role !== 'user') continue;
      const stated = turn.rules ?? detectRules(turn.content, { previousReply: this.store.lastRawOfSession(sessionId, scope, 'assistant') });
      this.captureRules(scope, sessionId, turn.turnId, stated, turn.observedAt);
    }
    return results;
  }

  /**
   * Rules the deterministic detector found become core units, quoting the user exactly; a rule
   * said again, or applied to named things, strengthens the rule it repeats instead of adding one.
   */
  private captureRules(scope: string, sessionId: string, turnId: string, rules: readonly StatedRule[], observedAt: number): void {
    for (const stated of rules) {
      const draft: MemoryDraft = {
        scope,
        type: 'preference',
        content: stated.sentence,
        // Corrected after a failed answer: the user cares most about these.
        importance: stated.corrective ? 0.95 : 0.9,
        confidence: 0.9,
        core: true,
        origin: 'rule',
        observedAt,
        sourceSession: sessionId,
        sourceTurns: [turnId],
      };
      const same = this.store.findSameContent(scope, stated.sentence);
      if (same) this.store.addSources(same.id, [turnId], RESTATED_IMPORTANCE);
      else if (stated.kind === 'instance') this.captureInstance(draft);
      else this.addStandingInstruction(draft, stated.change ? 'replaces' : stated.reminder ? 'restates' : 'new', stated);
    }
  }

  /**
   * A rule stated for named things ("Before modifying day13/nginx.conf, create day13/nginx.conf.bak"):
   * a source of the general rule it applies; else kept aside (not core) until a second one of the
   * same form makes the general rule, in the user's words with the names as placeholders.
   */
  private captureInstance(draft: MemoryDraft): void {
    const template = instanceTemplate(draft.content);
    const general = this.bestRuleFor(draft.scope, instanceSubject(draft.content));
    if (general) {
      this.store.addSources(general.id, draft.sourceTurns ?? [], RESTATED_IMPORTANCE);
      return;
    }
    if (template !== draft.content && this.store.ruleInstances(draft.scope).some((unit) => instanceTemplate(unit.content) === template)) {
      this.addStandingInstruction({ ...draft, content: template }, 'new');
      return;
    }
    this.store.add({ ...draft, core: false, importance: 0.6 });
  }

  /** The standing instruction an instance applies, if one clearly does. */
  private bestRuleFor(scope: string, instance: RuleSubject): MemoryUnit | undefined {
    return highestScoring(this.store.coreUnits(scope), (unit) => appliesRule(ruleSubject(unit.content), instance), APPLIES);
  }

  /**
   * Adds a standing instruction. An earlier one about the same subject is superseded by it (linked,
   * never shown again), unless the new one only restates it: then the earlier one, in the words the
   * user first chose, gains the new source. Instances it generalises become its sources. A statement
   * older than the rule now in force never replaces it. `around` is what the message says besides
   * the rule, where the earlier rule is often named ("toasts are no longer for errors.").
   */
  private addStandingInstruction(
    draft: MemoryDraft,
    said: 'new' | 'replaces' | 'restates',
    around: { context: string; announcement: string } = { context: '', announcement: '' },
  ): MemoryUnit | undefined {
    let how = said;
    const rule = readRule(draft.content);
    const subject = rule.subject;
    const observedAt = draft.observedAt ?? Date.now();
    // Each rule in force is read once for every comparison with the new one.
    const rules = this.store.coreUnits(draft.scope).map((unit) => ({ unit, reading: readRule(unit.content) }));
    const related = rules.filter(({ reading }) => sameSubject(subject, reading.subject)).map(({ unit }) => unit);
    if (related.length > 0 && how !== 'replaces') {
      // About the same thing, said "again" or not, but naming something else for it (CSV before, .xlsx now,
      // the old one named around it): a replacement, not a restatement.
      const contextNames = namesIn(around.context);
      if (rules.some(({ unit, reading }) => related.includes(unit) && contradicts(reading, rule, contextNames) > 0)) how = 'replaces';
    }
    if (related.length === 0) {
      // A rule said to change replaces the one closest to it and to what the message says, even in other words;
      // without a word of change, the one it contradicts by naming something else for the same thing.
      let replaced: (typeof rules)[number] | undefined;
      if (how === 'replaces') {
        const announced = announcedSubject(rule, around.announcement);
        replaced = highestScoring(rules, ({ reading }) => replacing(reading, rule, announced));
      } else {
        const contextNames = namesIn(around.context);
        replaced = highestScoring(rules, ({ reading }) => contradicts(reading, rule, contextNames));
      }
      if (replaced) {
        related.push(replaced.unit);
        how = 'replaces';
      }
    }
    // What was said before the rule now in force (an older conversation imported late) never brings back what it replaced.
    const replaced = this.store.findReplacedRule(draft.scope, draft.content);
    const replacement = replaced?.supersededBy ? this.store.get(replaced.supersededBy) : undefined;
    if (related.some((unit) => unit.observedAt > observedAt) || (replacement && replacement.observedAt > observedAt)) return undefined;
    const restated = related.find((unit) => how === 'restates' || (how === 'new' && isPartOf(subject.terms, ruleSubject(unit.content).terms)));
    if (restated) return this.store.addSources(restated.id, draft.sourceTurns ?? [], RESTATED_IMPORTANCE);
    const instances = this.store.ruleInstances(draft.scope).filter((unit) => appliesRule(subject, instanceSubject(unit.content)) >= APPLIES);
    const sources = [...new Set([...instances.flatMap((unit) => unit.sourceTurns), ...(draft.sourceTurns ?? [])])];
    const added = this.store.add({ ...draft, sourceTurns: sources });
    if (!added) return undefined;
    for (const unit of [...related, ...instances]) this.store.supersede(unit.id, added.id);
    return added;
  }

  private maybeQueueExtraction(scope: string, sessionId: string): void {
    if (!this.settings.autoExtract || this.settings.manualTrigger || !this.enqueue) return;
    const pending = this.pendingUserTurns(scope, sessionId);
    if (pending >= this.settings.flushEveryNTurns) this.enqueue(EXTRACT_JOB, { sessionId, scope, final: false }, { dedupeKey: `${EXTRACT_JOB}:${sessionId}` });
  }

  private pendingUserTurns(scope: string, sessionId: string): number {
    return this.store.countUserRawTurnsOfSession(sessionId, scope, this.watermark(scope, sessionId));
  }

  /* ---------- extraction ---------- */

  private async extract(payload: { sessionId: string; scope: string; final: boolean }, context: JobContext): Promise<void> {
    const { scope, sessionId } = payload;
    const fresh = this.store.rawTurnsOfSession(sessionId, scope, this.watermark(scope, sessionId)).slice(-EXTRACT_TURN_LIMIT * 2);
    if (fresh.length === 0 && !payload.final) return;
    if (fresh.length === 0 && payload.final && this.hasSummary(scope, sessionId)) return;
    const target =
      this.deps.mainUpstream && this.deps.credentials
        ? resolveLearningTarget(
            { name: 'memory extractor', ...this.settings.extractor },
            this.deps.mainUpstream,
            this.deps.credentials,
            this.deps.conversation?.lastModelOf(sessionId),
          )
        : undefined;
    if (!target) throw new LearningMisconfiguredError('no model for the memory extractor: set memory.extractor_model or llm.model_id');
    const turnsText = fresh
      .map(
        (unit, index) =>
          `[turn ${index + 1}, ${new Date(unit.observedAt).toISOString().slice(0, 16).replace('T', ' ')}] ${unit.speaker}: ${unit.content.slice(0, 2_000)}`,
      )
      .join('\n');
    const related = await this.relatedUnits(
      scope,
      fresh
        .filter((unit) => unit.speaker === 'user')
        .map((unit) => unit.content)
        .join('\n'),
    );
    const prompt = loadPrompt('memory-extract');
    const values = {
      session_id: sessionId,
      scope,
      languages: this.userLanguages(
        scope,
        fresh.filter((unit) => unit.speaker === 'user').map((unit) => unit.content),
      ),
      turns: turnsText || '(no new turns)',
      existing:
        related.length > 0
          ? related.map((unit) => `- id ${unit.id} [${unit.type}${unit.core ? ', standing instruction' : ''}] ${unit.content}`).join('\n')
          : '(none)',
      summary_schema: payload.final ? ', "session_summary": "…"' : '',
      summary_request: payload.final
        ? '\nThis conversation has ended: also return "session_summary", 2–5 sentences on what the user worked on and what was decided.'
        : '',
    };
    const { value } = await callPromptForJson(
      context,
      target,
      prompt,
      values,
      { name: 'memory_candidates', schema: extractorOutputSchema },
      { maxTokens: 2_000, temperature: 0 },
    );
    const offered = new Set(related.map((unit) => unit.id));
    const applied = this.applyCandidates(scope, sessionId, value.memories, fresh, offered);
    if (payload.final && value.session_summary) this.storeSummary(scope, sessionId, value.session_summary, fresh);
    const last = fresh.at(-1);
    if (last) this.state.set(watermarkKey(scope, sessionId), String(last.sequence));
    context.logger.info({ session: sessionId, scope, turns: fresh.length, ...applied }, 'memory extraction finished');
  }

  private applyCandidates(
    scope: string,
    sessionId: string,
    candidates: readonly MemoryCandidate[],
    turns: readonly MemoryUnit[],
    offered: ReadonlySet<string>,
  ): { added: number; updated: number; skipped: number } {
    const counts = { added: 0, updated: 0, skipped: 0 };
    for (const candidate of candidates) {
      const content = redactSecrets(candidate.content);
      const turn = candidate.turn ? turns[candidate.turn - 1] : undefined;
      const draft: MemoryDraft = {
        scope,
        type: candidate.type,
        content,
        searchKeys: candidate.search_keys,
        importance: candidate.importance,
        confidence: candidate.confidence,
        core: candidate.standing_instruction,
        origin: 'extractor',
        observedAt: turn?.observedAt ?? turns.at(-1)?.observedAt ?? Date.now(),
        sourceSession: sessionId,
        sourceTurns: turn ? turn.sourceTurns : [...new Set(turns.flatMap((unit) => unit.sourceTurns))].slice(-5),
      };
      const offeredUnit = (id: string | null | undefined) => (id && offered.has(id) ? this.store.get(id) : undefined);
      // Only an update replaces the memory it names (an add that names one leaves it be).
      const target = candidate.action === 'update' ? offeredUnit(candidate.target_id) : undefined;
      const same = this.store.findSameContent(scope, content);
      // A request for this task only is not memory, however it is worded.
      if (candidate.one_off || candidate.action === 'noop' || same) {
        // Said again: the rule it restates gains the turn as a source.
        const repeated = candidate.action === 'noop' ? offeredUnit(candidate.target_id) : undefined;
        const known = same ?? (repeated?.status === 'active' ? repeated : undefined);
        if (known?.core && turn && !candidate.one_off) this.store.addSources(known.id, turn.sourceTurns, RESTATED_IMPORTANCE);
        counts.skipped++;
        continue;
      }
      if (draft.core) {
        const merged = candidate.merges.map(offeredUnit).filter((unit) => unit?.status === 'active') as MemoryUnit[];
        const sources = [...new Set([...merged.flatMap((unit) => unit.sourceTurns), ...(draft.sourceTurns ?? [])])];
        // The detector may already hold this rule in the user's own words: keep that one, with this source.
        const subject = ruleSubject(content);
        const detected = this.store.coreUnits(scope).find((unit) => unit.origin === 'rule' && sameSubject(subject, ruleSubject(unit.content)));
        if (detected && !target && merged.length === 0) {
          this.store.addSources(detected.id, sources, RESTATED_IMPORTANCE);
          counts.skipped++;
          continue;
        }
        const added = this.addStandingInstruction({ ...draft, sourceTurns: sources }, target ? 'replaces' : 'new');
        // Paraphrases and per-instance copies it consolidates are superseded by it, and linked.
        if (added)
          for (const unit of [target, ...merged]) if (unit && unit.status === 'active' && unit.id !== added.id) this.store.supersede(unit.id, added.id);
        if (added && (target || merged.length > 0)) counts.updated++;
        else if (added) counts.added++;
        continue;
      }
      const added = this.store.add(draft);
      if (!added) continue;
      if (target && target.status === 'active') {
        this.store.supersede(target.id, added.id);
        counts.updated++;
      } else counts.added++;
    }
    return counts;
  }

  private storeSummary(scope: string, sessionId: string, summary: string, turns: readonly MemoryUnit[]): void {
    const previous = this.store.summariesOfSession(sessionId, scope).filter((unit) => unit.status === 'active');
    const added = this.store.add({
      scope,
      type: 'working_summary',
      content: summary,
      importance: 0.6,
      confidence: 0.8,
      origin: 'summary',
      observedAt: turns.at(-1)?.observedAt ?? Date.now(),
      sourceSession: sessionId,
      sourceTurns: [],
    });
    if (added) for (const unit of previous) this.store.supersede(unit.id, added.id);
  }

  private hasSummary(scope: string, sessionId: string): boolean {
    return this.store.summariesOfSession(sessionId, scope).length > 0;
  }

  /** Units the extractor is shown so it updates rather than repeats them (with embeddings, recall is async). */
  private async relatedUnits(scope: string, text: string): Promise<MemoryUnit[]> {
    const request = { scope, query: text.slice(-4_000), limit: 12, minRelevance: 0.2, excludeCore: false };
    const hits = await (this.deps.recall ? this.deps.recall(request) : this.retriever.recall(request));
    const units = hits.map((hit) => hit.unit).filter((unit) => unit.origin !== 'raw_turn');
    for (const core of this.store.coreUnits(scope)) if (!units.some((unit) => unit.id === core.id)) units.push(core);
    return units.slice(0, 20);
  }

  /**
   * The languages this user has been seen writing in (the scope's, kept in the state table, plus
   * these turns'), named for the extractor's search keys: a memory told in English is then found by
   * the question the user later asks in Chinese.
   */
  private userLanguages(scope: string, texts: readonly string[]): string {
    const key = languagesKey(scope);
    const known = (this.state.get(key) ?? '').split(',').filter(Boolean);
    const seen = [...new Set([...known, ...languagesOf(texts)])].sort();
    if (seen.join(',') !== known.join(',')) this.state.set(key, seen.join(','));
    return seen.length > 0 ? seen.map(languageName).join(', ') : 'English';
  }

  /** The sequence of the last raw turn extraction has read in this session. */
  private watermark(scope: string, sessionId: string): number {
    return Number(this.state.get(watermarkKey(scope, sessionId)) ?? '0');
  }

  private async embed(context: JobContext): Promise<void> {
    if (!this.vectors || this.settings.retrievalMode === 'keyword') return; // a job queued by an earlier run
    for (let round = 0; round < 20; round++) {
      const { embedded, tokens } = await this.vectors.embedPending(64, context.signal);
      if (tokens > 0) context.spend(tokens);
      if (embedded === 0) return;
    }
    // A large import goes on in a rerun of this job (which holds the key), not in one endless job.
    this.enqueue?.(EMBED_JOB, {}, { dedupeKey: EMBED_JOB, rerunIfRunning: true });
  }

  /* ---------- search keys ---------- */

  /** Queues the search keys job once the user's languages are known (the job finds what lacks keys in them). */
  private queueSearchKeys(): void {
    const { languages, mainUpstream } = this.deps;
    if (
      !this.settings.enabled ||
      !this.settings.searchKeys ||
      !languages ||
      !mainUpstream ||
      (languages.current.length === 0 && languages.refresh().length === 0)
    )
      return;
    this.enqueue?.(SEARCH_KEYS_JOB, {}, { dedupeKey: SEARCH_KEYS_JOB, delayMs: 2_000, rerunIfRunning: true });
  }

  /**
   * Writes search keys for the memory units that lack them in the languages the user writes (from
   * the recorded requests), a batch of units per call, and indexes each unit with its keys.
   */
  private async writeSearchKeys(context: JobContext): Promise<void> {
    const { conversation, mainUpstream, credentials, languages } = this.deps;
    // Queued before memory.search_keys was turned off: a no-op.
    if (!mainUpstream || !credentials || !languages || !this.settings.searchKeys) return;
    const seen = languages.refresh();
    // A main turn in another language queues this job again (MemoryRecording), as on the team store.
    this.state.set(SEARCH_KEYS_LANGUAGES, JSON.stringify(seen));
    if (seen.length === 0) return;
    const prompt = loadPrompt('memory-search-keys');
    const pending = this.searchKeys.pending(seen, prompt.version, UNITS_PER_JOB + 1);
    if (pending.length === 0) return;
    const target = resolveLearningTarget({ name: 'memory search keys', ...this.settings.extractor }, mainUpstream, credentials, conversation?.latestModel());
    if (!target) throw new LearningMisconfiguredError('no model for memory search keys: set memory.extractor_model or llm.model_id');
    const { written, asked: done } = await askMemorySearchKeys(context, target, prompt, pending);
    for (const { unit, language, keys } of written) this.searchKeys.save(unit.hash, language, keys, prompt.version, target.model);
    for (const unit of done) this.store.reindexUnit(unit.id);
    // This job holds the key while it runs: the enqueue asks it to run once more.
    if (pending.length > done.length) this.enqueue?.(SEARCH_KEYS_JOB, {}, { dedupeKey: SEARCH_KEYS_JOB, rerunIfRunning: true });
    context.logger.info({ units: done.length, languages: seen, more: pending.length > done.length }, 'memory search keys written');
  }

  /* ---------- the public API (HTTP and CLI) ---------- */

  /**
   * `POST /v1/memory/ingest`: turns stored at once as episodic units; extraction queued. The costly
   * part of each turn (redaction, index tokens, the rules it states: 60 % of the time for short
   * turns, 97 % for 3 KB ones) is prepared a slice of the event loop at a time, so the proxy keeps
   * answering; the write is then one transaction.
   */
  async ingest(
    scope: string,
    sessionId: string,
    turns: readonly IngestTurn[],
  ): Promise<{ stored: Array<{ id: string; turn_id: string }>; extraction_job: number | null }> {
    const prepare = turnPreparer(this.store, scope, sessionId, turns);
    const prepared: Array<PreparedTurn | undefined> = [];
    await inSlices(turns.length, (index) => prepared.push(prepare(index)));
    // All turns or none: a store busy at turn k answered 503 "nothing was changed" with k turns kept,
    // and the retry it invites stored them again (turn ids without the client's own end in the time).
    const stored = this.store.batch(() => this.writeTurns(scope, sessionId, prepared)).filter((item) => item.stored);
    let job: number | undefined;
    if (this.settings.autoExtract && this.enqueue)
      job = this.enqueue(EXTRACT_JOB, { sessionId, scope, final: false }, { dedupeKey: `${EXTRACT_JOB}:${sessionId}` });
    return { stored: stored.map((item) => ({ id: item.id, turn_id: item.turnId })), extraction_job: job ?? null };
  }

  search(request: { scope: string; query: string; limit: number; types?: MemoryType[]; includeSuperseded?: boolean }): MemoryHit[] | Promise<MemoryHit[]> {
    return this.retriever.recall({
      scope: request.scope,
      query: request.query,
      limit: request.limit,
      ...(request.types ? { types: request.types } : {}),
      includeInactive: request.includeSuperseded ?? false,
      minRelevance: 0.15,
      listing: true,
    });
  }

  add(draft: MemoryDraft): MemoryUnit {
    // Added by hand: a new rule on a subject replaces the one before.
    const unit = draft.core ? this.addStandingInstruction(draft, 'replaces') : this.store.add(draft);
    if (!unit) throw new MemoryError('the memory could not be stored', 'memory_not_stored');
    return unit;
  }

  update(id: string, patch: MemoryPatch): MemoryUnit | undefined {
    return this.store.update(id, patch);
  }

  /**
   * Replaces an active unit by a new one written by a person (`POST /v1/memory/{id}/supersede`): the
   * old unit is kept, marked superseded and linked to the new one, which keeps its scope, its sources
   * (so provenance survives) and, unless changed, its type, importance and flags. Undefined when the
   * old unit is missing; a MemoryError when it is no longer active.
   */
  supersede(id: string, replacement: { content: string } & MemoryPatch): { old: MemoryUnit; added: MemoryUnit } | undefined {
    const old = this.store.get(id);
    if (!old) return undefined;
    if (old.status !== 'active') throw new MemoryError(`memory ${id} is already superseded by ${old.supersededBy ?? 'another unit'}`, 'memory_not_active');
    // The new unit and the link to it land together: a crash between them would leave two active versions.
    return this.store.atomically(() => this.replaceWith(old, replacement));
  }

  private replaceWith(old: MemoryUnit, replacement: { content: string } & MemoryPatch): { old: MemoryUnit; added: MemoryUnit } {
    const added = this.store.add({
      scope: old.scope,
      type: replacement.type ?? old.type,
      content: replacement.content,
      importance: replacement.importance ?? old.importance,
      confidence: 1,
      core: replacement.core ?? old.core,
      pinned: replacement.pinned ?? old.pinned,
      origin: 'manual',
      sourceSession: old.sourceSession,
      sourceTurns: old.sourceTurns,
    });
    if (!added) throw new MemoryError('the memory could not be stored', 'memory_not_stored');
    this.store.supersede(old.id, added.id);
    return { old: this.store.get(old.id)!, added };
  }

  /** Forgets a unit for good; its text is also scrubbed from the turns it came from. */
  forget(id: string): MemoryUnit | undefined {
    const removed = this.scrubbing((scrub) => this.store.delete(id, scrub));
    if (removed) this.compact();
    return removed;
  }

  forgetScope(scope: string): number {
    const removed = this.scrubbing((scrub) => this.store.deleteScope(scope, scrub));
    for (const key of this.watermarkKeys(scope)) this.state.set(key, '0');
    this.compact();
    return removed;
  }

  /**
   * Runs a delete whose units' texts are scrubbed from their turns as each goes, and then, all
   * at once (a scope's units would rewrite the evolution log once each), from the records that
   * quote them; in one transaction, so no forgotten unit's text stays quoted in the database.
   */
  private scrubbing<T>(remove: (scrub: Scrubber) => T): T {
    return this.store.atomically(() => {
      const texts: string[] = [];
      const units: Array<{ id: string; texts: string[] }> = [];
      const removed = remove((turns, unitTexts, unitId) => {
        const rawTurns = this.scrub(turns, unitTexts);
        texts.push(...unitTexts);
        // As the injected block quoted it: on one line, tags escaped (render.ts). Raw turns that
        // quoted it were injected with its words too.
        const quoted = [...new Set([...unitTexts, ...unitTexts.map(escapeMemoryText)])];
        for (const id of [unitId, ...rawTurns]) units.push({ id, texts: quoted });
      });
      // Every turn it was injected into (a standing rule, a recalled memory) quotes it in the body sent upstream.
      if (units.length > 0) this.deps.conversation?.scrubInjected(units);
      if (texts.length > 0) this.deps.quotes?.scrubTexts(texts);
      return removed;
    });
  }

  housekeep(now = Date.now()): HousekeepingReport {
    const report = housekeep(this.store, {
      retentionDays: this.settings.retentionDays,
      maxUnitsPerScope: this.settings.maxUnitsPerScope,
      consolidate: this.settings.autoConsolidate,
      now,
    });
    if (report.deleted > 0) this.compact();
    return report;
  }

  /** Queues the daily housekeeping (the runtime calls this once a day). */
  scheduleHousekeeping(): void {
    this.enqueue?.(HOUSEKEEPING_JOB, {}, { dedupeKey: HOUSEKEEPING_JOB });
  }

  status() {
    const scopes = this.store.scopes();
    return {
      enabled: this.settings.enabled,
      scopes: scopes.length,
      units: this.store.totalUnits(),
      retrieval_mode: this.settings.retrievalMode,
      embedded: this.vectors?.ready ?? false,
    };
  }

  /** Scrubs the texts from the turns and their raw turns; returns the ids of the raw turns that held them. */
  private scrub(turnIds: readonly string[], texts: readonly string[]): string[] {
    if (turnIds.length === 0) return [];
    this.deps.conversation?.scrubTexts(turnIds, texts);
    // Raw turns holding the same words (the rule detector quotes them verbatim) go too.
    const scrubbedRaw: string[] = [];
    for (const turnId of turnIds) {
      for (const unit of this.store.rawTurnsOfTurn(turnId)) {
        const scrubbed = texts.reduce((content, text) => content.split(text.trim()).join('[forgotten]'), unit.content);
        if (scrubbed === unit.content) continue;
        this.store.update(unit.id, { content: scrubbed });
        scrubbedRaw.push(unit.id);
      }
    }
    return scrubbedRaw;
  }

  /** After a delete: rebuild the keyword index and truncate the WAL, so no page keeps the text. */
  private compact(): void {
    this.store.compactIndex();
    this.deps.db.pragma('wal_checkpoint(TRUNCATE)');
  }

  private watermarkKeys(scope: string): string[] {
    return this.state.keysWithPrefix(`memory.extracted:${scope}\u0000`);
  }
}

/** State key: the sequence of the last raw turn of a session extraction has read. */
export function watermarkKey(scope: string, sessionId: string): string {
  return `memory.extracted:${scope}\u0000${sessionId}`;
}

/** State key: the languages the user of a scope has been seen writing in. */
export function languagesKey(scope: string): string {
  return `memory.languages:${scope}`;
}

/** The embeddings client the settings call for (none without an endpoint). */
function embeddingClient(settings: MemorySettings, timeoutMs?: number): EmbeddingClient | undefined {
  const { apiBase, apiKey, model } = settings.embedding;
  return apiBase && model ? new EmbeddingClient({ apiBase, apiKey, model }, timeoutMs) : undefined;
}
