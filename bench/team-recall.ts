/**
 * Team-mode memory recall latency: keyword search in PostgreSQL (src/store/postgres/memory-search.ts)
 * over one scope of 100k and 1M synthetic units, and the SQLite path (MemoryStore.search) over the
 * same 100k units for comparison. Needs PostgreSQL server binaries (Debian's `postgresql`): a
 * throwaway cluster is started and removed.
 *
 * Units hold 10–30 distinct terms drawn from a Zipf–Mandelbrot vocabulary of 200k words (the commonest
 * word is in ~17% of units, as the commonest content word of chat turns is); queries have 2–8 terms:
 * half drawn the same way (common words), four in ten rarer words, one in ten a word no unit holds.
 * Timed: the whole search as the request path calls it (one pooled connection, a transaction with
 * its statement timeout, every round trip), after VACUUM ANALYZE and a warm-up.
 *
 * Standalone: `node --import tsx bench/team-recall.ts [--units 100000,1000000] [--queries 300]`
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { MemoryStore } from '../src/memory/store.js';
import { scopedTerm } from '../src/memory/keyword-index.js';
import { openDatabase } from '../src/store/index.js';
import { POSTGRES_MEMORY_SEARCH_V18 } from '../src/store/postgres-schema.js';
import { MemorySearchTimeout, PgMemorySearch, searchPool } from '../src/store/postgres/memory-search.js';
import { tokenize } from '../src/text/index.js';
import { startPostgres } from '../test/support/postgres.js';
import { summarize, type LatencySummary } from './stats.js';
import { mulberry32 } from '../test/support/random.js';
import { numberOption, textOption } from './options.js';

const SCOPE = 'team:bench';
const VOCABULARY = 200_000;
/** Zipf–Mandelbrot offset: flattens the head so the commonest word is in ~17% of units, not ~80%. */
const OFFSET = 10;
/** The depth the retriever asks for at limit 10 (`max(24, limit * 4)`). */
const DEPTH = 40;
const WARM_UP = 50;
const BATCH = 200_000;
/** Generous for a bench on a shared machine; a timed-out search counts (see the timeouts column). */
const SEARCH_TIMEOUT_MS = 1_000;

/** The word of a vocabulary rank: letters only, ending in x so the stemmer leaves it as it is. */
function word(rank: number): string {
  let letters = '';
  for (let n = rank; n > 0; n = Math.floor(n / 26)) letters += String.fromCharCode(97 + (n % 26));
  return `q${letters}x`;
}

/** A rank drawn from the Zipf–Mandelbrot distribution (density ∝ 1 / (rank + OFFSET)) by inverting its CDF. */
function zipf(next: () => number): number {
  const span = (VOCABULARY + 1 + OFFSET) / (1 + OFFSET);
  return Math.min(VOCABULARY, Math.floor((1 + OFFSET) * Math.pow(span, next()) - OFFSET));
}

/** Unit `seq`'s vocabulary ranks (10–30 distinct), the same whichever engine asks. */
function unitRanks(seq: number): number[] {
  const next = mulberry32(seq * 2654435761);
  const count = 10 + Math.floor(next() * 21);
  const ranks = new Set<number>();
  while (ranks.size < count) ranks.add(zipf(next));
  return [...ranks];
}

function unitTerms(seq: number): string[] {
  return unitRanks(seq).map(word);
}

export function queries(count: number): string[][] {
  const next = mulberry32(7);
  const list: string[][] = [];
  for (let i = 0; i < count; i++) {
    const size = 2 + Math.floor(next() * 7);
    const terms = new Set<string>();
    while (terms.size < size) {
      const kind = next();
      if (kind < 0.5) terms.add(word(zipf(next)));
      else if (kind < 0.9) terms.add(word(1_000 + Math.floor(next() * (VOCABULARY - 1_000))));
      else terms.add(`zz${word(Math.floor(next() * 1e6))}`);
    }
    list.push([...terms]);
  }
  return list;
}

export async function load(pool: pg.Pool, units: number): Promise<number> {
  const started = Date.now();
  await pool.query(POSTGRES_MEMORY_SEARCH_V18);
  // Bulk load: keys are built once at the end (a sorted build), not row by row.
  await pool.query(
    `ALTER TABLE memory_postings DROP CONSTRAINT memory_postings_pkey; ALTER TABLE memory_search_docs DROP CONSTRAINT memory_search_docs_pkey;
     ALTER TABLE memory_postings SET (autovacuum_enabled = false); ALTER TABLE memory_search_docs SET (autovacuum_enabled = false)`,
  );
  // Words go once into a vocabulary table; units travel as vocabulary ranks (integers parse far faster than text).
  const ranks = Array.from({ length: VOCABULARY }, (_, index) => index + 1);
  await pool.query('CREATE UNLOGGED TABLE bench_vocabulary AS SELECT rank, token FROM unnest($1::int[], $2::text[]) AS v(rank, token)', [
    ranks,
    ranks.map((rank) => scopedTerm(SCOPE, word(rank))),
  ]);
  await pool.query('ALTER TABLE bench_vocabulary ADD PRIMARY KEY (rank)');
  let held: number[] = [];
  let seqs: number[] = [];
  const flush = async () => {
    await pool.query(
      `WITH p AS (SELECT v.token, u.seq FROM unnest($1::int[], $2::bigint[]) AS u(rank, seq) JOIN bench_vocabulary v USING (rank)),
            postings AS (INSERT INTO memory_postings (token, seq) SELECT token, seq FROM p)
       INSERT INTO memory_search_docs (seq, scope, unit_id, previous_seq, active, tokens)
       SELECT seq, $3, 'mem_' || seq, NULL, TRUE, array_agg(token) FROM p GROUP BY seq`,
      [held, seqs, SCOPE],
    );
    held = [];
    seqs = [];
  };
  for (let seq = 1; seq <= units; seq++) {
    for (const rank of unitRanks(seq)) {
      held.push(rank);
      seqs.push(seq);
    }
    if (held.length >= BATCH) await flush();
  }
  if (held.length > 0) await flush();
  await pool.query('DROP TABLE bench_vocabulary');
  await pool.query('ALTER TABLE memory_postings ADD PRIMARY KEY (token, seq); ALTER TABLE memory_search_docs ADD PRIMARY KEY (seq)');
  await pool.query('INSERT INTO memory_term_stats (token, df) SELECT token, count(*) FROM memory_postings GROUP BY token');
  await pool.query('INSERT INTO memory_scope_sizes (scope, units) VALUES ($1, $2)', [SCOPE, units]);
  await pool.query('ALTER TABLE memory_postings RESET (autovacuum_enabled); ALTER TABLE memory_search_docs RESET (autovacuum_enabled)');
  await pool.query('VACUUM ANALYZE');
  return (Date.now() - started) / 1000;
}

export async function timePostgres(search: PgMemorySearch, list: string[][]): Promise<{ latency: LatencySummary; timeouts: number; hits: number }> {
  for (const terms of list.slice(0, WARM_UP)) await search.search(SCOPE, terms, DEPTH);
  const samples: number[] = [];
  let timeouts = 0;
  let hits = 0;
  for (const terms of list) {
    const started = performance.now();
    try {
      hits += (await search.search(SCOPE, terms, DEPTH)).hits.length;
    } catch (error) {
      if (!(error instanceof MemorySearchTimeout)) throw error;
      timeouts++;
    }
    samples.push(performance.now() - started);
  }
  return { latency: summarize(samples), timeouts, hits };
}

/** The same units through MemoryStore.add (FTS5), searched as the personal install does. */
function timeSqlite(units: number, list: string[][]): { latency: LatencySummary; loadSeconds: number; hits: number } {
  const folder = mkdtempSync(join(tmpdir(), 'metaclaw-team-recall-'));
  try {
    const started = Date.now();
    const db = openDatabase(join(folder, 'memory.db'));
    const store = new MemoryStore(db);
    store.atomically(() => {
      for (let seq = 1; seq <= units; seq++) store.add({ scope: SCOPE, type: 'episodic', content: unitTerms(seq).join(' '), origin: 'manual' });
    });
    const loadSeconds = (Date.now() - started) / 1000;
    for (const terms of list.slice(0, WARM_UP)) store.search(SCOPE, terms, DEPTH);
    const samples: number[] = [];
    let hits = 0;
    for (const terms of list) {
      const begun = performance.now();
      hits += store.search(SCOPE, terms, DEPTH).candidates.length;
      samples.push(performance.now() - begun);
    }
    db.close();
    return { latency: summarize(samples), loadSeconds, hits };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const sizes = textOption('units', '100000,1000000').split(',').map(Number);
  const list = queries(numberOption('queries', 300));
  // The synthetic words must be terms as they are: the stemmer and stop words leave them alone.
  for (const terms of list.slice(0, 20)) for (const term of terms) if (tokenize(term)[0] !== term) throw new Error(`"${term}" is not its own term`);
  const server = await startPostgres();
  const rows: string[] = [];
  try {
    const admin = new pg.Pool({ connectionString: server.url, max: 1 });
    // Room for a 1M-unit index in memory, and a bulk load that does not checkpoint every few seconds.
    for (const setting of ["shared_buffers = '2GB'", "maintenance_work_mem = '1GB'", "max_wal_size = '8GB'", 'synchronous_commit = off'])
      await admin.query(`ALTER SYSTEM SET ${setting}`);
    await admin.end();
    server.pause();
    server.resume();
    for (const units of sizes) {
      const url = server.createDatabase(`recall_${units}`);
      const pool = new pg.Pool({ connectionString: url, max: 2 });
      const loadSeconds = await load(pool, units);
      const loadAverage = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
      const size = await pool.query<{ postings: string; index: string }>(
        "SELECT pg_size_pretty(pg_relation_size('memory_postings')) AS postings, pg_size_pretty(pg_relation_size('memory_postings_pkey')) AS index",
      );
      const searching = searchPool(url, SEARCH_TIMEOUT_MS, 2);
      const { latency, timeouts, hits } = await timePostgres(new PgMemorySearch(searching), list);
      await searching.end();
      const after = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
      rows.push(
        `| PostgreSQL 15 | ${units.toLocaleString('en')} | ${latency.p50} | ${latency.p90} | ${latency.p99} | ${(hits / list.length).toFixed(1)} | ${timeouts} | ${loadSeconds.toFixed(0)} s (postings ${size.rows[0]!.postings}, index ${size.rows[0]!.index}) | ${loadAverage} → ${after} |`,
      );
      console.error(rows.at(-1));
      await pool.end();
      if (units <= 100_000) {
        const sqlite = timeSqlite(units, list);
        rows.push(
          `| SQLite (FTS5) | ${units.toLocaleString('en')} | ${sqlite.latency.p50} | ${sqlite.latency.p90} | ${sqlite.latency.p99} | ${(sqlite.hits / list.length).toFixed(1)} | – | ${sqlite.loadSeconds.toFixed(0)} s | ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')} |`,
        );
        console.error(rows.at(-1));
      }
    }
  } finally {
    server.stop();
  }
  console.log(`\n### Team memory recall (one scope; ${list.length} queries of 2–8 terms, depth ${DEPTH}; ms)\n`);
  console.log('| engine | units | p50 | p90 | p99 | hits/query | timeouts | load | load average (before → after) |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---|---|');
  for (const row of rows) console.log(row);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
