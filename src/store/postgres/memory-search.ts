/**
 * Keyword recall of memory units in PostgreSQL (team mode): the same index entries and the same
 * ranking as the SQLite path, so a member's recall does not change when the store does.
 *
 * Why this shape. SQLite's search (MemoryStore.search → memory/keyword-index.ts) never scores every
 * unit holding a query word: for each query term it reads the term's newest POSTINGS_PER_TERM
 * holders (and small lists for its gloss, related-word and neighbour marks), adds the term's IDF
 * to each, and needs the term's document frequency only when that list was capped. A unit's weight
 * for a term is its IDF whatever the unit, so "impact order" within a term is simply newest
 * first. The PostgreSQL index is therefore a plain postings table keyed (token, seq) — a token
 * being the scope-keyed, marked term exactly as FTS5 holds it — read backwards with LIMIT by an
 * index-only scan: a few buffers per term whatever the scope's size. Document frequencies and
 * scope sizes are counters kept by the writers (counting a common word's postings at 1M units
 * costs tens of milliseconds). One statement reads every list of every query term; the ranking
 * itself is `rankPostings`, the function the SQLite path runs, so ties, float sums and the
 * neighbour credits come out identical.
 *
 * Rejected (measured in a spike at 1M units, machine loaded): a GIN index over a terms array
 * ranking every unit holding any query word, 3.7–5.2 s; candidates from the rarer words only,
 * 66–89 ms; impact-ordered postings reading each word's top 200, 37–77 ms (statement alone).
 *
 * Measured (bench/team-recall.ts: one scope, 10–30 terms a unit from a Zipf–Mandelbrot vocabulary of
 * 200k words, 300 queries of 2–8 terms, depth 40; PostgreSQL 15 on 2 cores shared with other work,
 * load average 6–9, so upper bounds), the whole search as the request path calls it:
 *   100k units: p50 2.4–7.8 ms, p99 18–92 ms (SQLite FTS5 on the same units, same runs: p50 1.3–2.8 ms)
 *   1M units:   p50 4.6 ms, p90 9.6 ms, p99 36 ms (load average 7.4); another run at load 9: p50 9.6, p99 60 ms
 *   Loading 1M units (20M postings, 1.1 GB + 0.9 GB of key) takes 6–7 minutes on this busy machine.
 * Of that, the lists statement is ~0.7 ms p50 once prepared (2.0–3.3 ms unprepared: planning it
 * costs more than running it — hence named statements), the unit look-up 1–3 ms (40 random rows),
 * the ranking ~0.5 ms; the rest is waiting for a core between round trips on a busy machine, which
 * is why a search is two round trips and no transaction (`searchPool` sets the statement timeout).
 *
 * Differences from SQLite, all deliberate or negligible:
 * - FTS5 folds tokens (unicode61, remove_diacritics 2: Latin diacritics off, final sigma to sigma);
 *   `foldToken` does the same to stored and queried tokens, checked on the letters the glossary
 *   and test texts use, not on every code point.
 * - A unit's status lives here too (`memory_search_docs.active`): superseding a unit must call
 *   `setActive` (or the store passes its own `units` look-up to `search`).
 * - Entries are written by the caller from `MemoryStore.indexEntry`-shaped data: wherever SQLite
 *   re-indexes a unit (an edit, new search keys, the raw turn after a deleted one), the team store
 *   must call `index` for it too. The test compares both engines after such changes.
 * - Writers keep df and scope sizes exact under concurrency (rows locked in token order, see `index`);
 *   SQLite reads them from the index. Same numbers.
 * - Prefix look-ups (an unknown English word as the start of longer ones) use LIKE on the primary
 *   key's byte order; FTS5 uses its prefix query. Same units.
 */
import pg, { type Pool, type PoolClient } from 'pg';
import { z } from 'zod';
import {
  AFTER_MARK,
  BEFORE_MARK,
  GLOSS_MARK,
  KINDRED_MARK,
  KINDRED_POSTINGS,
  NEIGHBOUR_MAX_FREQUENCY,
  POSTINGS_PER_TERM,
  SESSION_FOLLOWERS,
  SESSION_MAX_FREQUENCY,
  hasEnglishForms,
  indexWordsVersion,
  needsPrefix,
  rankPostings,
  scopedTerm,
  termIdf,
  type PostingSource,
  type TermPostings,
} from '../../memory/keyword-index.js';
import { hearConnectionErrors } from './connect.js';
import { inTransaction } from './transaction.js';

/** How long a search may take before the caller answers without memory. */
export const DEFAULT_SEARCH_TIMEOUT_MS = 250;

/**
 * A pool for searches on the request path: every statement on its connections stops after
 * `timeoutMs` (set once per connection, at start-up, so a search needs no transaction and no SET:
 * each round trip saved is worth more than the statement itself on a busy machine), and waiting
 * for a connection is bounded the same way.
 */
export function searchPool(connectionString: string, timeoutMs = DEFAULT_SEARCH_TIMEOUT_MS, max = 4): Pool {
  // A connection the server ends (a restart, a terminated backend, a connection cut at its time-out): the next search reports it.
  return hearConnectionErrors(
    new pg.Pool({ connectionString, max, statement_timeout: timeoutMs, connectionTimeoutMillis: timeoutMs, idleTimeoutMillis: 60_000 }),
  );
}

/** A unit's index entry as the SQLite store builds it (`MemoryStore.indexEntry`). */
export const indexEntrySchema = z.object({
  sequence: z.number().int().positive(),
  id: z.string().min(1),
  scope: z.string(),
  previous: z.number().int().positive().nullable(),
  tokens: z.array(z.string().min(1)),
  active: z.boolean().default(true),
});
export type IndexEntry = z.input<typeof indexEntrySchema>;

export interface SearchOptions {
  includeInactive?: boolean;
  /** Scales a term's IDF (a translation counts less than a word the user wrote). */
  translationWeights?: ReadonlyMap<string, number>;
  /** The terms as written only: no glosses, related words or prefixes (pseudo-relevance feedback's second search). */
  asWritten?: boolean;
  /**
   * Reads the ids and statuses of units by sequence. By default this index's own copy
   * (memory_search_docs); a store that reads the units themselves anyway can pass that read and
   * save one look-up of ~40 random rows (1–3 ms at 1M units on a busy machine).
   */
  units?: UnitLookup;
}

/** `client`: the search's own connection (a look-up on another could wait for a pool the searches hold). */
export type UnitLookup = (sequences: readonly number[], client: PoolClient) => Promise<ReadonlyMap<number, { id: string; active: boolean }>>;

/** A keyword candidate: the unit's id and sequence, its weight and the query terms it matched, and how. */
export interface SearchHit {
  id: string;
  sequence: number;
  weight: number;
  matched: string[];
  related: string[];
  partial: string[];
  kindred: string[];
  session: string[];
}

/** What `MemoryStore.search` answers, with units named by id (the caller reads them from memory_units). */
export interface PgKeywordSearch {
  hits: SearchHit[];
  idf: Map<string, number>;
  unknown: Set<string>;
  /** Units in the scope (all statuses). */
  size: number;
}

/** The search ran out of time: answer without memory. */
export class MemorySearchTimeout extends Error {
  constructor() {
    super('memory search took longer than the statement timeout');
    this.name = 'MemorySearchTimeout';
  }
}

/**
 * A token as FTS5 (unicode61, remove_diacritics 2) folds it: Latin letters lose their diacritics,
 * final sigma becomes sigma. Other scripts keep theirs (FTS5 leaves Greek accents and Japanese voicing marks).
 */
export function foldToken(token: string): string {
  return token.replace(LATIN_WITH_MARKS, (letter) => letter.normalize('NFD').replace(/\p{M}/gu, '')).replaceAll('ς', 'σ');
}
const LATIN_WITH_MARKS = /[\u00c0-\u024f\u1e00-\u1eff]/g;

/** A query term's token in a scope, as stored. */
function tokenOf(scope: string, term: string): string {
  return foldToken(scopedTerm(scope, term));
}

/** An unmarked token (a term held itself): its df is kept. Marks are letters before the scope key's `s`. */
function isOwnToken(token: string): boolean {
  return token.startsWith('s');
}

const listsRowSchema = z.object({
  i: z.coerce.number().int(),
  own: z.string().nullable(),
  gloss: z.string().nullable(),
  kindred: z.string().nullable(),
  df: z.coerce.number().int().nullable(),
  after: z.string().nullable(),
  before: z.string().nullable(),
  sessions: z.string().nullable(),
  size: z.coerce.number().int().nullable(),
});
const docRowSchema = z.object({ seq: z.coerce.number().int(), unit_id: z.string(), active: z.boolean() });

/**
 * Every list the ranking may read, for every query term, in one statement: its newest holders, the
 * newest holders of its gloss and related-word marks, its df when that list is capped, and — for a
 * term held by few units — its neighbour marks with the raw turn each "before" holder follows, and
 * for each holder that is a user's raw turn its session's first user turn and, for that first one,
 * the user turns after it (`sessions`: "holder:opening:followers", read from memory_units, which the
 * index shares a database with).
 * Lists come back as comma-separated sequences, newest first (cheaper to parse than arrays of bigint).
 */
const LISTS_SQL = `
SELECT q.i,
  own.seqs AS own,
  CASE WHEN q.english THEN (SELECT string_agg(seq::text, ',' ORDER BY seq DESC) FROM
    (SELECT seq FROM memory_postings WHERE token = $3 || q.token ORDER BY seq DESC LIMIT $6) s) END AS gloss,
  CASE WHEN q.english THEN (SELECT string_agg(seq::text, ',' ORDER BY seq DESC) FROM
    (SELECT seq FROM memory_postings WHERE token = $4 || q.token ORDER BY seq DESC LIMIT $7) s) END AS kindred,
  CASE WHEN own.n = $6 THEN (SELECT df FROM memory_term_stats WHERE token = q.token) END AS df,
  CASE WHEN own.n BETWEEN 1 AND $8 THEN (SELECT string_agg(seq::text, ',' ORDER BY seq DESC) FROM
    (SELECT seq FROM memory_postings WHERE token = $9 || q.token ORDER BY seq DESC LIMIT $6) s) END AS after,
  CASE WHEN own.n BETWEEN 1 AND $8 THEN (SELECT string_agg(s.seq || ':' || COALESCE(d.previous_seq::text, ''), ',' ORDER BY s.seq DESC) FROM
    (SELECT seq FROM memory_postings WHERE token = $10 || q.token ORDER BY seq DESC LIMIT $6) s
    LEFT JOIN memory_search_docs d ON d.seq = s.seq) END AS before,
  CASE WHEN own.n BETWEEN 1 AND $11 THEN (SELECT string_agg(h.rowid || ':' || o.opening || ':' || COALESCE(f.list, ''), ',' ORDER BY h.rowid)
    FROM memory_units h
    CROSS JOIN LATERAL (SELECT t.rowid AS opening FROM memory_units t WHERE t.source_session = h.source_session AND t.origin = 'raw_turn'
      AND t.scope = h.scope AND t.speaker = 'user' ORDER BY t.rowid LIMIT 1) o
    CROSS JOIN LATERAL (SELECT string_agg(x.rowid::text, ' ' ORDER BY x.rowid) AS list FROM (SELECT t.rowid FROM memory_units t
      WHERE o.opening = h.rowid AND t.source_session = h.source_session AND t.origin = 'raw_turn' AND t.scope = h.scope AND t.speaker = 'user'
      AND t.rowid > h.rowid ORDER BY t.rowid LIMIT $12) x) f
    WHERE h.rowid = ANY(string_to_array(own.seqs, ',')::bigint[]) AND h.origin = 'raw_turn' AND h.speaker = 'user' AND h.source_session IS NOT NULL) END AS sessions,
  (SELECT units FROM memory_scope_sizes WHERE scope = $5) AS size
FROM unnest($1::text[], $2::boolean[]) WITH ORDINALITY AS q(token, english, i)
CROSS JOIN LATERAL (SELECT count(*) AS n, string_agg(seq::text, ',' ORDER BY seq DESC) AS seqs FROM
  (SELECT seq FROM memory_postings WHERE token = q.token ORDER BY seq DESC LIMIT $6) s) own
`;

/** Units holding any token that begins with the given one (an English word no unit holds may be the short form of one). */
const PREFIX_SQL = `
SELECT string_agg(seq::text, ',' ORDER BY seq DESC) AS seqs FROM
  (SELECT DISTINCT seq FROM memory_postings WHERE token LIKE $1 ORDER BY seq DESC LIMIT $2) s
`;

function parseList(list: string | null): number[] {
  return list ? list.split(',').map(Number) : [];
}

/**
 * Keyword search and its index in PostgreSQL, over a pool the store shares. Several proxies may
 * write the same scope at once: every write is one transaction that locks what it changes in a
 * fixed order (units by sequence, then term counters by token, then scope sizes by scope), so
 * writers wait for each other briefly and never deadlock.
 */
export class PgMemorySearch {
  /** `pool`: for the request path, one made by `searchPool` (its statements time out). */
  constructor(private readonly pool: Pool) {}

  /**
   * Writes (or rewrites) units' index entries in one transaction: postings, df and scope sizes
   * follow. `within`: a transaction the caller holds (an import writes rows and entries together).
   */
  async index(entries: readonly IndexEntry[], within?: PoolClient): Promise<void> {
    if (entries.length === 0) return;
    const parsed = [...new Map(entries.map((entry) => indexEntrySchema.parse(entry)).map((entry) => [entry.sequence, entry])).values()].sort(
      (a, b) => a.sequence - b.sequence,
    );
    await this.transaction(within, async (client) => {
      const seqs = parsed.map((entry) => entry.sequence);
      // New units get an empty entry first, so every unit is then locked the same way, in sequence order.
      const created = await client.query<{ seq: string; scope: string }>(
        `INSERT INTO memory_search_docs (seq, scope, unit_id, previous_seq, active, tokens)
         SELECT seq, scope, unit_id, NULL, TRUE, '{}' FROM unnest($1::bigint[], $2::text[], $3::text[]) AS u(seq, scope, unit_id) ORDER BY seq
         ON CONFLICT (seq) DO NOTHING RETURNING seq, scope`,
        [seqs, parsed.map((entry) => entry.scope), parsed.map((entry) => entry.id)],
      );
      const old = await this.lockDocs(client, seqs);
      const removed: Array<[string, number]> = [];
      const added: Array<[string, number]> = [];
      const df = new Map<string, number>();
      for (const entry of parsed) {
        const before = new Set(old.get(entry.sequence) ?? []);
        const after = new Set(entry.tokens.map(foldToken));
        for (const token of before)
          if (!after.has(token)) {
            removed.push([token, entry.sequence]);
            if (isOwnToken(token)) df.set(token, (df.get(token) ?? 0) - 1);
          }
        for (const token of after)
          if (!before.has(token)) {
            added.push([token, entry.sequence]);
            if (isOwnToken(token)) df.set(token, (df.get(token) ?? 0) + 1);
          }
      }
      await this.changePostings(client, removed, added, df);
      await client.query(
        `UPDATE memory_search_docs d SET unit_id = u.unit_id, previous_seq = u.previous_seq, active = u.active, tokens = u.tokens, words_version = $6
         FROM (SELECT seq, unit_id, previous_seq, active, string_to_array(tokens, ' ') AS tokens
               FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::boolean[], $5::text[]) AS x(seq, unit_id, previous_seq, active, tokens)) u
         WHERE d.seq = u.seq`,
        [
          seqs,
          parsed.map((entry) => entry.id),
          parsed.map((entry) => entry.previous),
          parsed.map((entry) => entry.active),
          parsed.map((entry) => [...new Set(entry.tokens.map(foldToken))].join(' ')),
          // The bundled words this node indexes with: memory.reindex rewrites entries of older ones (memory-reindex.ts).
          indexWordsVersion(),
        ],
      );
      const sizes = new Map<string, number>();
      for (const row of created.rows) sizes.set(row.scope, (sizes.get(row.scope) ?? 0) + 1);
      await this.changeSizes(client, sizes);
    });
  }

  /**
   * Deletes units' index entries (the units are deleted): their postings go, df and scope sizes
   * follow. `within`: the caller's transaction (forgetting a scope deletes the units in the same one).
   */
  async remove(sequences: readonly number[], within?: PoolClient): Promise<void> {
    if (sequences.length === 0) return;
    const seqs = [...new Set(sequences)].sort((a, b) => a - b);
    await this.transaction(within, async (client) => {
      const old = await this.lockDocs(client, seqs);
      const removed: Array<[string, number]> = [];
      const df = new Map<string, number>();
      for (const [seq, tokens] of old)
        for (const token of tokens) {
          removed.push([token, seq]);
          if (isOwnToken(token)) df.set(token, (df.get(token) ?? 0) - 1);
        }
      await this.changePostings(client, removed, [], df);
      const gone = await client.query<{ scope: string }>('DELETE FROM memory_search_docs WHERE seq = ANY($1::bigint[]) RETURNING scope', [seqs]);
      const sizes = new Map<string, number>();
      for (const row of gone.rows) sizes.set(row.scope, (sizes.get(row.scope) ?? 0) - 1);
      await this.changeSizes(client, sizes);
    });
  }

  /** A unit superseded (or restored): search leaves inactive units out unless asked. */
  async setActive(sequence: number, active: boolean): Promise<void> {
    await this.pool.query('UPDATE memory_search_docs SET active = $2 WHERE seq = $1', [sequence, active]);
  }

  async scopeSize(scope: string): Promise<number> {
    const result = await this.pool.query<{ units: number }>('SELECT units FROM memory_scope_sizes WHERE scope = $1', [scope]);
    return result.rows[0]?.units ?? 0;
  }

  /** A token's document frequency as kept (unmarked tokens): for tests and `metaclaw doctor`. */
  async documentFrequency(scope: string, term: string): Promise<number> {
    const result = await this.pool.query<{ df: number }>('SELECT df FROM memory_term_stats WHERE token = $1', [tokenOf(scope, term)]);
    return result.rows[0]?.df ?? 0;
  }

  /**
   * Keyword candidates in one scope, ranked exactly as `MemoryStore.search` ranks them: the best
   * `limit` units (active ones unless `includeInactive`), with the IDF of every query term. Two
   * round trips and no transaction: the time limit is the pool's (see `searchPool`). Throws
   * MemorySearchTimeout when the database takes longer than that.
   */
  async search(scope: string, terms: readonly string[], limit: number, options: SearchOptions = {}): Promise<PgKeywordSearch> {
    if (terms.length === 0) return { hits: [], idf: new Map(), unknown: new Set(), size: await this.scopeSize(scope) };
    const client = await this.connect();
    try {
      return await this.searchIn(client, scope, terms, limit, options);
    } catch (error) {
      if ((error as { code?: string }).code === '57014') throw new MemorySearchTimeout();
      throw error;
    } finally {
      client.release();
    }
  }

  /**
   * The IDF of each term in a scope as search weighs it, and whether any unit holds it itself: what
   * `MemoryStore.termWeights` answers (the core block ranks rules with these when they overflow it).
   */
  async termWeights(scope: string, terms: readonly string[]): Promise<Map<string, { idf: number; held: boolean }>> {
    if (terms.length === 0) return new Map();
    const client = await this.connect();
    try {
      const { byTerm, size } = await this.lists(client, scope, terms, false);
      return new Map(
        terms.map((term) => {
          const postings = byTerm.get(term)?.postings ?? { rows: [], partial: [], kindred: [], frequency: 0 };
          return [term, { idf: termIdf(term, postings, size), held: postings.rows.length > 0 }];
        }),
      );
    } catch (error) {
      throw (error as { code?: string }).code === '57014' ? new MemorySearchTimeout() : error;
    } finally {
      client.release();
    }
  }

  private async searchIn(client: PoolClient, scope: string, terms: readonly string[], limit: number, options: SearchOptions): Promise<PgKeywordSearch> {
    const { byTerm, previous, sessions, size } = await this.lists(client, scope, terms, options.asWritten ?? false);
    const none = { postings: { rows: [], partial: [], kindred: [], frequency: 0 }, after: [], before: [] };
    const source: PostingSource = {
      postings: (term) => (byTerm.get(term) ?? none).postings,
      neighbours: (term) => byTerm.get(term) ?? none,
      previousOf: (rowids) =>
        [...rowids]
          .sort((a, b) => a - b)
          .flatMap((rowid) => {
            const before = previous.get(rowid);
            return before === undefined ? [] : [{ rowid, previous: before }];
          }),
      sessions: options.asWritten
        ? undefined
        : (rowids) =>
            [...rowids]
              .sort((a, b) => a - b)
              .flatMap((rowid) => {
                const found = sessions.get(rowid);
                return found ? [found] : [];
              }),
    };
    const { ranked, idf, unknown } = rankPostings(source, terms, size, options.translationWeights);
    const hits: SearchHit[] = [];
    // Units are checked `limit` at a time: inactive ones are few, so one round is the rule.
    for (let offset = 0; offset < ranked.length && hits.length < limit; offset += limit) {
      const slice = ranked.slice(offset, offset + limit);
      const found = await (options.units ?? ((sequences) => this.docs(client, sequences)))(
        slice.map(({ rowid }) => rowid),
        client,
      );
      for (const { rowid, weight, matched, related, partial, kindred, session } of slice) {
        const unit = found.get(rowid);
        if (!unit || (!options.includeInactive && !unit.active)) continue;
        hits.push({ id: unit.id, sequence: rowid, weight, matched, related, partial, kindred, session });
        if (hits.length === limit) break;
      }
    }
    return { hits, idf, unknown, size };
  }

  /** Every posting list the ranking may read for these terms (one statement, and a prefix look-up for a rare unknown English word), and the scope's size. */
  private async lists(client: PoolClient, scope: string, terms: readonly string[], asWritten: boolean) {
    const tokens = terms.map((term) => tokenOf(scope, term));
    // Named: prepared once per pooled connection, so planning (0.5–1.3 ms for this statement) is not paid per search.
    const lists = await client.query({
      name: 'memory-search-lists',
      text: LISTS_SQL,
      values: [
        tokens,
        terms.map((term) => hasEnglishForms(term) && !asWritten),
        GLOSS_MARK,
        KINDRED_MARK,
        scope,
        POSTINGS_PER_TERM,
        KINDRED_POSTINGS,
        NEIGHBOUR_MAX_FREQUENCY,
        AFTER_MARK,
        BEFORE_MARK,
        // The search of feedback terms lends nothing through sessions (see PostingSource.sessions): none is read.
        asWritten ? 0 : SESSION_MAX_FREQUENCY,
        SESSION_FOLLOWERS,
      ],
    });
    const byTerm = new Map<string, { postings: TermPostings; after: number[]; before: number[] }>();
    const previous = new Map<number, number>();
    const sessions = new Map<number, { rowid: number; opening: number; followers: number[] }>();
    let size = 0;
    for (const raw of lists.rows) {
      const row = listsRowSchema.parse(raw);
      const term = terms[row.i - 1]!;
      const rows = parseList(row.own);
      const before: number[] = [];
      for (const pair of row.before ? row.before.split(',') : []) {
        const [seq, prev] = pair.split(':');
        before.push(Number(seq));
        if (prev) previous.set(Number(seq), Number(prev));
      }
      for (const held of row.sessions ? row.sessions.split(',') : []) {
        const [seq, opening, followers] = held.split(':');
        sessions.set(Number(seq), { rowid: Number(seq), opening: Number(opening), followers: followers ? followers.split(' ').map(Number) : [] });
      }
      const frequency = rows.length < POSTINGS_PER_TERM ? rows.length : (row.df ?? rows.length);
      byTerm.set(term, { postings: { rows, partial: parseList(row.gloss), kindred: parseList(row.kindred), frequency }, after: parseList(row.after), before });
      size = row.size ?? 0;
    }
    // An English word no unit holds, itself or glossed, may be the start of longer words: rare, so a second look-up.
    for (const [term, { postings }] of byTerm)
      if (!asWritten && needsPrefix(term, postings.rows, postings.partial)) {
        const prefix = await client.query<{ seqs: string | null }>({
          name: 'memory-search-prefix',
          text: PREFIX_SQL,
          values: [`${tokenOf(scope, term).replace(/[\\%_]/g, '\\$&')}%`, POSTINGS_PER_TERM],
        });
        postings.partial = parseList(prefix.rows[0]?.seqs ?? null);
      }
    return { byTerm, previous, sessions, size };
  }

  /** Every connection busy past the pool's connection timeout is as late as a slow statement. */
  private connect(): Promise<PoolClient> {
    return this.pool.connect().catch((error: Error) => {
      throw /timeout/i.test(error.message) ? new MemorySearchTimeout() : error;
    });
  }

  /** Ids and statuses of units, from this index's copy. */
  private async docs(client: PoolClient, sequences: readonly number[]): Promise<Map<number, { id: string; active: boolean }>> {
    const result = await client.query({
      name: 'memory-search-docs',
      text: 'SELECT seq, unit_id, active FROM memory_search_docs WHERE seq = ANY($1::bigint[])',
      values: [sequences],
    });
    return new Map(result.rows.map((raw) => docRowSchema.parse(raw)).map((doc) => [doc.seq, { id: doc.unit_id, active: doc.active }]));
  }

  /** Locks units' entries in sequence order; their tokens as stored. */
  private async lockDocs(client: PoolClient, seqs: readonly number[]): Promise<Map<number, string[]>> {
    const result = await client.query<{ seq: string; tokens: string[] }>(
      'SELECT seq, tokens FROM memory_search_docs WHERE seq = ANY($1::bigint[]) ORDER BY seq FOR UPDATE',
      [seqs],
    );
    return new Map(result.rows.map((row) => [Number(row.seq), row.tokens]));
  }

  /** Postings out and in, then df counters in token order (the order every writer locks them in). */
  private async changePostings(client: PoolClient, removed: Array<[string, number]>, added: Array<[string, number]>, df: Map<string, number>): Promise<void> {
    if (removed.length > 0)
      await client.query('DELETE FROM memory_postings p USING unnest($1::text[], $2::bigint[]) AS r(token, seq) WHERE p.token = r.token AND p.seq = r.seq', [
        removed.map(([token]) => token),
        removed.map(([, seq]) => seq),
      ]);
    if (added.length > 0)
      await client.query('INSERT INTO memory_postings (token, seq) SELECT * FROM unnest($1::text[], $2::bigint[]) ON CONFLICT DO NOTHING', [
        added.map(([token]) => token),
        added.map(([, seq]) => seq),
      ]);
    const changes = [...df].filter(([, delta]) => delta !== 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    if (changes.length === 0) return;
    await client.query(
      `INSERT INTO memory_term_stats (token, df) SELECT token, delta FROM unnest($1::text[], $2::int[]) AS c(token, delta) ORDER BY token COLLATE "C"
       ON CONFLICT (token) DO UPDATE SET df = memory_term_stats.df + excluded.df`,
      [changes.map(([token]) => token), changes.map(([, delta]) => delta)],
    );
    await client.query('DELETE FROM memory_term_stats WHERE token = ANY($1::text[]) AND df <= 0', [changes.map(([token]) => token)]);
  }

  private async changeSizes(client: PoolClient, sizes: Map<string, number>): Promise<void> {
    const changes = [...sizes].filter(([, delta]) => delta !== 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    if (changes.length === 0) return;
    await client.query(
      `INSERT INTO memory_scope_sizes (scope, units) SELECT scope, delta FROM unnest($1::text[], $2::int[]) AS c(scope, delta) ORDER BY scope COLLATE "C"
       ON CONFLICT (scope) DO UPDATE SET units = memory_scope_sizes.units + excluded.units`,
      [changes.map(([scope]) => scope), changes.map(([, delta]) => delta)],
    );
  }

  private async transaction(within: PoolClient | undefined, work: (client: PoolClient) => Promise<void>): Promise<void> {
    return within ? work(within) : inTransaction(this.pool, work);
  }
}
