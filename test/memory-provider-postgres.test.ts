import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import type { ContextRequest, ContextSection } from '../src/context/index.js';
import { silentLogger } from '../src/logging/index.js';
import { MemoryContextProvider, type MemoryInjectionSettings } from '../src/memory/provider.js';
import { MemoryRetriever } from '../src/memory/retrieval.js';
import { MemoryStore } from '../src/memory/store.js';
import { SHARED_SCOPE, type MemoryDraft } from '../src/memory/types.js';
import { openDatabase, type Db } from '../src/store/index.js';
import { importSqlite, openPool } from '../src/store/postgres/index.js';
import { PgMemoryContextProvider } from '../src/store/postgres/memory-provider.js';
import { addPgMemory } from '../src/store/postgres/memory-writer.js';
import { searchPool } from '../src/store/postgres/memory-search.js';
import { postgresSkip, startPostgres, type TestPostgres } from './support/postgres.js';

const DAY = 86_400_000;
const NOW = Date.now();
const ALICE = 'user:alice';
const BOB = 'user:bob';
const SETTINGS: MemoryInjectionSettings = { topK: 6, maxTokens: 700, coreMaxTokens: 400, minRelevance: 0.1 };
/** Room for a few rules only: the core block must choose among them (and reads term weights to do so). */
const TIGHT: MemoryInjectionSettings = { ...SETTINGS, coreMaxTokens: 95 };

function request(scope: string, text: string, sessionId = 'session-now'): ContextRequest {
  return {
    format: 'openai',
    body: {},
    userRequest: { text, messageIndex: 0, isReset: false, earlier: '' },
    turnType: 'main',
    scope,
    sessionId,
  };
}

function fact(scope: string, content: string, days: number, extra: Partial<MemoryDraft> = {}): MemoryDraft {
  return { scope, type: 'semantic', content, origin: 'extractor', observedAt: NOW - days * DAY, ...extra };
}

function turn(scope: string, session: string, speaker: 'user' | 'assistant', content: string, days: number, turns: string[] = []): MemoryDraft {
  return { scope, type: 'episodic', content, origin: 'raw_turn', speaker, sourceSession: session, sourceTurns: turns, observedAt: NOW - days * DAY };
}

/** A personal install's memory: rules (one replaced), facts, raw turns of two sessions, for two members and the team. */
function seed(store: MemoryStore): void {
  const rule = (scope: string, content: string, days: number, extra: Partial<MemoryDraft> = {}) =>
    store.add(fact(scope, content, days, { type: 'preference', origin: 'rule', core: true, ...extra }))!;
  rule(ALICE, 'Always use British spelling in prose and comments.', 80, { sourceTurns: ['t-spelling'] });
  rule(ALICE, 'Never put semicolons at the end of lines in shell scripts.', 60, { pinned: true });
  rule(ALICE, 'Install packages with pnpm, never with npm install.', 50, { importance: 0.9 });
  rule(ALICE, 'Write commit messages in the imperative mood.', 40);
  rule(ALICE, 'Keep database migrations reversible with a down step.', 30);
  const tabs = rule(ALICE, 'Indent code with tabs.', 90, { sourceTurns: ['t-tabs'] });
  const spaces = rule(ALICE, 'Indent code with two spaces, never tabs.', 20, { sourceTurns: ['t-spaces'] });
  store.supersede(tabs.id, spaces.id);
  const facts: Array<[string, number, Partial<MemoryDraft>?]> = [
    ['My greyhound Pepper is afraid of thunderstorms and hides under the desk.', 40, { type: 'preference', importance: 0.7 }],
    ['The physiotherapist said to keep icing the left knee after every run.', 12, { importance: 0.8 }],
    ['Our staging database runs PostgreSQL 15 on the old rack in Leeds.', 90, { type: 'project_state' }],
    ['The quarterly budget review moved to the second Thursday of the month.', 25, { type: 'project_state' }],
    ['Deployments to production need two approvals since the outage in March.', 60, { type: 'project_state', importance: 0.9 }],
    ['Pepper eats grain-free kibble; chicken upsets her stomach.', 33, { searchKeys: ['What does the dog eat?'] }],
    ['我的膝盖受伤了，医生建议休息两周。', 15, { type: 'episodic' }],
    ['I am learning Japanese with a tutor on Tuesday evenings.', 70, {}],
    ['The old laptop battery swells when it charges overnight; replace it.', 100, {}],
  ];
  for (const [content, days, extra] of facts) store.add(fact(ALICE, content, days, extra));
  for (let day = 0; day < 40; day++)
    store.add(
      fact(ALICE, `On day ${day} I had coffee in the ${['office', 'garden', 'kitchen'][day % 3]} and planned the week.`, 120 - day, {
        type: 'episodic',
        origin: 'manual',
      }),
    );
  store.add(turn(ALICE, 's1', 'user', 'Can you suggest a stretch for a sore knee before running?', 11));
  store.add(turn(ALICE, 's1', 'assistant', 'Try slow quad stretches and calf raises, and stop if the pain gets sharp.', 11));
  store.add(turn(ALICE, 's1', 'user', 'Thanks, the calf raises helped a lot this morning.', 10));
  store.add(turn(ALICE, 's2', 'user', 'Please indent my code with tabs from now on.', 9, ['t-tabs']));
  store.add(turn(ALICE, 's2', 'user', 'The migration script failed on the staging database again.', 3));
  store.add(turn(ALICE, 's2', 'assistant', 'Check whether the lock timeout is shorter than the longest table rewrite.', 3));
  store.add(turn(ALICE, 'session-now', 'user', 'Raising the lock timeout to thirty seconds fixed the staging migration.', 0));
  rule(BOB, 'Answer Bob in French.', 10);
  store.add(fact(BOB, "Bob's greyhound is called Comet and sleeps on the sofa.", 5));
  store.add(fact(BOB, 'The staging database password rotates every Monday.', 7));
  rule(SHARED_SCOPE, 'Every pull request needs a linked issue.', 30);
  store.add(fact(SHARED_SCOPE, 'The team deploys to production on Tuesdays after the standup.', 6, { type: 'project_state' }));
  store.add(fact(SHARED_SCOPE, 'The shared staging database lives in Frankfurt.', 8, { type: 'project_state' }));
}

const QUERIES: Array<[string, string, string?]> = [
  [ALICE, 'What is my dog scared of?'],
  [ALICE, 'what did the physio say about my knee'],
  [ALICE, 'which database does staging run and where is it'],
  [ALICE, 'how do I stretch before a run'],
  [ALICE, 'what fixed the migration on staging'],
  [ALICE, 'what fixed the migration on staging', 's9'],
  [ALICE, 'how should I indent this code'],
  [ALICE, 'when do we deploy to production'],
  [ALICE, 'coffee in the garden'],
  [ALICE, '膝盖怎么了'],
  [ALICE, 'write a shell script that installs the packages'],
  [ALICE, ''],
  [BOB, 'what is my dog called'],
  [BOB, 'when does the staging password rotate'],
  [SHARED_SCOPE, 'where is the staging database'],
];

/** A section's ids by scope, for isolation checks. */
function ids(section: ContextSection | undefined): { core: string[]; recalled: string[] } {
  const details = section?.details as { core: Array<{ id: string }>; recalled: Array<{ id: string }> } | undefined;
  return { core: details?.core.map((entry) => entry.id) ?? [], recalled: details?.recalled.map((entry) => entry.id) ?? [] };
}

async function until<T>(what: string, ms: number, probe: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > end) assert.fail(`${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('the memory section from PostgreSQL (team mode)', { skip: postgresSkip() }, () => {
  let server: TestPostgres;
  let url: string;
  let home: string;
  let db: Db;
  let store: MemoryStore;
  let pool: pg.Pool;
  const providers: PgMemoryContextProvider[] = [];

  async function pgProvider(settings = SETTINGS, timeoutMs = 100): Promise<PgMemoryContextProvider> {
    const provider = new PgMemoryContextProvider({ url, settings, timeoutMs, listener: { reconnectDelayMs: 100, maxReconnectDelayMs: 300 } });
    providers.push(provider);
    await provider.start();
    return provider;
  }

  /** What the SQLite provider shows for the same units. */
  function sqliteProvider(settings = SETTINGS): MemoryContextProvider {
    return new MemoryContextProvider(store, new MemoryRetriever(store, undefined, silentLogger(), 'keyword'), settings);
  }

  before(async () => {
    server = await startPostgres();
    url = server.createDatabase('memory_provider');
    home = mkdtempSync(join(tmpdir(), 'metaclaw-pgmem-'));
    db = openDatabase(join(home, 'metaclaw.db'));
    store = new MemoryStore(db);
    seed(store);
    pool = openPool(url, { max: 2 });
    pool.on('error', () => undefined);
    await importSqlite(pool, join(home, 'metaclaw.db'));
  });

  after(async () => {
    for (const provider of providers) await provider.stop();
    await pool?.end();
    db?.close();
    server?.stop();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  test('for the same units, every section (text, tokens, details) equals the SQLite provider’s, also when rules overflow the core budget', async () => {
    for (const settings of [SETTINGS, TIGHT]) {
      const postgres = await pgProvider(settings, 2_000); // generous: this test is about what, not how fast
      const sqlite = sqliteProvider(settings);
      let recalled = 0;
      let chosen = false;
      for (const [scope, text, session] of QUERIES) {
        const wanted = sqlite.provide(request(scope, text, session));
        const got = await postgres.provide(request(scope, text, session));
        assert.deepEqual(got, await wanted, `${scope} "${text}" (core budget ${settings.coreMaxTokens})`);
        recalled += ids(got).recalled.length;
        if (scope === ALICE && ids(got).core.length < 6) chosen = true;
      }
      assert.ok(recalled > 25, `not vacuous: ${recalled} memories recalled`);
      if (settings === TIGHT) assert.ok(chosen, 'the tight budget made the core block choose');
      assert.equal(postgres.status().timeouts + postgres.status().failures, 0);
    }
  });

  test('a member sees their own and the team’s units, never another member’s', async () => {
    const provider = await pgProvider(SETTINGS, 2_000);
    const scopeOf = new Map([...store.iterate()].map((unit) => [unit.id, unit.scope]));
    for (const [scope, text] of [
      [ALICE, 'what is my dog called and when does the staging password rotate'],
      [BOB, 'what is my dog scared of and which database does staging run'],
    ] as const) {
      const shown = ids(await provider.provide(request(scope, text)));
      const scopes = new Set([...shown.core, ...shown.recalled].map((id) => scopeOf.get(id)));
      assert.deepEqual([...scopes].sort(), [scope, SHARED_SCOPE].sort(), `${scope} sees its own and the team's units only`);
    }
  });

  test('a unit written by another connection shows in the next section within a second (NOTIFY), rules too', async () => {
    // Room to read: a first read past a 100 ms wait answers with the held rules, and the next one with the full section (not a cache hit).
    const provider = await pgProvider(SETTINGS, 2_000);
    const question = request(ALICE, 'where is the zeppelin hangar key kept');
    const first = await provider.provide(question);
    assert.equal(ids(first).recalled.length, 0);
    assert.deepEqual(await provider.provide(question), first, 'the section is cached');
    const writer = openPool(url, { max: 1 });
    try {
      const key = (await addPgMemory(writer, fact(ALICE, 'The zeppelin hangar key is kept under the blue mat.', 1)))!;
      const started = Date.now();
      await until('the new memory recalled', 1_000, async () => (ids(await provider.provide(question)).recalled.includes(key.id) ? true : undefined));
      const rule = (await addPgMemory(writer, fact(SHARED_SCOPE, 'Zeppelin hangar doors stay shut after dark.', 0, { origin: 'rule', core: true })))!;
      await until('the new team rule shown to alice', 1_000, async () => (ids(await provider.provide(question)).core.includes(rule.id) ? true : undefined));
      assert.ok(Date.now() - started < 2_000);
      // A change made by hand (the CLI, psql) is heard the same way: the trigger is on the table.
      await writer.query("UPDATE memory_units SET status = 'superseded' WHERE id = $1", [rule.id]);
      await until('the replaced rule gone', 1_000, async () => (ids(await provider.provide(question)).core.includes(rule.id) ? undefined : true));
    } finally {
      await writer.end();
    }
  });

  test('changes made while the listening connection was down show once it is back (every cache dropped on reconnect)', async () => {
    const provider = new PgMemoryContextProvider({ url, settings: SETTINGS, timeoutMs: 2_000, listener: { reconnectDelayMs: 300, maxReconnectDelayMs: 300 } });
    providers.push(provider);
    await provider.start();
    // No colour word: "what colour" also finds the blue mat of an earlier test (a colour answers it).
    const question = request(ALICE, 'tell me about the canoe paddle');
    assert.deepEqual(ids(await provider.provide(question)).recalled, []);
    const writer = openPool(url, { max: 1 });
    try {
      await writer.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'metaclaw-memory-listen'");
      await until('the listener lost', 1_000, async () => (provider.status().listening ? undefined : true));
      // Written while nobody listens: its notification is lost.
      const paddle = (await addPgMemory(writer, fact(ALICE, 'The canoe paddle is painted bright orange.', 1)))!;
      assert.deepEqual(ids(await provider.provide(question)).recalled, [], 'the cached section, until the listener is back');
      await until('the unit recalled after the reconnect', 2_000, async () =>
        ids(await provider.provide(question)).recalled.includes(paddle.id) ? true : undefined,
      );
      assert.ok(provider.status().reconnects >= 1);
    } finally {
      await writer.end();
    }
  });

  test('a rule whose notification was lost shows once the held rules are older than rulesMaxAgeMs, re-read in the background without holding a request', async () => {
    const provider = (rulesMaxAgeMs: number) => {
      const made = new PgMemoryContextProvider({ url, settings: SETTINGS, timeoutMs: 2_000, rulesMaxAgeMs });
      providers.push(made);
      return made;
    };
    const bounded = provider(300);
    const trusting = provider(600_000);
    await Promise.all([bounded.start(), trusting.start()]);
    const question = request(ALICE, 'how should the lighthouse log be signed');
    const before = ids(await bounded.provide(question)).core;
    assert.deepEqual(ids(await trusting.provide(question)).core, before);
    const writer = openPool(url, { max: 1 });
    try {
      // Triggers do not fire for a session in replica mode: no node hears of this rule.
      await writer.query('SET session_replication_role = replica');
      const rule = (await addPgMemory(writer, fact(ALICE, 'Sign the lighthouse log with your initials only.', 0, { origin: 'rule', core: true })))!;
      await until('the unnotified rule shown by the provider that re-reads old rules', 3_000, async () => {
        const started = Date.now();
        const shown = ids(await bounded.provide(question)).core;
        assert.ok(Date.now() - started < 1_000, 'a request does not wait for the re-read');
        return shown.includes(rule.id) ? true : undefined;
      });
      assert.ok(!ids(await trusting.provide(question)).core.includes(rule.id), 'the notification was lost: rules held within their age are not re-read');
    } finally {
      await writer.end();
    }
  });

  test('a database slower than timeoutMs: the request gets the rules held, no recall, within the wait, and the timeout is counted', async () => {
    const provider = await pgProvider(SETTINGS, 100);
    // A cold provider's first requests may outlast 100 ms on a busy machine (connections, rules, prepared statements): warm it.
    const warm = await until('a full section', 3_000, async () => {
      const section = await provider.provide(request(ALICE, 'what did the physio say about my knee'));
      return ids(section).recalled.length > 0 ? section : undefined;
    });
    assert.ok(ids(warm).core.length > 0);
    const waitedBefore = provider.status().timeouts;
    const failedBefore = provider.status().failures;
    const blocker = await pool.connect();
    try {
      await blocker.query('BEGIN; LOCK TABLE memory_postings IN ACCESS EXCLUSIVE MODE');
      const started = Date.now();
      const section = await provider.provide(request(ALICE, 'which database does staging run'));
      const took = Date.now() - started;
      // Well before the pool's statement timeout (twice the wait): the request stopped waiting on its own.
      assert.ok(took < 100 + 80, `answered in ${took} ms`);
      assert.deepEqual(ids(section).core, ids(warm).core, 'the rules held');
      assert.deepEqual(ids(section).recalled, []);
      assert.equal(provider.status().timeouts, waitedBefore + 1);
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
    // The late reads' own statement timeout backs requests off for a second; then the section is made again (it was not cached).
    await until('recall once the lock is gone', 3_000, async () =>
      ids(await provider.provide(request(ALICE, 'which database does staging run'))).recalled.length > 0 ? true : undefined,
    );
    // Slowness, not an outage: the late reads' failure is no failure. (Timeouts are not counted exactly
    // here: on a busy machine a read of the loop above may outlast its 100 ms too.)
    assert.equal(provider.status().failures, failedBefore);
  });

  test('a connection the server ends while it is checked out raises no uncaught error (between two statements too): the statement fails and the pool serves on', async () => {
    for (const [name, made] of [
      ['openPool', openPool(url, { max: 1 })],
      ['searchPool', searchPool(url, 2_000, 1)],
    ] as const) {
      try {
        const client = await made.connect();
        const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        // Ended while idle in the caller's hands: pg-pool has taken its own listener off this client.
        await pool.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
        await assert.rejects(client.query('SELECT 1'), `${name}: the next statement fails`);
        // The socket's end comes after: an 'error' event nobody heard would fail this test here.
        await new Promise((resolve) => setTimeout(resolve, 300));
        client.release();
        assert.equal((await made.query<{ one: number }>('SELECT 1 AS one')).rows[0]?.one, 1, `${name}: a new connection serves`);
      } finally {
        await made.end();
      }
    }
  });

  test('PostgreSQL down: requests answer at once with the rules held and no recall, failures counted; after it is back, recall returns', async () => {
    const provider = await pgProvider(SETTINGS, 100);
    const warm = await until('a full section', 3_000, async () => {
      const section = await provider.provide(request(ALICE, 'how do I stretch before a run'));
      return ids(section).recalled.length > 0 ? section : undefined;
    });
    server.pause();
    try {
      for (const text of ['what is my dog scared of', 'when is the budget review', 'where did I have coffee']) {
        const started = Date.now();
        const section = await provider.provide(request(ALICE, text));
        const took = Date.now() - started;
        assert.ok(took < 100 + 150, `"${text}" answered in ${took} ms`);
        assert.deepEqual(ids(section).core, ids(warm).core, 'the rules held');
        assert.deepEqual(ids(section).recalled, []);
      }
      const status = provider.status();
      assert.ok(status.failures >= 1, 'the failure is counted');
      assert.ok(status.skipped >= 1, 'later requests within the backoff did not try the database');
      await until('the listener noticed', 2_000, async () => (provider.status().listening ? undefined : true));
    } finally {
      server.resume();
    }
    await until('recall after the store is back', 10_000, async () => {
      const section = await provider.provide(request(ALICE, 'what is my dog scared of'));
      return ids(section).recalled.length > 0 ? section : undefined;
    });
    await until('listening again', 5_000, async () => (provider.status().listening ? true : undefined));
    assert.ok(provider.status().reconnects >= 1);
  });
});
