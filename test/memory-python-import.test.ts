import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import OpenAI from 'openai';
import type { ProxyHandle } from './support/proxy.js';
import { pythonStore } from './support/python-store.js';
import { GITHUB_TOKEN } from './support/secrets.js';
import { startScriptedProxy, type ScriptedProxy } from './support/scripted-proxy.js';
import type { ScriptedUpstream } from './support/upstream.js';

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

interface DoctorReport {
  checks: Array<{ name: string; verdict: string; detail: string; fix?: string }>;
}

describe('memory import of the Python MetaClaw store', () => {
  let started: ScriptedProxy;
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let storePath: string;

  before(async () => {
    started = await startScriptedProxy({ config: { memory: { auto_extract: false }, skills: { auto_evolve: false } } });
    ({ upstream, proxy } = started);
    mkdirSync(join(proxy.home, 'memory'));
    storePath = join(proxy.home, 'memory', 'memory.db');
    // As a MetaClaw killed while running leaves it: its latest memory only in the WAL beside memory.db.
    const built = join(proxy.home, 'built.db');
    pythonStore(built);
    const running = new Database(built);
    running.pragma('wal_autocheckpoint = 0');
    running
      .prepare("INSERT INTO memories (memory_id, scope_id, memory_type, content, created_at, updated_at) VALUES ('m-wal', 'default', 'semantic', ?, ?, ?)")
      .run('The user is learning the cello.', '2026-02-20T10:00:00+00:00', '2026-02-20T10:00:00+00:00');
    copyFileSync(built, storePath);
    copyFileSync(`${built}-wal`, `${storePath}-wal`);
    running.close();
  });
  after(() => started.close());

  const doctorLine = async () => {
    const result = await proxy.cli(['doctor', '--no-canary', '--json']);
    return (JSON.parse(result.stdout) as DoctorReport).checks.find((check) => check.name === 'metaclaw memories');
  };
  const exported = async () => (await proxy.cli(['memory', 'export'])).stdout;

  test('doctor offers the import of ~/.metaclaw/memory/memory.db with the exact command, then stops once it is imported', async () => {
    const offered = await doctorLine();
    assert.equal(offered?.verdict, 'warn', JSON.stringify(offered));
    assert.match(offered.detail, /holds 5 active memories of the Python MetaClaw/);
    assert.equal(offered.fix, `run \`metaclaw memory import ${storePath}\` (the file is only read; memories already here are skipped)`);

    // A memory the user already added here by hand is not added twice.
    assert.equal((await proxy.cli(['memory', 'add', 'Deploys go out on Fridays.', '--type', 'project_state'])).code, 0);
    const before = [sha256(storePath), sha256(`${storePath}-wal`)];
    const folder = readdirSync(join(proxy.home, 'memory')).sort();
    const imported = await proxy.cli(['memory', 'import', storePath, '--json']);
    assert.equal(imported.code, 0, imported.stderr);
    const report = JSON.parse(imported.stdout) as { imported: number; skipped: Array<{ id: string; reason: string }>; source: { schema_version: number } };
    assert.equal(report.imported, 4, 'the memory still in the WAL too');
    assert.equal(report.source.schema_version, 6);
    const reasons = Object.fromEntries(report.skipped.map((skipped) => [skipped.id, skipped.reason]));
    assert.match(reasons['m-old-cat'] ?? '', /^superseded: /);
    assert.match(reasons['m-trip'] ?? '', /^expired on 2026-01-20/);
    assert.match(reasons['m-archived'] ?? '', /^archived in MetaClaw/);
    assert.match(reasons['m-gossip'] ?? '', /^memory_type: Invalid option/);
    assert.equal(reasons['m-deploy'], 'already in memory');
    assert.deepEqual(
      [sha256(storePath), sha256(`${storePath}-wal`)],
      before,
      'the Python store is only read (its WAL is not checkpointed into it, nor removed)',
    );
    assert.deepEqual(readdirSync(join(proxy.home, 'memory')).sort(), folder, 'no -wal or -shm file is made beside it');

    const units = (await exported())
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { scope: string; content: string; type: string; pinned: boolean; observed_at: string; search_keys: string[] });
    const cat = units.find((unit) => unit.content.includes('Biscuit'));
    assert.deepEqual([cat?.scope, cat?.type, cat?.pinned, cat?.observed_at], ['default', 'semantic', false, '2026-02-10T08:30:00.000Z']);
    assert.deepEqual(cat?.search_keys, ['pets', 'Biscuit']);
    const metric = units.find((unit) => unit.content.includes('metric'));
    assert.deepEqual(
      [metric?.scope, metric?.type, metric?.pinned],
      ['default', 'preference', true],
      'a session scope lands in its base scope; importance 0.99 is pinned',
    );
    assert.equal(units.find((unit) => unit.content.includes('Alice'))?.scope, 'user:alice');
    assert.ok(units.some((unit) => unit.content === 'The user is learning the cello.'));
    assert.ok(!units.some((unit) => /Whiskers|Lisbon|dentist|Someone/.test(unit.content)));

    const done = await doctorLine();
    assert.equal(done?.verdict, 'pass', JSON.stringify(done));
    assert.match(done.detail, /were imported on \d{4}-\d\d-\d\d \(4 added\)/);
  });

  test('an imported memory is recalled into a later request through the proxy', async () => {
    const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
    await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'What food should I avoid giving my cat Biscuit?' }] });
    const sent = upstream.modelRequests().find((request) => JSON.stringify(request.body?.messages ?? []).includes('What food should I avoid'));
    assert.match(JSON.stringify(sent?.body.messages), /allergic to fish/);
  });

  test('importing the same store again adds nothing', async () => {
    const exportBefore = await exported();
    const again = await proxy.cli(['memory', 'import', storePath]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /^Imported 0 memories from MetaClaw's store .* \(schema version 6\); skipped 9\./);
    assert.match(again.stdout, /row \d \(m-cat\): already in memory/);
    assert.equal(await exported(), exportBefore);
  });

  test('a SQLite file that is not the Python store, or a newer schema of it, is refused in one line and nothing changes', async () => {
    const other = join(proxy.home, 'notes.db');
    const db = new Database(other);
    db.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('The user likes tea.')");
    db.close();
    const newer = join(proxy.home, 'newer.db');
    pythonStore(newer, 7);
    const exportBefore = await exported();
    const refused = await proxy.cli(['memory', 'import', other]);
    assert.equal(refused.code, 1);
    assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
    assert.match(refused.stderr, /notes\.db is a SQLite database but not MetaClaw's memory store \(it has no memories table\); nothing was imported\./);
    const tooNew = await proxy.cli(['memory', 'import', newer]);
    assert.equal(tooNew.code, 1);
    assert.match(
      tooNew.stderr,
      /newer\.db is MetaClaw's memory store at schema version 7, newer than this MetaClaw-TS reads \(up to 6\); nothing was imported\./,
    );
    // A version kept as text: one line too (it was zod's issue list, over seven lines).
    const textVersion = join(proxy.home, 'text-version.db');
    pythonStore(textVersion);
    const changed = new Database(textVersion);
    changed.exec(
      "CREATE TABLE versions_as_text (version TEXT, applied_at TEXT); INSERT INTO versions_as_text VALUES ('6', 'x'); DROP TABLE schema_version; ALTER TABLE versions_as_text RENAME TO schema_version",
    );
    changed.close();
    const notNumber = await proxy.cli(['memory', 'import', textVersion]);
    assert.equal(notNumber.code, 1);
    assert.equal(notNumber.stderr.trim().split('\n').length, 1, notNumber.stderr);
    assert.match(
      notNumber.stderr,
      /text-version\.db is a SQLite database but not MetaClaw's memory store \(its schema version is "6", not a whole number\); nothing was imported\./,
    );
    assert.equal(await exported(), exportBefore);
  });

  test('the store’s -wal file given instead of the store is refused in one line, naming the database to import; nothing changes', async () => {
    const exportBefore = await exported();
    const refused = await proxy.cli(['memory', 'import', `${storePath}-wal`]);
    assert.equal(refused.code, 1, refused.stdout);
    assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
    assert.ok(
      refused.stderr.includes(
        `${storePath}-wal is a SQLite write-ahead log, not a database: import the database file beside it (${storePath}), which is read with its log; nothing was imported.`,
      ),
      refused.stderr,
    );
    assert.equal(await exported(), exportBefore);
  });

  test('an older store, from before MetaClaw added expires_at and tags_json, is read too', async () => {
    const older = join(proxy.home, 'older.db');
    const db = new Database(older);
    db.exec(`
      CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at TEXT NOT NULL);
      INSERT INTO schema_version VALUES (3, '2025-10-01T00:00:00+00:00');
      CREATE TABLE memories (memory_id TEXT PRIMARY KEY, scope_id TEXT NOT NULL, memory_type TEXT NOT NULL, content TEXT NOT NULL,
        summary TEXT DEFAULT '', importance REAL DEFAULT 0.5, confidence REAL DEFAULT 0.7, status TEXT DEFAULT 'active',
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
      INSERT INTO memories (memory_id, scope_id, memory_type, content, created_at, updated_at)
        VALUES ('m-old', 'workspace:garden', 'semantic', 'The tomatoes are in the north bed.', '2025-10-02T00:00:00+00:00', '2025-10-02T00:00:00+00:00');
    `);
    db.close();
    const imported = await proxy.cli(['memory', 'import', older, '--json']);
    assert.equal(imported.code, 0, imported.stderr);
    assert.deepEqual(JSON.parse(imported.stdout), { imported: 1, skipped: [], source: { path: older, schema_version: 3 } });
    assert.match((await proxy.cli(['memory', 'search', 'tomatoes', '--scope', 'workspace:garden'])).stdout, /north bed/);
  });

  test('the store changed by MetaClaw after the import is offered again (memory.store_path names it)', async () => {
    const moved = join(proxy.home, 'elsewhere.db');
    copyFileSync(storePath, moved);
    copyFileSync(`${storePath}-wal`, `${moved}-wal`);
    assert.equal((await proxy.cli(['config', 'set', 'memory.store_path', moved])).code, 0);
    assert.equal((await doctorLine())?.verdict, 'pass', 'the same memories, wherever the file is');
    const db = new Database(moved);
    db.prepare(
      "INSERT INTO memories (memory_id, scope_id, memory_type, content, created_at, updated_at) VALUES ('m-new', 'default', 'semantic', 'The user runs on Tuesdays.', ?, ?)",
    ).run('2026-03-01T00:00:00+00:00', '2026-03-01T00:00:00+00:00');
    db.close();
    const offered = await doctorLine();
    assert.equal(offered?.verdict, 'warn');
    assert.match(offered.fix ?? '', new RegExp(`metaclaw memory import ${moved.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\``));
    // Run with a config file of its own (-c), doctor offers the command with that file, as the store it means is that file's.
    const ownConfig = join(proxy.home, 'own-config.yaml');
    copyFileSync(join(proxy.home, 'config.yaml'), ownConfig);
    const withOwn = await proxy.cli(['doctor', '--no-canary', '--json', '-c', ownConfig]);
    const ownLine = (JSON.parse(withOwn.stdout) as DoctorReport).checks.find((check) => check.name === 'metaclaw memories');
    assert.equal(ownLine?.fix, `run \`metaclaw memory import ${moved} -c ${ownConfig}\` (the file is only read; memories already here are skipped)`);
    const imported = await proxy.cli(['memory', 'import', moved, '-c', ownConfig]);
    assert.match(imported.stdout, /^Imported 1 memory from/);
    assert.equal((await doctorLine())?.verdict, 'pass');
  });

  test('a memory holding a secret is stored redacted, and importing it again (store or JSONL) adds no second copy', async () => {
    const secretStore = join(proxy.home, 'secret.db');
    pythonStore(secretStore);
    const db = new Database(secretStore);
    db.prepare(
      "INSERT INTO memories (memory_id, scope_id, memory_type, content, created_at, updated_at) VALUES ('m-token', 'default', 'semantic', ?, ?, ?)",
    ).run(`The deploy bot uses the GitHub token ${GITHUB_TOKEN} for releases.`, '2026-03-02T00:00:00+00:00', '2026-03-02T00:00:00+00:00');
    db.close();
    const jsonl = join(proxy.home, 'secret.jsonl');
    writeFileSync(jsonl, `${JSON.stringify({ type: 'semantic', content: `The backup job reads the GitHub token ${GITHUB_TOKEN} from its env.` })}\n`);
    const copies = async (words: RegExp) => (await exported()).split('\n').filter((line) => words.test(line));
    for (const round of [1, 2]) {
      const fromStore = await proxy.cli(['memory', 'import', secretStore, '--json']);
      assert.equal(fromStore.code, 0, fromStore.stderr);
      const reasons = Object.fromEntries(
        (JSON.parse(fromStore.stdout) as { skipped: Array<{ id: string; reason: string }> }).skipped.map((s) => [s.id, s.reason]),
      );
      assert.equal(reasons['m-token'], round === 1 ? undefined : 'already in memory', `store, round ${round}`);
      const fromLines = await proxy.cli(['memory', 'import', jsonl]);
      assert.match(
        fromLines.stdout,
        round === 1 ? /^Imported 1 memory; skipped 0\./ : /^Imported 0 memories; skipped 1\.\n {2}line 1: already in memory/,
        `JSONL, round ${round}`,
      );
    }
    const deploy = await copies(/deploy bot uses the GitHub token/);
    assert.equal(deploy.length, 1, deploy.join('\n'));
    assert.match(deploy[0] ?? '', /\[redacted [a-z-]+\]/);
    assert.ok(!deploy[0]?.includes(GITHUB_TOKEN), 'the token itself is never stored');
    assert.equal((await copies(/backup job reads the GitHub token/)).length, 1);
  });
});
