/**
 * Team-mode memory section latency: PgMemoryContextProvider.provide (src/store/postgres/memory-provider.ts)
 * for requests it has not seen (so never its section cache), against MemoryContextProvider on the
 * same units in SQLite. One scope of synthetic units (sentences of 6–20 words from a 400-word
 * vocabulary, a third raw turns in sessions) plus the shared `team` scope and a few standing rules
 * in each; imported into a throwaway PostgreSQL cluster with `store import-sqlite`'s code. Timed:
 * the whole section (rules held, recall in both scopes with feedback, rendering), every round trip.
 *
 * Standalone: `node --import tsx bench/team-memory-provider.ts [--units 10000] [--queries 300]`
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { ContextRequest } from '../src/context/index.js';
import { silentLogger } from '../src/logging/index.js';
import { MemoryContextProvider } from '../src/memory/provider.js';
import { MemoryRetriever } from '../src/memory/retrieval.js';
import { MemoryStore } from '../src/memory/store.js';
import { SHARED_SCOPE } from '../src/memory/types.js';
import { openDatabase } from '../src/store/index.js';
import { importSqlite } from '../src/store/postgres/index.js';
import { PgMemoryContextProvider } from '../src/store/postgres/memory-provider.js';
import { startPostgres } from '../test/support/postgres.js';
import { summarize } from './stats.js';
import { mulberry32 } from '../test/support/random.js';
import { numberOption } from './options.js';

const SCOPE = 'user:bench';
const SETTINGS = { topK: 6, maxTokens: 800, coreMaxTokens: 400, minRelevance: 0.1 };

/** Made-up words (consonant-vowel syllables): no glossary or thesaurus entry changes what is timed. */
function vocabulary(size: number, next: () => number): string[] {
  const consonants = 'bdfgklmnprstvz';
  const vowels = 'aeiou';
  const words = new Set<string>();
  while (words.size < size) {
    let word = '';
    for (let syllable = 0; syllable < 2 + Math.floor(next() * 2); syllable++)
      word += consonants[Math.floor(next() * consonants.length)]! + vowels[Math.floor(next() * vowels.length)]!;
    words.add(word);
  }
  return [...words];
}

/** A word, the commoner ones more often (roughly Zipf). */
function sentence(words: readonly string[], length: number, next: () => number): string {
  return Array.from({ length }, () => words[Math.floor(words.length * next() ** 2.5)]!).join(' ');
}

function request(text: string, index: number): ContextRequest {
  return {
    format: 'openai',
    body: {},
    userRequest: { text, messageIndex: 0, isReset: false, earlier: '' },
    turnType: 'main',
    scope: SCOPE,
    sessionId: `bench-${index}`,
  };
}

async function main(): Promise<void> {
  const units = numberOption('units', 10000);
  const queries = numberOption('queries', 300);
  const next = mulberry32(units + 11);
  const words = vocabulary(400, next);
  const home = mkdtempSync(join(tmpdir(), 'metaclaw-bench-pgmem-'));
  const server = await startPostgres();
  try {
    const path = join(home, 'metaclaw.db');
    const db = openDatabase(path);
    const store = new MemoryStore(db);
    const day = 86_400_000;
    db.transaction(() => {
      for (const scope of [SCOPE, SHARED_SCOPE])
        for (let rule = 0; rule < 5; rule++)
          store.add({ scope, type: 'preference', origin: 'rule', core: true, content: `${sentence(words, 8, next)}.`, observedAt: Date.now() - rule * day });
      for (let index = 0; index < units; index++) {
        const raw = index % 3 === 0;
        store.add(
          {
            scope: index % 10 === 0 ? SHARED_SCOPE : SCOPE,
            type: raw ? 'episodic' : 'semantic',
            content: `${sentence(words, 6 + Math.floor(next() * 15), next)}.`,
            origin: raw ? 'raw_turn' : 'extractor',
            speaker: raw ? 'user' : null,
            sourceSession: raw ? `session-${Math.floor(index / 12)}` : null,
            importance: next(),
            observedAt: Date.now() - Math.floor(next() * 120) * day,
          },
          raw ? { rawKey: `k${index}` } : {},
        );
      }
    })();
    const url = server.createDatabase('bench');
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    await importSqlite(pool, path);
    await pool.query('VACUUM ANALYZE');
    await pool.end();
    const sqlite = new MemoryContextProvider(store, new MemoryRetriever(store, undefined, silentLogger(), 'keyword'), SETTINGS);
    const team = new PgMemoryContextProvider({ url, settings: SETTINGS, timeoutMs: 1_000 });
    await team.start();
    const texts = Array.from({ length: queries }, () => sentence(words, 2 + Math.floor(next() * 7), next));
    // Warm-up: connections, prepared statements, rules held.
    for (let index = 0; index < 30; index++) await team.provide(request(texts[index]!, -1 - index));
    const timed = async (provide: (request: ContextRequest) => unknown, offset: number) => {
      const samples: number[] = [];
      for (let index = 0; index < texts.length; index++) {
        const begin = performance.now();
        await provide(request(texts[index]!, offset + index));
        samples.push(performance.now() - begin);
      }
      return summarize(samples);
    };
    const pgLatency = await timed((r) => team.provide(r), 0);
    const sqliteLatency = await timed((r) => sqlite.provide(r), 100_000);
    const status = team.status();
    await team.stop();
    db.close();
    process.stdout.write(
      [
        `| store | units | p50 ms | p99 ms |`,
        `|---|---|---|---|`,
        `| PostgreSQL (PgMemoryContextProvider) | ${units.toLocaleString('en')} | ${pgLatency.p50.toFixed(2)} | ${pgLatency.p99.toFixed(2)} |`,
        `| SQLite (MemoryContextProvider) | ${units.toLocaleString('en')} | ${sqliteLatency.p50.toFixed(2)} | ${sqliteLatency.p99.toFixed(2)} |`,
        '',
        `PostgreSQL: ${status.timeouts} timeouts, ${status.failures} failures of ${status.requests} sections made.`,
        '',
      ].join('\n'),
    );
  } finally {
    server.stop();
    rmSync(home, { recursive: true, force: true });
  }
}

await main();
