import { randomUUID } from 'node:crypto';
import type { Db } from '../store/index.js';
import { redactSecrets, tokenize } from '../text/index.js';
import { injectionReason } from '../context/index.js';
import type { MemoryDraft, MemoryOrigin, MemoryType, MemoryUnit } from './types.js';
import {
  BEFORE_MARK,
  AFTER_MARK,
  GLOSS_MARK,
  KINDRED_MARK,
  KINDRED_POSTINGS,
  SESSION_FOLLOWERS,
  POSTINGS_PER_TERM,
  hasEnglishForms,
  indexTokens,
  needsPrefix,
  ownIndexTokens,
  withNeighbourTokens,
  clarifyingQuestion,
  rawLink,
  type LinkedTurn,
  rankPostings,
  scopedTerm,
  termIdf,
  type IndexedRow,
  type PostingSource,
  type TermPostings,
} from './keyword-index.js';
import type { MemoryUnitReader, MemoryUnitWriter } from '../store/ports.js';

export { KINDRED_WEIGHT, NEIGHBOUR_WEIGHT, PARTIAL_WEIGHT, SESSION_WEIGHT, idfOf } from './keyword-index.js';

/** A memory_units row as SQLite returns it (the team store reads PostgreSQL's into this shape). */
export interface UnitRow {
  rowid: number;
  id: string;
  scope: string;
  type: string;
  content: string;
  terms: string;
  search_keys: string;
  neighbour_terms: string;
  previous_raw: number | null;
  speaker: string | null;
  importance: number;
  confidence: number;
  core: number;
  pinned: number;
  status: string;
  superseded_by: string | null;
  origin: string;
  raw_key: string | null;
  observed_at: number;
  valid_from: number;
  source_session: string | null;
  source_turns: string;
  flagged: string | null;
  access_count: number;
  last_accessed_at: number | null;
  created_at: number;
  updated_at: number;
}

/** A raw turn next to another: its rowid and own terms. */
interface NeighbourRow {
  rowid: number;
  terms: string;
}

export interface Candidate {
  unit: MemoryUnit;
  /** Query terms the unit holds itself (for units from the index; every term for the others). */
  terms: Set<string>;
  /** Query terms found only in the raw turn before or after it: they count NEIGHBOUR_WEIGHT. */
  related: Set<string>;
  /** Query terms the unit holds only in another form (see `PARTIAL_WEIGHT`); absent when none. */
  partial?: Set<string>;
  /** Query terms the unit holds only as a word related to one of its own (see `KINDRED_WEIGHT`); absent when none. */
  kindred?: Set<string>;
  /** Query terms found only in another user turn of the unit's session (see `SESSION_WEIGHT`); absent when none. */
  session?: Set<string>;
  bm25: number;
}

/** Keyword candidates, with the IDF of every query term in the scope (ranking needs them too). */
export interface KeywordSearch {
  candidates: Candidate[];
  idf: Map<string, number>;
  /** Query terms no unit of the scope holds. */
  unknown: Set<string>;
  /** The same search with up to `limit` candidates, read from the ranking already made (absent where a store cannot keep it). */
  deeper?: (limit: number) => KeywordSearch;
}

export interface MemoryPatch {
  content?: string;
  searchKeys?: string[];
  type?: MemoryType;
  importance?: number;
  core?: boolean;
  pinned?: boolean;
}

/** A scope's sizes, as `GET /v1/memory/stats` and `memory stats --json` show them (snake_case, as every answer is). */
export interface ScopeStats {
  scope: string;
  active: number;
  superseded: number;
  core: number;
  by_type: Record<string, number>;
  by_origin: Record<string, number>;
}

export function emptyScopeStats(scope: string): ScopeStats {
  return { scope, active: 0, superseded: 0, core: 0, by_type: {}, by_origin: {} };
}

/** Adds one group of a scope's units (by status, core, type and origin) to its stats: one way of counting for both engines. */
export function countInStats(stats: ScopeStats, row: { status: string; core: number; type: string; origin: string; count: number }): void {
  if (row.status === 'active') {
    stats.active += row.count;
    stats.by_type[row.type] = (stats.by_type[row.type] ?? 0) + row.count;
    stats.by_origin[row.origin] = (stats.by_origin[row.origin] ?? 0) + row.count;
    if (row.core) stats.core += row.count;
  } else stats.superseded += row.count;
}

/**
 * A unit about to be added with the costly part of adding it done (`MemoryStore.prepare`): its text
 * redacted, its terms and the index tokens of its own words. Nothing in it depends on what is stored.
 */
export interface PreparedUnit {
  readonly draft: MemoryDraft;
  readonly content: string;
  readonly searchKeys: readonly string[];
  /** Space-separated, as stored. */
  readonly terms: string;
  readonly flagged: string | null;
  /** The search keys in the user's languages `ownTokens` were made with, and how many keys had been written then (`SearchKeysSource`). */
  readonly languageKeys: readonly string[];
  readonly keysWritten: number;
  readonly ownTokens: readonly string[];
}

/** Where a text's search keys in the user's languages come from (MemorySearchKeys). */
export interface SearchKeysSource {
  keysOf(content: string): readonly string[];
  /** How many times keys were written: a unit prepared before a write reads its keys again. */
  readonly written: number;
}

/** Called for each unit a forget removes: the turns it came from, its text, and its id (turns that injected it name it). */
export type Scrubber = (turnIds: readonly string[], texts: readonly string[], unitId: string) => void;

/**
 * Memory units in SQLite with a contentless FTS5 index of their segmented terms. Scopes never mix:
 * every query names one. Deletes are real: row, index entry and (with the vector store) vector go,
 * and freed pages are zeroed.
 */
export class MemoryStore implements MemoryUnitWriter, MemoryUnitReader {
  private readonly statements;
  private readonly changeListeners: Array<(scope: string) => void> = [];
  /** Search keys of a text (written by a learning job), indexed beside its own words. */
  private searchKeys: SearchKeysSource = { keysOf: () => [], written: 0 };
  private readonly sizes = new Map<string, number>();
  /** Document frequencies (reading one walks the term's whole posting list), kept until a change. */
  private readonly frequencies = new Map<string, number>();
  /** While `batch` runs: the scopes it changed (announced when it ends), and the raw turn it wrote last in each session. */
  private batching: { changed: Set<string>; lastRaw: Map<string, LinkedTurn> } | undefined;
  private readonly deleteListeners: Array<(rowid: number) => void> = [];
  private readonly rewriteListeners: Array<(rowid: number) => void> = [];
  /**
   * What search learned of units' sessions (`sessionsOf`): each asked unit's scope and session when
   * it is a user's raw turn (null otherwise), each session's first user turn, and the user turns
   * after a first one once there are SESSION_FOLLOWERS. Reading a unit's row costs a page read
   * (rows are spread over the file): ~15 % of a search's time at 10k units, uncached. None of these
   * change while the unit lives (scope, session, origin and speaker are never edited; later turns
   * only add followers, cached once complete); any deletion clears them all.
   */
  private readonly turnSessions = new Map<number, { scope: string; session: string } | null>();
  private readonly openings = new Map<string, number>();
  private readonly followerLists = new Map<number, number[]>();

  constructor(private readonly db: Db) {
    this.statements = {
      insert: db.prepare(`
        INSERT INTO memory_units (id, scope, type, content, terms, search_keys, neighbour_terms, previous_raw, speaker, importance, confidence, core, pinned, status, origin, raw_key, observed_at, valid_from, source_session, source_turns, flagged, created_at, updated_at)
        VALUES (@id, @scope, @type, @content, @terms, @search_keys, @neighbour_terms, @previous_raw, @speaker, @importance, @confidence, @core, @pinned, 'active', @origin, @raw_key, @observed_at, @valid_from, @source_session, @source_turns, @flagged, @now, @now)
        ON CONFLICT(raw_key) DO NOTHING`),
      insertFts: db.prepare<[number, string]>('INSERT INTO memory_fts (rowid, terms) VALUES (?, ?)'),
      deleteFts: db.prepare<[number]>('DELETE FROM memory_fts WHERE rowid = ?'),
      byId: db.prepare<[string], UnitRow>('SELECT * FROM memory_units WHERE id = ?'),
      byRowid: db.prepare<[number], UnitRow>('SELECT * FROM memory_units WHERE rowid = ?'),
      update: db.prepare(
        `UPDATE memory_units SET content = @content, terms = @terms, search_keys = @search_keys, type = @type, importance = @importance, core = @core, pinned = @pinned, flagged = @flagged, updated_at = @now WHERE id = @id`,
      ),
      supersede: db.prepare<[string, number, string]>(
        "UPDATE memory_units SET status = 'superseded', superseded_by = ?, updated_at = ? WHERE id = ? AND status = 'active'",
      ),
      delete: db.prepare<[string]>('DELETE FROM memory_units WHERE id = ?'),
      scopeUnits: db.prepare<[string], UnitRow>('SELECT * FROM memory_units WHERE scope = ?'),
      clearSupersededLinks: db.prepare<[string]>('UPDATE memory_units SET superseded_by = NULL WHERE superseded_by = ?'),
      // Newest first, and bounded: a term held by thousands of units is cheap to look up this way.
      postings: db.prepare<[string, number], number>('SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? ORDER BY rowid DESC LIMIT ?').pluck(),
      // Every column but the (long) terms: search already knows which query terms a unit holds.
      byRowids: db.prepare<[string], UnitRow>(
        `SELECT rowid, id, scope, type, content, search_keys, '' AS neighbour_terms, previous_raw, speaker, importance, confidence, core, pinned, status, superseded_by, origin, observed_at, valid_from,
           source_session, source_turns, flagged, access_count, last_accessed_at, created_at, updated_at, '' AS terms
         FROM memory_units WHERE rowid IN (SELECT value FROM json_each(?))`,
      ),
      scopeSize: db.prepare<[string], { count: number }>('SELECT COUNT(*) AS count FROM memory_units WHERE scope = ?'),
      core: db.prepare<[string], UnitRow>(
        "SELECT * FROM memory_units WHERE scope = ? AND core = 1 AND status = 'active' ORDER BY pinned DESC, importance DESC, observed_at DESC",
      ),
      window: db.prepare<[string, number, number, number], UnitRow>(
        "SELECT * FROM memory_units WHERE scope = ? AND status = 'active' AND observed_at >= ? AND observed_at < ? ORDER BY importance DESC, observed_at DESC LIMIT ?",
      ),
      documentFrequency: db.prepare<[string], { doc: number }>('SELECT doc FROM memory_fts_vocab WHERE term = ?'),
      total: db.prepare<[], { count: number }>('SELECT COUNT(*) AS count FROM memory_units'),
      touch: db.prepare<[number, string]>('UPDATE memory_units SET access_count = access_count + 1, last_accessed_at = ? WHERE id = ?'),
      list: db.prepare<[string, number], UnitRow>('SELECT * FROM memory_units WHERE scope = ? ORDER BY observed_at DESC LIMIT ?'),
      rawOfSession: db.prepare<[string, string, number], UnitRow>(
        "SELECT * FROM memory_units WHERE source_session = ? AND scope = ? AND origin = 'raw_turn' AND rowid > ? ORDER BY rowid",
      ),
      userRawCountOfSession: db
        .prepare<[string, string, number], number>(
          "SELECT COUNT(*) FROM memory_units WHERE source_session = ? AND scope = ? AND origin = 'raw_turn' AND speaker = 'user' AND rowid > ?",
        )
        .pluck(),
      summariesOfSession: db.prepare<[string, string], UnitRow>(
        "SELECT * FROM memory_units WHERE source_session = ? AND scope = ? AND type = 'working_summary'",
      ),
      rawOfTurn: db.prepare<[string], UnitRow>("SELECT * FROM memory_units WHERE origin = 'raw_turn' AND source_turns LIKE ?"),
      scopes: db.prepare<[], { scope: string }>('SELECT DISTINCT scope FROM memory_units ORDER BY scope'),
      stats: db.prepare<[string], { status: string; core: number; type: string; origin: string; count: number }>(
        'SELECT status, core, type, origin, COUNT(*) AS count FROM memory_units WHERE scope = ? GROUP BY status, core, type, origin',
      ),
      sameContent: db.prepare<[string, string], UnitRow>(
        "SELECT * FROM memory_units WHERE scope = ? AND content = ? AND status = 'active' AND origin != 'raw_turn' LIMIT 1",
      ),
      sameContentAnyOrigin: db.prepare<[string, string], UnitRow>("SELECT * FROM memory_units WHERE scope = ? AND content = ? AND status = 'active' LIMIT 1"),
      replacedWithContent: db.prepare<[string, string], UnitRow>(
        "SELECT * FROM memory_units WHERE scope = ? AND content = ? AND status = 'superseded' AND core = 1 ORDER BY rowid DESC LIMIT 1",
      ),
      rawInSession: db.prepare<[string, string, string, string], { found: number }>(
        "SELECT 1 AS found FROM memory_units WHERE source_session = ? AND origin = 'raw_turn' AND scope = ? AND speaker = ? AND content = ? LIMIT 1",
      ),
      all: db.prepare<[], UnitRow>('SELECT * FROM memory_units ORDER BY rowid'),
      expired: db.prepare<[number, number], { id: string }>(
        "SELECT id FROM memory_units WHERE pinned = 0 AND ((origin = 'raw_turn' AND observed_at < ?) OR (status = 'superseded' AND updated_at < ?))",
      ),
      decay: db.prepare<[number, number]>(
        "UPDATE memory_units SET importance = MAX(0.05, importance * 0.9), updated_at = ? WHERE type = 'episodic' AND status = 'active' AND pinned = 0 AND COALESCE(last_accessed_at, observed_at) < ?",
      ),
      scopeCounts: db.prepare<[number], { scope: string; count: number }>(
        "SELECT scope, COUNT(*) AS count FROM memory_units WHERE status = 'active' GROUP BY scope HAVING count > ?",
      ),
      leastUseful: db.prepare<[string, number], { id: string }>(
        "SELECT id FROM memory_units WHERE scope = ? AND status = 'active' AND pinned = 0 AND core = 0 AND type = 'episodic' ORDER BY importance ASC, observed_at ASC LIMIT ?",
      ),
      consolidation: db.prepare<[string, number], UnitRow>(
        "SELECT * FROM memory_units WHERE scope = ? AND status = 'active' AND origin != 'raw_turn' ORDER BY observed_at DESC LIMIT ?",
      ),
      allOfScope: db.prepare<[string], UnitRow>('SELECT * FROM memory_units WHERE scope = ? ORDER BY rowid'),
      rowidsAfter: db.prepare<[number, number], number>('SELECT rowid FROM memory_units WHERE rowid > ? ORDER BY rowid LIMIT ?').pluck(),
      // The raw turn said just before one (same scope and session): the last one stored so far.
      // The newest of each speaker's newest turn: each a seek in memory_units_session. Its trailing speaker
      // orders the session's turns by speaker first, so one ORDER BY rowid DESC sorted all of them per turn
      // stored: ingesting 8,000 turns took 9.7 s of the event loop (2,000: 1.2 s).
      lastRaw: db.prepare<[{ session: string; scope: string }], LinkedTurn>(
        `SELECT rowid, terms, content, neighbour_terms, speaker FROM memory_units WHERE rowid = max(
          coalesce((SELECT max(rowid) FROM memory_units WHERE source_session = @session AND origin = 'raw_turn' AND scope = @scope AND speaker = 'user'), 0),
          coalesce((SELECT max(rowid) FROM memory_units WHERE source_session = @session AND origin = 'raw_turn' AND scope = @scope AND speaker = 'assistant'), 0))`,
      ),
      // Which units are a user's raw turn, and in which session; a session's first user turn; the user turns after one (migration 27: from memory_units_session alone).
      userTurns: db.prepare<[string], { rowid: number; scope: string; source_session: string }>(
        "SELECT rowid, scope, source_session FROM memory_units WHERE rowid IN (SELECT value FROM json_each(?)) AND origin = 'raw_turn' AND speaker = 'user' AND source_session IS NOT NULL",
      ),
      opening: db
        .prepare<[string, string], number>(
          "SELECT rowid FROM memory_units WHERE source_session = ? AND origin = 'raw_turn' AND scope = ? AND speaker = 'user' ORDER BY rowid LIMIT 1",
        )
        .pluck(),
      followers: db
        .prepare<[string, string, number, number], number>(
          "SELECT rowid FROM memory_units WHERE source_session = ? AND origin = 'raw_turn' AND scope = ? AND speaker = 'user' AND rowid > ? ORDER BY rowid LIMIT ?",
        )
        .pluck(),
      rawAfter: db.prepare<[number], NeighbourRow>('SELECT rowid, terms FROM memory_units WHERE previous_raw = ?'),
      linkedTurn: db.prepare<[number], LinkedTurn>('SELECT rowid, terms, content, neighbour_terms, speaker FROM memory_units WHERE rowid = ?'),
      setPrevious: db.prepare<[number | null, string, number]>('UPDATE memory_units SET previous_raw = ?, neighbour_terms = ? WHERE rowid = ?'),
      indexRow: db.prepare<[number], { scope: string; content: string; terms: string; neighbour_terms: string; previous_raw: number | null }>(
        'SELECT scope, content, terms, neighbour_terms, previous_raw FROM memory_units WHERE rowid = ?',
      ),
      textRow: db.prepare<[number], { content: string; search_keys: string; terms: string; previous_raw: number | null }>(
        'SELECT content, search_keys, terms, previous_raw FROM memory_units WHERE rowid = ?',
      ),
      setTerms: db.prepare<[string, number]>('UPDATE memory_units SET terms = ? WHERE rowid = ?'),
      previousOf: db.prepare<[string], { rowid: number; previous_raw: number }>(
        'SELECT rowid, previous_raw FROM memory_units WHERE rowid IN (SELECT value FROM json_each(?)) AND previous_raw IS NOT NULL ORDER BY rowid',
      ),
      lastRawOfSession: db
        .prepare<[string, string, string], string>(
          "SELECT content FROM memory_units WHERE source_session = ? AND scope = ? AND origin = 'raw_turn' AND speaker = ? ORDER BY rowid DESC LIMIT 1",
        )
        .pluck(),
      ruleInstances: db.prepare<[string], UnitRow>(
        "SELECT * FROM memory_units WHERE scope = ? AND origin = 'rule' AND core = 0 AND status = 'active' ORDER BY rowid DESC LIMIT 200",
      ),
      replacedRules: db.prepare<[string], string>("SELECT source_turns FROM memory_units WHERE scope = ? AND core = 1 AND status = 'superseded'").pluck(),
      termsOf: db.prepare<[string], { rowid: number; terms: string }>('SELECT rowid, terms FROM memory_units WHERE rowid IN (SELECT value FROM json_each(?))'),
      sources: db.prepare<[string, number, number, string]>('UPDATE memory_units SET source_turns = ?, importance = ?, updated_at = ? WHERE id = ?'),
    };
  }

  /** Runs several writes as one (nested writes become savepoints): all of them land, or none. */
  atomically<T>(work: () => T): T {
    return this.db.transaction(work).immediate();
  }

  /**
   * As `atomically`, with each changed scope announced to the change listeners once, when the work is
   * done, rather than at every write: each announcement writes the shared revision and may queue
   * jobs, per unit of a large ingest. Nothing is announced when the work throws (nothing changed).
   */
  batch<T>(work: () => T): T {
    if (this.batching) return this.atomically(work);
    return this.atomically(() => {
      const batching = (this.batching = { changed: new Set<string>(), lastRaw: new Map<string, LinkedTurn>() });
      let result: T;
      try {
        result = work();
      } finally {
        this.batching = undefined;
      }
      for (const scope of batching.changed) this.emit(scope);
      return result;
    });
  }

  /** Called (with the scope) whenever units of a scope change: caches of the core block listen. */
  onChange(listener: (scope: string) => void): void {
    this.changeListeners.push(listener);
  }

  /** Called inside the delete transaction with the unit's rowid (the vector store removes its vector). */
  onDelete(listener: (rowid: number) => void): void {
    this.deleteListeners.push(listener);
  }

  /** Called inside the update transaction with the rowid of a unit whose text changed (its vector no longer says what it says). */
  onRewrite(listener: (rowid: number) => void): void {
    this.rewriteListeners.push(listener);
  }

  /** Adds a unit; returns it, or undefined when a raw turn was already stored (ingest is idempotent). */
  add(draft: MemoryDraft, options: { rawKey?: string; id?: string } = {}): MemoryUnit | undefined {
    const prepared = this.prepare(draft);
    return this.db
      .transaction(() => {
        const rowid = this.insert(prepared, options);
        return rowid === undefined ? undefined : toUnit(this.statements.byRowid.get(rowid)!);
      })
      .immediate();
  }

  /**
   * The part of adding a unit that costs time and reads nothing stored (redaction, terms, the index
   * tokens of its own words): a large batch prepares its units a slice at a time, before its write.
   */
  prepare(draft: MemoryDraft): PreparedUnit {
    // Every way in (raw turns, extraction, summaries, the API, imports) passes here: no secret is stored, indexed or recalled.
    const content = storedContent(draft.content);
    const searchKeys = cleanKeys(draft.searchKeys ?? []);
    const terms = termsOf(content, searchKeys).join(' ');
    const keysWritten = this.searchKeys.written;
    const languageKeys = this.searchKeys.keysOf(content);
    const ownTokens = ownIndexTokens(draft.scope, withSearchKeyTerms({ content, terms }, languageKeys));
    return { draft, content, searchKeys, terms, flagged: injectionReason(content) ?? null, languageKeys, keysWritten, ownTokens };
  }

  /**
   * Adds a prepared unit inside the caller's transaction (`atomically` or `batch`: a failure undoes
   * the whole of it, so no savepoint of its own). Its id, or undefined when the raw turn was already stored.
   */
  addPrepared(prepared: PreparedUnit, options: { rawKey?: string } = {}): string | undefined {
    if (!this.db.inTransaction) throw new Error('MemoryStore.addPrepared runs inside a transaction');
    const id = newMemoryId();
    return this.insert(prepared, { ...options, id }) === undefined ? undefined : id;
  }

  /** Writes a prepared unit's row and index entry; its rowid, or undefined when the raw turn was already stored. */
  private insert(prepared: PreparedUnit, options: { rawKey?: string; id?: string }): number | undefined {
    const { draft, content } = prepared;
    const now = Date.now();
    const session = draft.sourceSession ?? null;
    const raw = draft.origin === 'raw_turn' && session !== null;
    // In a batch, the raw turn it wrote last in the session is the one this follows (nothing else writes meanwhile).
    const sessionKey = `${draft.scope}\u0000${session}`;
    const previous = raw ? (this.batching?.lastRaw.get(sessionKey) ?? this.statements.lastRaw.get({ session, scope: draft.scope })) : undefined;
    const row = {
      id: options.id ?? newMemoryId(),
      scope: draft.scope,
      type: draft.type,
      content,
      terms: prepared.terms,
      search_keys: JSON.stringify(prepared.searchKeys),
      ...rawLink(previous),
      speaker: draft.speaker ?? null,
      importance: clamp(draft.importance ?? 0.5),
      confidence: clamp(draft.confidence ?? 0.7),
      core: draft.core ? 1 : 0,
      pinned: draft.pinned ? 1 : 0,
      origin: draft.origin,
      raw_key: options.rawKey ?? null,
      observed_at: draft.observedAt ?? now,
      valid_from: draft.observedAt ?? now,
      source_session: session,
      source_turns: JSON.stringify(draft.sourceTurns ?? []),
      flagged: prepared.flagged,
      now,
    };
    const result = this.statements.insert.run(row);
    if (result.changes === 0) return undefined;
    const rowid = Number(result.lastInsertRowid);
    if (raw) this.batching?.lastRaw.set(sessionKey, { rowid, terms: row.terms, content, speaker: row.speaker, neighbour_terms: row.neighbour_terms });
    // Search keys written since it was prepared may be this text's: then its own tokens are made again with them.
    const fresh = this.searchKeys.written === prepared.keysWritten;
    const keys = fresh ? prepared.languageKeys : this.searchKeys.keysOf(content);
    const indexed = withSearchKeyTerms(row, keys);
    const own = fresh || sameKeys(keys, prepared.languageKeys) ? prepared.ownTokens : ownIndexTokens(draft.scope, indexed);
    this.statements.insertFts.run(rowid, withNeighbourTokens(draft.scope, indexed, own).join(' '));
    this.emit(draft.scope);
    return rowid;
  }

  get(id: string): MemoryUnit | undefined {
    const row = this.statements.byId.get(id);
    return row ? toUnit(row) : undefined;
  }

  byRowid(rowid: number): MemoryUnit | undefined {
    const row = this.statements.byRowid.get(rowid);
    return row ? toUnit(row) : undefined;
  }

  /** Whether this session already has a raw turn of this speaker with exactly this text. */
  hasRawInSession(scope: string, sessionId: string, speaker: 'user' | 'assistant', content: string): boolean {
    return this.statements.rawInSession.get(sessionId, scope, speaker, content) !== undefined;
  }

  /**
   * An active unit of the scope with exactly this content, as it would be stored (secrets redacted:
   * compared as given, a text holding a token never matched its stored copy, and every import of it
   * added another); raw turns count only with `rawTurns`.
   */
  findSameContent(scope: string, content: string, options: { rawTurns?: boolean } = {}): MemoryUnit | undefined {
    const row = (options.rawTurns ? this.statements.sameContentAnyOrigin : this.statements.sameContent).get(scope, storedContent(content));
    return row ? toUnit(row) : undefined;
  }

  /** A replaced standing instruction with exactly this content, if any. */
  findReplacedRule(scope: string, content: string): MemoryUnit | undefined {
    const row = this.statements.replacedWithContent.get(scope, storedContent(content));
    return row ? toUnit(row) : undefined;
  }

  update(id: string, patch: MemoryPatch): MemoryUnit | undefined {
    const current = this.statements.byId.get(id);
    if (!current) return undefined;
    const content = patch.content === undefined ? current.content : storedContent(patch.content);
    const searchKeys = patch.searchKeys === undefined ? (JSON.parse(current.search_keys) as string[]) : cleanKeys(patch.searchKeys);
    const terms = patch.content === undefined && patch.searchKeys === undefined ? current.terms : termsOf(content, searchKeys).join(' ');
    this.db
      .transaction(() => {
        this.statements.update.run({
          id,
          content,
          terms,
          search_keys: JSON.stringify(searchKeys),
          type: patch.type ?? current.type,
          importance: clamp(patch.importance ?? current.importance),
          core: patch.core === undefined ? current.core : patch.core ? 1 : 0,
          pinned: patch.pinned === undefined ? current.pinned : patch.pinned ? 1 : 0,
          flagged: injectionReason(content) ?? null,
          now: Date.now(),
        });
        if (terms !== current.terms) this.reindex(current.rowid);
        if (content !== current.content) for (const listener of this.rewriteListeners) listener(current.rowid);
        // The turns after it are indexed with its terms too (the second through a clarifying question, which its text may have become or stopped being).
        if (terms !== current.terms || content !== current.content) this.relinkFollowers(current.rowid);
      })
      .immediate();
    this.emit(current.scope);
    return this.get(id);
  }

  /** Where search keys come from: a unit is indexed with the keys of its text whenever it is written. */
  useSearchKeys(source: SearchKeysSource): void {
    this.searchKeys = source;
  }

  /** Indexes a unit again, with the search keys its text has now (keys are searched, never shown). */
  reindexUnit(id: string): void {
    const row = this.statements.byId.get(id);
    if (!row) return;
    this.db.transaction(() => this.reindex(row.rowid)).immediate();
    // Not `emit`: nothing a listener cares about changed, only the index.
    this.frequencies.clear();
  }

  /** A unit's row for its index entry, its terms joined by those of its text's search keys in the user's languages. */
  private withLanguageKeys<T extends { terms: string; content: string }>(row: T): T {
    return withSearchKeyTerms(row, this.searchKeys.keysOf(row.content));
  }

  /**
   * Rewrites the index entries of the next `limit` units after rowid `after` (in one transaction),
   * so units stored before the tokenizer, the bundled glossary or the thesaurus changed are found by
   * their words: each unit's terms are made again from its text and search keys, and a raw turn's
   * neighbour terms from the turn before it (an earlier rowid, so already made again).
   * Returns how many were rewritten and the last one's rowid, undefined when none is left.
   */
  reindexAfter(after: number, limit: number): { count: number; last: number } | undefined {
    const rowids = this.statements.rowidsAfter.all(after, limit);
    if (rowids.length === 0) return undefined;
    this.db
      .transaction(() =>
        rowids.forEach((rowid) => {
          this.retokenize(rowid);
          this.reindex(rowid);
        }),
      )
      .immediate();
    this.frequencies.clear();
    return { count: rowids.length, last: rowids.at(-1)! };
  }

  /** Whether no unit is stored at all (a new database needs no re-indexing). */
  isEmpty(): boolean {
    return this.statements.rowidsAfter.all(0, 1).length === 0;
  }

  /** Marks `oldId` as replaced by `newId` (kept and linked, never silently erased). */
  supersede(oldId: string, newId: string): boolean {
    const row = this.statements.byId.get(oldId);
    if (!row) return false;
    const changed = this.statements.supersede.run(newId, Date.now(), oldId).changes > 0;
    if (changed) this.emit(row.scope);
    return changed;
  }

  /**
   * Links more source turns to a unit (a rule restated or applied again) and raises its importance
   * by `importanceStep` per new source, so what the user keeps repeating ranks higher.
   */
  addSources(id: string, turnIds: readonly string[], importanceStep = 0): MemoryUnit | undefined {
    const row = this.statements.byId.get(id);
    if (!row) return undefined;
    const current = JSON.parse(row.source_turns) as string[];
    const added = turnIds.filter((turn) => !current.includes(turn));
    if (added.length === 0) return toUnit(row);
    this.statements.sources.run(JSON.stringify([...current, ...added]), clamp(row.importance + importanceStep * added.length), Date.now(), id);
    this.emit(row.scope);
    return this.get(id);
  }

  /**
   * Deletes a unit for good: the row, its index entry, and — through `scrub` — its text in the
   * turn records it came from. Returns the deleted unit.
   */
  delete(id: string, scrub?: Scrubber): MemoryUnit | undefined {
    const row = this.statements.byId.get(id);
    if (!row) return undefined;
    this.db.transaction(() => this.removeRow(row, scrub)).immediate();
    this.emit(row.scope);
    return toUnit(row);
  }

  /** Deletes every unit of a scope. Returns how many. */
  deleteScope(scope: string, scrub?: Scrubber): number {
    const rows = this.statements.scopeUnits.all(scope);
    this.db
      .transaction(() => {
        // Links point within a scope, and the whole scope goes: no need to clear them row by row.
        for (const row of rows) this.removeRow(row, scrub, false);
      })
      .immediate();
    this.emit(scope);
    return rows.length;
  }

  /** Deletes units without scrubbing turns (retention and caps, not forgetting). */
  deleteMany(ids: readonly string[]): number {
    let deleted = 0;
    const scopes = new Set<string>();
    this.db
      .transaction(() => {
        for (const id of ids) {
          const row = this.statements.byId.get(id);
          if (!row) continue;
          this.removeRow(row);
          scopes.add(row.scope);
          deleted++;
        }
      })
      .immediate();
    for (const scope of scopes) this.emit(scope);
    return deleted;
  }

  /** One unit out, inside the caller's transaction: index entry, vectors, row, links to it; with `scrub`, its text in the turns it came from. */
  private removeRow(row: UnitRow, scrub?: Scrubber, clearLinks = true): void {
    // A session may have lost its first user turn or one after it (and a rowid may be used again).
    this.forgetSessions();
    this.statements.deleteFts.run(row.rowid);
    for (const listener of this.deleteListeners) listener(row.rowid);
    this.statements.delete.run(row.id);
    if (clearLinks) this.statements.clearSupersededLinks.run(row.id);
    // No trace of its words stays in the entry of the turn after it, which now follows the one before.
    const after = clearLinks ? this.statements.rawAfter.get(row.rowid) : undefined;
    if (after) {
      // The turns after it may have borrowed the deleted turn's words through clarifying questions (`rawLink`).
      this.relinkFrom(after.rowid, row.previous_raw === null ? undefined : this.statements.linkedTurn.get(row.previous_raw));
    }
    // Also without source turns: records beside the turns (the skill evolution log) may quote a unit added by hand.
    if (scrub) scrub(JSON.parse(row.source_turns) as string[], [row.content], row.id);
  }

  /** Raw turns older than `rawCutoff` and superseded units older than `supersededCutoff`. */
  expiredIds(rawCutoff: number, supersededCutoff: number): string[] {
    return this.statements.expired.all(rawCutoff, supersededCutoff).map((row) => row.id);
  }

  /** Lowers the importance of episodic units nobody recalled since `cutoff`. */
  decayStale(cutoff: number): number {
    return this.statements.decay.run(Date.now(), cutoff).changes;
  }

  /** For each scope over `max` active units: the least useful episodic units beyond it. */
  overCap(max: number): string[] {
    const ids: string[] = [];
    for (const { scope, count } of this.statements.scopeCounts.all(max)) {
      const excess = count - Math.floor(max * 0.95);
      ids.push(...this.statements.leastUseful.all(scope, excess).map((row) => row.id));
    }
    return ids;
  }

  /** The newest non-raw active units of a scope, for near-duplicate consolidation. */
  consolidationCandidates(scope: string, limit: number): Candidate[] {
    return this.statements.consolidation
      .all(scope, limit)
      .map((row) => ({ unit: toUnit(row), terms: new Set(row.terms.split(' ')), related: new Set(), bm25: 0 }));
  }

  /** Rebuilds the keyword index so deleted terms leave no trace in its pages. */
  compactIndex(): void {
    this.db.exec("INSERT INTO memory_fts(memory_fts) VALUES ('optimize')");
  }

  /**
   * Keyword candidates in one scope, term at a time: each query term's posting list (scope-prefixed,
   * so other scopes are invisible; its newest POSTINGS_PER_TERM entries) adds the term's IDF to the
   * units holding it. The best `limit` by
   * matched weight come back with the terms they matched. Cheaper than FTS5's bm25() ranking, which
   * scores every match of every term (measured ~0.9 µs per match), and it yields the coverage the
   * relevance threshold needs anyway.
   */
  /** `translationWeights` scales a term's IDF in the ranking (a translation counts less than a word the user wrote). */
  search(
    scope: string,
    terms: readonly string[],
    limit: number,
    includeInactive = false,
    translationWeights?: ReadonlyMap<string, number>,
    asWritten = false,
  ): KeywordSearch {
    const { ranked, idf, unknown } = rankPostings(this.postingSource(scope, asWritten), terms, this.scopeSize(scope), translationWeights);
    const deeper = (limit: number): KeywordSearch => {
      const candidates: Candidate[] = [];
      // Rows are fetched `limit` at a time: superseded units are few, so one round is the rule.
      for (let offset = 0; offset < ranked.length && candidates.length < limit; offset += limit) {
        const slice = ranked.slice(offset, offset + limit);
        const rows = new Map(this.statements.byRowids.all(JSON.stringify(slice.map(({ rowid }) => rowid))).map((row) => [row.rowid, row]));
        for (const { rowid, weight, matched, related, partial, kindred, session } of slice) {
          const row = rows.get(rowid);
          if (!row || (!includeInactive && row.status !== 'active')) continue;
          // Ranking only asks about query terms, and these are the ones it holds.
          candidates.push({
            unit: toUnit(row),
            terms: new Set(matched),
            related: new Set(related),
            partial: new Set(partial),
            kindred: new Set(kindred),
            session: new Set(session),
            bm25: weight,
          });
          if (candidates.length === limit) break;
        }
      }
      return { candidates, idf, unknown, deeper };
    };
    return deeper(limit);
  }

  /** The indexed terms of units, by rowid (their sequence): what pseudo-relevance feedback reads. */
  unitTerms(rowids: readonly number[]): Map<number, string[]> {
    if (rowids.length === 0) return new Map();
    return new Map(this.statements.termsOf.all(JSON.stringify(rowids)).map((row) => [row.rowid, row.terms.split(' ').filter(Boolean)]));
  }

  /** The IDF of each term in a scope as search weighs it, and whether any unit holds it (the core block ranks rules with these). */
  termWeights(scope: string, terms: readonly string[]): Map<string, { idf: number; held: boolean }> {
    const size = this.scopeSize(scope);
    return new Map(
      terms.map((term) => {
        const postings = this.holders(scope, term);
        return [term, { idf: termIdf(term, postings, size), held: postings.rows.length > 0 }];
      }),
    );
  }

  /** How search reads this scope's posting lists: from FTS5, as it goes. */
  private postingSource(scope: string, asWritten = false): PostingSource {
    return {
      postings: (term) => this.holders(scope, term, asWritten),
      neighbours: (term) => {
        const token = scopedTerm(scope, term);
        return { after: this.postings(AFTER_MARK + token), before: this.postings(BEFORE_MARK + token) };
      },
      sessions: asWritten ? undefined : (rowids) => this.sessionsOf(rowids),
      previousOf: (rowids) => this.statements.previousOf.all(JSON.stringify(rowids)).map(({ rowid, previous_raw }) => ({ rowid, previous: previous_raw })),
    };
  }

  /** `PostingSource.sessions` on this store: from the caches above, reading what they lack. */
  private sessionsOf(rowids: readonly number[]): Array<{ rowid: number; opening: number; followers: number[] }> {
    if (this.turnSessions.size > 100_000) this.forgetSessions();
    const unknown = rowids.filter((rowid) => !this.turnSessions.has(rowid));
    if (unknown.length > 0) {
      for (const rowid of unknown) this.turnSessions.set(rowid, null);
      for (const { rowid, scope, source_session } of this.statements.userTurns.all(JSON.stringify(unknown)))
        this.turnSessions.set(rowid, { scope, session: source_session });
    }
    const found: Array<{ rowid: number; opening: number; followers: number[] }> = [];
    for (const rowid of [...rowids].sort((a, b) => a - b)) {
      const turn = this.turnSessions.get(rowid);
      if (!turn) continue;
      const key = `${turn.scope}\u0000${turn.session}`;
      let opening = this.openings.get(key);
      if (opening === undefined) {
        opening = this.statements.opening.get(turn.session, turn.scope) ?? rowid;
        this.openings.set(key, opening);
      }
      let followers: number[] = [];
      if (opening === rowid) {
        followers = this.followerLists.get(rowid) ?? this.statements.followers.all(turn.session, turn.scope, rowid, SESSION_FOLLOWERS);
        if (followers.length === SESSION_FOLLOWERS) this.followerLists.set(rowid, followers);
      }
      found.push({ rowid, opening, followers });
    }
    return found;
  }

  private forgetSessions(): void {
    this.turnSessions.clear();
    this.openings.clear();
    this.followerLists.clear();
  }

  /**
   * The newest holders of a term (at most POSTINGS_PER_TERM), the units that hold it only in another
   * form (`partial`: through the gloss of their Chinese or Japanese words; for an English word no
   * unit holds, as the start of a longer word), and those that hold it as a word related to theirs (`kindred`).
   */
  private holders(scope: string, term: string, asWritten = false): TermPostings {
    const token = scopedTerm(scope, term);
    const rows = this.postings(token);
    // `asWritten`: the term itself only (feedback terms come from units' own text, not a query to widen).
    const otherForms = hasEnglishForms(term) && !asWritten;
    // Glosses are English (a Chinese or Japanese term has none); a unit holding the term itself is indexed without its gloss.
    let partial = otherForms ? this.postings(GLOSS_MARK + token) : [];
    // Related words are English too: a unit holding the term itself is indexed without it as a related word.
    const kindred = otherForms ? this.postings(KINDRED_MARK + token, false, KINDRED_POSTINGS) : [];
    if (!asWritten && needsPrefix(term, rows, partial)) partial = this.postings(token, true);
    // A capped list is not the term's document frequency: ask the index for that.
    const frequency = rows.length < POSTINGS_PER_TERM ? rows.length : this.documentFrequency(token, rows.length);
    return { rows, partial, kindred, frequency };
  }

  /** The newest holders of an indexed token, or with `prefix` of any token it begins (none when the token cannot be searched). */
  private postings(token: string, prefix = false, limit = POSTINGS_PER_TERM): number[] {
    try {
      return this.statements.postings.all(`terms:"${token.replaceAll('"', '""')}"${prefix ? '*' : ''}`, limit);
    } catch {
      return [];
    }
  }

  /**
   * A unit's index entry as stored: its tokens and the raw turn before it. Another engine's index
   * (PostgreSQL, store/postgres/memory-search.ts) is written from this, so both hold the same entries.
   */
  indexEntry(id: string): { sequence: number; scope: string; previous: number | null; tokens: string[] } | undefined {
    const unit = this.statements.byId.get(id);
    const row = unit && this.statements.indexRow.get(unit.rowid);
    if (!unit || !row) return undefined;
    return { sequence: unit.rowid, scope: row.scope, previous: row.previous_raw, tokens: indexTokens(row.scope, this.withLanguageKeys<IndexedRow>(row)) };
  }

  /** Rewrites a unit's index entry from its row. */
  private reindex(rowid: number): void {
    const row = this.statements.indexRow.get(rowid);
    if (!row) return;
    this.statements.deleteFts.run(rowid);
    this.statements.insertFts.run(rowid, indexTokens(row.scope, this.withLanguageKeys(row)).join(' '));
  }

  /** A unit's stored terms made again with this version's tokenizer, and the words it borrows from the raw turn before it. */
  private retokenize(rowid: number): void {
    const row = this.statements.textRow.get(rowid);
    if (!row) return;
    const terms = termsOf(row.content, JSON.parse(row.search_keys) as string[]).join(' ');
    if (terms !== row.terms) this.statements.setTerms.run(terms, rowid);
    if (row.previous_raw === null) return;
    const link = rawLink(this.statements.linkedTurn.get(row.previous_raw));
    this.statements.setPrevious.run(link.previous_raw, link.neighbour_terms, rowid);
  }

  /** The raw turns after a changed one, which read its words (`rawLink`): relinked to it as it is now. */
  private relinkFollowers(rowid: number): void {
    const after = this.statements.rawAfter.get(rowid);
    if (after) this.relinkFrom(after.rowid, this.statements.linkedTurn.get(rowid));
  }

  /**
   * `rowid` now follows `previous` (or nothing); so, in turn, does each turn after a relinked
   * clarifying question: a question lends the words it was lent (`rawLink`), so two questions in a
   * row pass a turn's words on to the reply after both. Stops at the first turn that is no question.
   */
  private relinkFrom(rowid: number, previous: LinkedTurn | undefined): void {
    let current: number | undefined = rowid;
    let before = previous;
    while (current !== undefined) {
      this.relink(current, before);
      const turn = this.statements.linkedTurn.get(current);
      if (!turn || !clarifyingQuestion(turn)) return;
      before = turn;
      current = this.statements.rawAfter.get(current)?.rowid;
    }
  }

  /** A raw turn now follows `previous` (or nothing): its neighbour terms and entry change (forgetting, editing; never on ingestion). */
  private relink(rowid: number, previous: LinkedTurn | undefined): void {
    const link = rawLink(previous);
    this.statements.setPrevious.run(link.previous_raw, link.neighbour_terms, rowid);
    this.reindex(rowid);
  }

  private documentFrequency(token: string, atLeast: number): number {
    let frequency = this.frequencies.get(token);
    if (frequency === undefined) {
      frequency = this.statements.documentFrequency.get(token)?.doc ?? atLeast;
      if (this.frequencies.size > 50_000) this.frequencies.clear();
      this.frequencies.set(token, frequency);
    }
    return frequency;
  }

  /** Inverse document frequency of a term within a scope. */
  /** Units in a scope (all statuses): the N of its IDF. Cached until the scope changes. */
  scopeSize(scope: string): number {
    let size = this.sizes.get(scope);
    if (size === undefined) {
      size = this.statements.scopeSize.get(scope)!.count;
      this.sizes.set(scope, size);
    }
    return size;
  }

  coreUnits(scope: string): MemoryUnit[] {
    return this.statements.core.all(scope).map(toUnit);
  }

  inWindow(scope: string, start: number, end: number, limit: number): Candidate[] {
    return this.statements.window
      .all(scope, start, end, limit)
      .map((row) => ({ unit: toUnit(row), terms: new Set(row.terms.split(' ')), related: new Set(row.neighbour_terms.split(' ')), bm25: 0 }));
  }

  totalUnits(): number {
    return this.statements.total.get()!.count;
  }

  /** Counts recalls (never on the request path: called when the turn is recorded). */
  touch(ids: readonly string[]): void {
    const now = Date.now();
    for (const id of ids) this.statements.touch.run(now, id);
  }

  list(scope: string, limit: number): MemoryUnit[] {
    return this.statements.list.all(scope, limit).map(toUnit);
  }

  /** Raw turns of a session stored after the unit with sequence `after`, in order. */
  rawTurnsOfSession(sessionId: string, scope: string, after = 0): MemoryUnit[] {
    return this.statements.rawOfSession.all(sessionId, scope, after).map(toUnit);
  }

  /** What `speaker` last said in a session (the answer a correction corrects). */
  lastRawOfSession(sessionId: string, scope: string, speaker: 'user' | 'assistant'): string | undefined {
    return this.statements.lastRawOfSession.get(sessionId, scope, speaker);
  }

  /** Rules stated for named things only, not yet part of a general rule (newest first). */
  ruleInstances(scope: string): MemoryUnit[] {
    return this.statements.ruleInstances.all(scope).map(toUnit);
  }

  /** The turns that taught standing instructions since replaced: what they said no longer holds. */
  replacedRuleTurns(scope: string): Set<string> {
    return new Set(this.statements.replacedRules.all(scope).flatMap((turns) => JSON.parse(turns) as string[]));
  }

  /** How many of those raw turns are the user's. */
  countUserRawTurnsOfSession(sessionId: string, scope: string, after = 0): number {
    return this.statements.userRawCountOfSession.get(sessionId, scope, after)!;
  }

  /** The working summaries written for a session (any status). */
  summariesOfSession(sessionId: string, scope: string): MemoryUnit[] {
    return this.statements.summariesOfSession.all(sessionId, scope).map(toUnit);
  }

  rawTurnsOfTurn(turnId: string): MemoryUnit[] {
    return this.statements.rawOfTurn.all(`%${JSON.stringify(turnId)}%`).map(toUnit);
  }

  scopes(): string[] {
    return this.statements.scopes.all().map((row) => row.scope);
  }

  stats(scope: string): ScopeStats {
    const stats = emptyScopeStats(scope);
    for (const row of this.statements.stats.all(scope)) countInStats(stats, row);
    return stats;
  }

  /** Every unit (of one scope, or all), for export. */
  *iterate(scope?: string): Generator<MemoryUnit> {
    for (const row of scope === undefined ? this.statements.all.iterate() : this.statements.allOfScope.iterate(scope)) yield toUnit(row);
  }

  /** Another process changed units: what this one holds of every scope (and of `also`, which may now be empty) is stale. */
  changedElsewhere(also: readonly string[] = []): void {
    this.forgetSessions();
    for (const scope of new Set([...this.scopes(), ...this.sizes.keys(), ...also])) this.emit(scope);
  }

  private emit(scope: string): void {
    if (this.batching) {
      this.batching.changed.add(scope);
      return;
    }
    this.sizes.delete(scope);
    this.frequencies.clear();
    for (const listener of this.changeListeners) listener(scope);
  }
}

/** A unit's row for its index entry with the terms of its search keys in the user's languages added (the team store indexes the same way). */
export function withSearchKeyTerms<T extends { terms: string }>(row: T, keys: readonly string[]): T {
  return keys.length > 0 ? { ...row, terms: [...new Set([...row.terms.split(' '), ...tokenize(keys.join('\n'))])].join(' ') } : row;
}

/** What a unit is found by: its words and its search keys (not uniqueTerms, whose cache is for texts that come back); stored, and made again on re-indexing. */
export function termsOf(content: string, searchKeys: readonly string[]): string[] {
  return [...new Set([...tokenize(content), ...searchKeys.flatMap((key) => tokenize(key))])];
}

export function newMemoryId(): string {
  return `mem_${randomUUID().replaceAll('-', '').slice(0, 20)}`;
}

/** A unit's content as every way in stores it: no secret is stored, indexed or recalled. */
export function storedContent(content: string): string {
  return redactSecrets(content).trim();
}

/** Search keys as stored: trimmed, secrets redacted, no empties or repeats, bounded. */
function cleanKeys(keys: readonly string[]): string[] {
  return [...new Set(keys.map((key) => redactSecrets(key).trim().slice(0, 300)).filter(Boolean))].slice(0, 24);
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((key, index) => key === b[index]);
}

function clamp(value: number): number {
  return Math.max(0, Math.min(1, value));
}

export function toUnit(row: UnitRow): MemoryUnit {
  return {
    id: row.id,
    sequence: row.rowid,
    scope: row.scope,
    type: row.type as MemoryType,
    content: row.content,
    searchKeys: JSON.parse(row.search_keys) as string[],
    speaker: row.speaker === 'user' || row.speaker === 'assistant' ? row.speaker : null,
    importance: row.importance,
    confidence: row.confidence,
    core: row.core === 1,
    pinned: row.pinned === 1,
    status: row.status === 'superseded' ? 'superseded' : 'active',
    supersededBy: row.superseded_by,
    origin: row.origin as MemoryOrigin,
    observedAt: row.observed_at,
    validFrom: row.valid_from,
    sourceSession: row.source_session,
    sourceTurns: JSON.parse(row.source_turns) as string[],
    flagged: row.flagged,
    accessCount: row.access_count,
    lastAccessedAt: row.last_accessed_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
