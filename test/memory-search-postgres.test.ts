import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { silentLogger } from '../src/logging/index.js';
import { MemoryRetriever } from '../src/memory/retrieval.js';
import { scopedTerm } from '../src/memory/keyword-index.js';
import { MemoryStore, type KeywordSearch } from '../src/memory/store.js';
import type { MemoryDraft } from '../src/memory/types.js';
import { openDatabase } from '../src/store/index.js';
import { migratePostgres, openPool } from '../src/store/postgres/index.js';
import { foldToken, MemorySearchTimeout, PgMemorySearch, searchPool, type PgKeywordSearch } from '../src/store/postgres/memory-search.js';
import { uniqueTerms } from '../src/text/index.js';
import { postgresSkip, startPostgres, type TestPostgres } from './support/postgres.js';

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 10, 20, 12);
const ALICE = 'user:alice';
const BOB = 'user:bob';
const JAPANESE_FACT = '自転車は駅の近くの駐輪場に置いてあります。';
const JAPANESE_QUERY = '自転車はどこに置いた？';

/** A member's memory: extracted facts, two sessions of raw turns (neighbour credits), a Chinese and a Japanese aside, search keys. */
function aliceMemory(): MemoryDraft[] {
  const fact = (content: string, days: number, extra: Partial<MemoryDraft> = {}): MemoryDraft => ({
    scope: ALICE,
    type: 'semantic',
    content,
    origin: 'extractor',
    observedAt: NOW - days * DAY,
    ...extra,
  });
  const turn = (session: string, speaker: 'user' | 'assistant', content: string, days: number): MemoryDraft => ({
    scope: ALICE,
    type: 'episodic',
    content,
    origin: 'raw_turn',
    speaker,
    sourceSession: session,
    observedAt: NOW - days * DAY,
  });
  const drafts: MemoryDraft[] = [
    fact('My greyhound Pepper is afraid of thunderstorms and hides under the desk.', 40, { type: 'preference', importance: 0.7 }),
    fact('The physiotherapist said to keep icing the left knee after every run.', 12, { importance: 0.8 }),
    fact('Our staging database runs PostgreSQL 15 on the old rack in Leeds.', 90, { type: 'project_state' }),
    fact('I prefer answers with code first and the explanation after it.', 200, { type: 'preference', core: true }),
    fact('The quarterly budget review moved to the second Thursday of the month.', 25, { type: 'project_state' }),
    fact('Deployments to production need two approvals since the outage in March.', 60, { type: 'project_state', importance: 0.9 }),
    fact('Pepper eats grain-free kibble; chicken upsets her stomach.', 33, { searchKeys: ['What does the dog eat?'] }),
    fact('我的膝盖受伤了，医生建议休息两周。', 15, { type: 'episodic' }),
    fact('The team lunch is every Friday at the Vietnamese place near the station.', 5),
    fact('I am learning Japanese with a tutor on Tuesday evenings.', 70),
    fact('The old laptop battery swells when it charges overnight; replace it.', 100),
    fact('We use pnpm in the monorepo, never npm install at the root.', 45, { type: 'procedural_observation' }),
    turn('s1', 'user', 'Can you suggest a stretch for a sore knee before running?', 11),
    turn('s1', 'assistant', 'Try slow quad stretches and calf raises, and stop if the pain gets sharp.', 11),
    turn('s1', 'user', 'Thanks, the calf raises helped a lot this morning.', 10),
    turn('s2', 'user', 'The migration script failed on the staging database again.', 3),
    turn('s2', 'assistant', 'Check whether the lock timeout is shorter than the longest table rewrite.', 3),
    turn('s2', 'user', 'Raising the lock timeout to thirty seconds fixed it.', 3),
    fact(JAPANESE_FACT, 8, { type: 'episodic' }),
  ];
  // A few hundred diary lines sharing common words, so a common term's list is capped and its df read from the counters.
  const places = ['office', 'garden', 'kitchen', 'station', 'library', 'studio'];
  const drinks = ['coffee', 'green tea', 'coffee', 'hot chocolate'];
  for (let day = 0; day < 240; day++)
    drafts.push(
      fact(
        `On day ${day} I had ${drinks[day % drinks.length]} in the ${places[day % places.length]} and planned the ${day % 7 === 0 ? 'budget' : 'week'}.`,
        300 - day,
        {
          type: 'episodic',
          origin: 'manual',
        },
      ),
    );
  return drafts;
}

const QUERIES = [
  'What is my dog scared of?',
  'what did the physio say about my knee',
  'which database does staging run',
  'how do I stretch before a run',
  'what fixed the migration on staging',
  'when is the budget review',
  'where did I have coffee in the garden',
  'coffee',
  'what did I plan for the week in the kitchen',
  'what does Pepper eat',
  '膝盖怎么了',
  JAPANESE_QUERY,
  'who approves deployments to production',
  'lunch on Friday',
  'tell me about the laptop battery',
  'zeppelin maintenance schedule',
];

/** Both engines' keyword candidates, side by side: ids in order, weights, how each term matched, IDFs. */
function comparable(search: KeywordSearch | PgKeywordSearch) {
  const hits =
    'hits' in search
      ? search.hits.map((hit) => ({
          id: hit.id,
          weight: hit.weight,
          matched: hit.matched,
          related: hit.related,
          partial: hit.partial,
          kindred: hit.kindred,
          session: hit.session,
        }))
      : search.candidates.map((candidate) => ({
          id: candidate.unit.id,
          weight: candidate.bm25,
          matched: [...candidate.terms],
          related: [...candidate.related],
          partial: [...(candidate.partial ?? [])],
          kindred: [...(candidate.kindred ?? [])],
          session: [...(candidate.session ?? [])],
        }));
  return { hits, idf: [...search.idf].sort(), unknown: [...search.unknown].sort() };
}

describe('memory keyword search in PostgreSQL', { skip: postgresSkip() }, () => {
  let server: TestPostgres;
  let pool: pg.Pool;
  let url: string;
  let search: PgMemorySearch;
  const db = openDatabase(':memory:');
  const store = new MemoryStore(db);
  const ids: string[] = [];

  /**
   * Writes every unit's entry, as SQLite holds it now, into PostgreSQL, and the units themselves
   * (the search reads the sessions of raw turns from memory_units, as the team store holds them).
   */
  async function mirror(): Promise<void> {
    const entries = [...store.iterate()].map((unit) => ({ ...store.indexEntry(unit.id)!, id: unit.id, active: unit.status === 'active' }));
    await search.index(entries);
    const rows = db.prepare('SELECT rowid, * FROM memory_units ORDER BY rowid').all() as Array<Record<string, unknown>>;
    await pool.query('DELETE FROM memory_units');
    for (const row of rows) {
      const columns = Object.keys(row);
      await pool.query(
        `INSERT INTO memory_units (${columns.join(', ')}) OVERRIDING SYSTEM VALUE VALUES (${columns.map((_, index) => `$${index + 1}`).join(', ')})`,
        columns.map((column) => row[column]),
      );
    }
  }

  /** The retriever's keyword search on each engine for the same query (the retriever chooses terms, translations and depth). */
  async function bothRecalls(scope: string, query: string) {
    const calls: Array<Parameters<MemoryStore['search']>> = [];
    const recording = new Proxy(store, {
      get: (target, key) =>
        key === 'search'
          ? (...args: Parameters<MemoryStore['search']>) => {
              calls.push(args);
              return target.search(...args);
            }
          : (Reflect.get(target, key) as unknown),
    });
    const languages = () => ['zh', 'ja'] as const;
    const request = { scope, query, limit: 10, minRelevance: 0.1, now: new Date(NOW) };
    const sqlite = await new MemoryRetriever(recording, undefined, silentLogger(), 'keyword', languages).recall(request);
    // Each keyword search the retriever made (a second one when feedback widens the query), run on PostgreSQL.
    const fromPg = await Promise.all(
      calls.map(([, terms, depth, includeInactive, translationWeights, asWritten]) =>
        search.search(scope, terms, depth, { includeInactive, translationWeights, asWritten }),
      ),
    );
    // The same ranking, fed PostgreSQL's candidates (units read by id, as the team store will) and scope size.
    let answered = 0;
    const pgStore = new Proxy(store, {
      get: (target, key) =>
        key === 'search'
          ? (): KeywordSearch => {
              const found = fromPg[answered++]!;
              return {
                candidates: found.hits.map((hit) => ({
                  unit: target.get(hit.id)!,
                  terms: new Set(hit.matched),
                  related: new Set(hit.related),
                  partial: new Set(hit.partial),
                  kindred: new Set(hit.kindred),
                  session: new Set(hit.session),
                  bm25: hit.weight,
                })),
                idf: found.idf,
                unknown: found.unknown,
              };
            }
          : key === 'scopeSize'
            ? () => fromPg[0]!.size
            : (Reflect.get(target, key) as unknown),
    });
    const postgres = await new MemoryRetriever(pgStore, undefined, silentLogger(), 'keyword', languages).recall(request);
    assert.equal(answered, calls.length, 'both engines searched as often');
    return { sqlite, postgres, searches: calls.length, keyword: { sqlite: store.search(...calls[0]!), postgres: fromPg[0]! } };
  }

  before(async () => {
    server = await startPostgres();
    url = server.createDatabase('recall');
    pool = openPool(url, { max: 4 });
    search = new PgMemorySearch(pool);
    await migratePostgres(pool); // the search tables come with the team store's schema (migration 18)
    for (const draft of aliceMemory()) ids.push(store.add(draft)!.id);
    store.add({
      scope: BOB,
      type: 'semantic',
      content: 'Bob keeps his bike in the garden shed and drinks coffee black.',
      origin: 'manual',
      observedAt: NOW - DAY,
    });
    store.add({ scope: BOB, type: 'semantic', content: 'The office coffee machine is broken until Monday.', origin: 'manual', observedAt: NOW - 2 * DAY });
    await mirror();
  });

  after(async () => {
    await pool?.end();
    server?.stop();
  });

  test('keyword candidates, IDFs and full recall come out identical to SQLite for every query', async () => {
    let compared = 0;
    let widened = 0;
    for (const query of QUERIES) {
      const { sqlite, postgres, keyword, searches } = await bothRecalls(ALICE, query);
      if (searches > 1) widened++;
      assert.deepEqual(comparable(keyword.postgres), comparable(keyword.sqlite), `keyword candidates for "${query}"`);
      assert.deepEqual(
        postgres.map((hit) => [hit.unit.id, hit.score]),
        sqlite.map((hit) => [hit.unit.id, hit.score]),
        `recall for "${query}"`,
      );
      compared += sqlite.length;
    }
    // The set is not vacuous: most queries recall something, and capped lists and neighbour credits occur.
    assert.ok(compared > 40, `${compared} hits compared`);
    assert.ok(widened > 0, 'some queries were widened by feedback (a second search, terms as written)');
    const japanese = await bothRecalls(ALICE, JAPANESE_QUERY);
    assert.equal(japanese.postgres[0]?.unit.content, JAPANESE_FACT, 'a Japanese question recalls the Japanese fact first');
    const planned = await search.search(ALICE, uniqueTerms('planned'), 500);
    assert.equal(planned.hits.filter((hit) => hit.matched.length > 0).length, 200, 'a common term reads its newest 200 holders');
    assert.equal(await search.documentFrequency(ALICE, uniqueTerms('planned')[0]!), 240);
    const knee = (await bothRecalls(ALICE, 'how do I stretch before a run')).keyword.postgres;
    assert.ok(
      knee.hits.some((hit) => hit.related.length > 0),
      'a neighbouring turn lends its words',
    );
    const fixed = (await bothRecalls(ALICE, 'what fixed the migration on staging')).keyword.postgres;
    assert.ok(
      fixed.hits.some((hit) => hit.session.length > 0),
      "a session's first user turn lends its words to the user's later turns",
    );
  });

  test('a term of one scope is never found from another, and each scope counts its own units', async () => {
    const fromBob = await search.search(BOB, uniqueTerms('greyhound knee physiotherapist staging'), 20);
    assert.deepEqual(fromBob.hits, []);
    assert.deepEqual([...fromBob.unknown].sort(), [...uniqueTerms('greyhound knee physiotherapist staging')].sort());
    const bobCoffee = await search.search(BOB, uniqueTerms('coffee'), 20);
    assert.equal(bobCoffee.hits.length, 2);
    assert.ok(bobCoffee.hits.every((hit) => store.get(hit.id)!.scope === BOB));
    assert.equal(await search.scopeSize(BOB), 2);
    assert.equal(await search.scopeSize(ALICE), store.scopeSize(ALICE));
  });

  test('a deleted unit leaves results and df; a superseded one leaves default results; rankings still agree', async () => {
    const greyhound = ids[0]!;
    const dfBefore = await search.documentFrequency(ALICE, 'greyhound');
    assert.ok((await search.search(ALICE, ['greyhound'], 10)).hits.some((hit) => hit.id === greyhound));
    const sequence = store.get(greyhound)!.sequence;
    store.delete(greyhound);
    await search.remove([sequence]);
    assert.equal(await search.documentFrequency(ALICE, 'greyhound'), dfBefore - 1);
    assert.ok(!(await search.search(ALICE, ['greyhound'], 10)).hits.some((hit) => hit.id === greyhound));
    // The turn after a deleted raw turn is re-indexed (its neighbour words change): rewriting an entry is an update.
    const middle = ids[13]!; // the assistant's stretch advice, between two user turns
    const middleSequence = store.get(middle)!.sequence;
    store.delete(middle);
    await search.remove([middleSequence]);
    const replaced = ids[5]!;
    store.supersede(replaced, ids[4]!);
    await search.setActive(store.get(replaced)!.sequence, false);
    store.update(ids[9]!, { content: 'I am learning Korean with a tutor on Wednesday evenings.' });
    await mirror();
    assert.equal(await search.scopeSize(ALICE), store.scopeSize(ALICE));
    for (const query of [...QUERIES, 'learning Korean', 'production approvals']) {
      const { sqlite, postgres, keyword } = await bothRecalls(ALICE, query);
      assert.deepEqual(comparable(keyword.postgres), comparable(keyword.sqlite), `keyword candidates for "${query}" after changes`);
      assert.deepEqual(
        postgres.map((hit) => hit.unit.id),
        sqlite.map((hit) => hit.unit.id),
        `recall for "${query}" after changes`,
      );
    }
    assert.ok(!(await search.search(ALICE, uniqueTerms('production approvals'), 10)).hits.some((hit) => hit.id === replaced));
    // A store that reads its units itself may hand that read to the search: the same hits.
    const units = async (sequences: readonly number[]) =>
      new Map(
        sequences.flatMap((sequence) => {
          const unit = store.byRowid(sequence);
          return unit ? [[sequence, { id: unit.id, active: unit.status === 'active' }] as const] : [];
        }),
      );
    const terms = uniqueTerms('production approvals budget coffee');
    assert.deepEqual((await search.search(ALICE, terms, 30, { units })).hits, (await search.search(ALICE, terms, 30)).hits);
    assert.ok((await search.search(ALICE, uniqueTerms('production approvals'), 10, { includeInactive: true })).hits.some((hit) => hit.id === replaced));
  });

  test('writers racing on the same terms from several connections neither deadlock nor miscount', async () => {
    const scope = 'team:race';
    const words = ['deploy', 'budget', 'garden', 'coffee', 'review', 'laptop', 'station', 'tutor'];
    // Each unit holds a different subset, listed in a different order: writers lock shared counters at once.
    const entries = Array.from({ length: 60 }, (_, index) => {
      const held = words.filter((_, word) => (index + word) % 3 !== 0).sort(() => (index % 2 === 0 ? 1 : -1));
      return { sequence: 100_000 + index, id: `race_${index}`, scope, previous: null, tokens: held.map((word) => scopedTerm(scope, word)) };
    });
    await Promise.all(Array.from({ length: 12 }, (_, batch) => search.index(entries.filter((_, index) => index % 12 === batch))));
    await Promise.all(entries.filter((_, index) => index % 4 === 0).map((entry) => search.remove([entry.sequence])));
    const kept = entries.filter((_, index) => index % 4 !== 0);
    assert.equal(await search.scopeSize(scope), kept.length);
    for (const word of words)
      assert.equal(await search.documentFrequency(scope, word), kept.filter((entry) => entry.tokens.includes(scopedTerm(scope, word))).length, word);
  });

  test('a search the database cannot answer in time fails fast with MemorySearchTimeout', async () => {
    const blocker = await pool.connect();
    try {
      await blocker.query('BEGIN; LOCK TABLE memory_postings IN ACCESS EXCLUSIVE MODE');
      const started = Date.now();
      const impatient = searchPool(url, 100);
      await assert.rejects(new PgMemorySearch(impatient).search(ALICE, uniqueTerms('coffee'), 10), MemorySearchTimeout);
      await impatient.end();
      assert.ok(Date.now() - started < 2_000);
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
  });

  test('a search connection the server ends while idle ends neither the process nor the pool: the next search is answered', async () => {
    const searching = searchPool(url, 2_000, 1);
    try {
      const first = (await new PgMemorySearch(searching).search(ALICE, uniqueTerms('coffee'), 10)).hits;
      assert.ok(first.length > 0);
      // The search pool's connections carry no application name; the test's own pool is 'metaclaw'.
      const ended = await pool.query<{ done: boolean }>(
        `SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = ''`,
      );
      assert.ok(ended.rows.some((row) => row.done));
      for (let waited = 0; searching.totalCount > 0 && waited < 5_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(searching.totalCount, 0, 'the pool dropped the ended connection');
      assert.deepEqual((await new PgMemorySearch(searching).search(ALICE, uniqueTerms('coffee'), 10)).hits, first);
    } finally {
      await searching.end();
    }
  });
});

describe('memory search tokens', () => {
  test('tokens are folded as FTS5 folds them (Latin diacritics off, other scripts kept)', () => {
    const db = openDatabase(':memory:');
    const words = ['café', 'ñandú', 'ǖber', 'ς', 'straße', 'がぎ', 'άλφα', 'ёлка', 'Øre', 'łódź', 'façade', '膝盖'];
    db.prepare('INSERT INTO memory_fts (rowid, terms) VALUES (1, ?)').run(words.join(' '));
    const folded = db.prepare<[], string>('SELECT term FROM memory_fts_vocab').pluck().all();
    assert.deepEqual(words.map((word) => foldToken(word.toLowerCase())).sort(), [...folded].sort());
  });
});
