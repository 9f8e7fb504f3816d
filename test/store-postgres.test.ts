import assert from 'node:assert/strict';
import { copyFileSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import OpenAI from 'openai';
import pg from 'pg';
import * as sqliteVec from 'sqlite-vec';
import { keysInConfigFile, loadConfig, maskDatabaseUrl } from '../src/config/index.js';
import { MIGRATIONS, openDatabase } from '../src/store/index.js';
import { fromPostgresText, migratePostgres, openPool, readVectorSupport, TEAM_ONLY_TABLES, TEAM_TABLES } from '../src/store/postgres/index.js';
import { PgMemorySearch } from '../src/store/postgres/memory-search.js';
import { PgSkillStore } from '../src/store/postgres/skill-store.js';
import { MemoryStore } from '../src/memory/store.js';
import { uniqueTerms } from '../src/text/index.js';
import { postgresSkip, startPostgres, type TestPostgres } from './support/postgres.js';
import { freePort, runCli, startProxy, tempHome, waitFor } from './support/proxy.js';
import { embeddingsHandler } from './support/embeddings.js';
import { ScriptedUpstream } from './support/upstream.js';

const LATEST = MIGRATIONS.at(-1)!.version;
// int8 read as bigint here, so imported rows compare with SQLite's exactly (the driver's default is text).
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => BigInt(value));

describe('store.url and the personal store', () => {
  test('a store URL given to config set is kept in a 0600 config.yaml and shown with its password masked; a non-PostgreSQL URL is refused without echoing the password', async () => {
    const home = tempHome();
    try {
      const set = await runCli(['config', 'set', 'store.url', 'postgres://team:s3cretpass@db.example:5432/metaclaw'], { home });
      assert.equal(set.code, 0, set.stderr);
      assert.ok(!set.stdout.includes('s3cretpass'), set.stdout);
      assert.equal(statSync(join(home, 'config.yaml')).mode & 0o777, 0o600);
      assert.match(readFileSync(join(home, 'config.yaml'), 'utf8'), /s3cretpass/, 'the file itself holds the URL');
      const shown = await runCli(['config', 'get', 'store.url'], { home });
      assert.match(shown.stdout, /postgres:\/\/team:\*\*\*\*@db\.example:5432\/metaclaw/);
      assert.ok(!shown.stdout.includes('s3cretpass'));
      const shownAll = await runCli(['config', 'show', '--json'], { home });
      assert.equal(JSON.parse(shownAll.stdout).values['store.url'], 'postgres://team:****@db.example:5432/metaclaw');
      assert.deepEqual(keysInConfigFile(loadConfig({ env: { METACLAW_HOME: home } })), ['store.url'], 'a URL with a password is a key the file holds');
      writeFileSync(join(home, 'config.yaml'), 'store:\n  url: postgres://team@db.example/metaclaw\n', { mode: 0o600 });
      assert.deepEqual(keysInConfigFile(loadConfig({ env: { METACLAW_HOME: home } })), [], 'one without a password is not');
      const refused = await runCli(['config', 'set', 'store.url', 'mysql://team:s3cretpass@db.example/metaclaw'], { home });
      assert.notEqual(refused.code, 0);
      assert.match(refused.stderr, /postgres:\/\/ or postgresql:\/\//);
      assert.ok(!`${refused.stdout}${refused.stderr}`.includes('s3cretpass'), refused.stderr);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test('start on a team store it cannot reach, or without a proxy key, exits with one clear line, the password masked, and nothing started', async () => {
    const home = tempHome();
    try {
      const unreachable = 'postgresql://team:s3cretpass@127.0.0.1:1/metaclaw';
      const noKey = await runCli(['start', '--store', unreachable, '--no-wire'], { home });
      assert.equal(noKey.code, 1, noKey.stderr);
      assert.match(noKey.stderr, /needs the proxy key/);
      const flagged = await runCli(['start', '--store', unreachable, '--no-wire'], { home, env: { METACLAW_PROXY_API_KEY: 'owner' } });
      assert.equal(flagged.code, 1, flagged.stderr);
      assert.match(flagged.stderr, /Cannot reach the team store at postgresql:\/\/team:\*\*\*\*@127\.0\.0\.1:1\/metaclaw/);
      const fromEnv = await runCli(['start', '--no-wire'], { home, env: { METACLAW_DATABASE_URL: unreachable, METACLAW_PROXY_API_KEY: 'owner' } });
      assert.equal(fromEnv.code, 1, fromEnv.stderr);
      for (const result of [noKey, flagged, fromEnv]) assert.ok(!`${result.stdout}${result.stderr}`.includes('s3cretpass'), result.stderr);
      assert.ok(!existsSync(join(home, 'metaclaw.pid')), 'nothing was started');
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test('masking hides a password in the authority (even one holding @) and in a password= parameter, and leaves a URL without one alone', () => {
    assert.equal(maskDatabaseUrl('postgres://a:b@c@h:5432/d'), 'postgres://a:****@h:5432/d');
    assert.equal(maskDatabaseUrl('postgresql://h/d?user=a&password=xyz&sslmode=require'), 'postgresql://h/d?user=a&password=****&sslmode=require');
    assert.equal(maskDatabaseUrl('postgres://a@h/d'), 'postgres://a@h/d');
  });

  test('the SQLite schema is unchanged by version 16: same tables and indexes as at version 15, user_version 16', () => {
    const schema = (db: Database.Database) => db.prepare("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name").all();
    const at15 = openDatabase(':memory:', { migrations: MIGRATIONS.filter((migration) => migration.version <= 15) });
    const at16 = openDatabase(':memory:', { migrations: MIGRATIONS.filter((migration) => migration.version <= 16) });
    try {
      assert.deepEqual(schema(at16), schema(at15));
      assert.equal(at16.pragma('user_version', { simple: true }), 16);
    } finally {
      at15.close();
      at16.close();
    }
  });

  test('the personal path never loads pg: a proxy started and used with a hook that refuses pg works, while store migrate under the same hook trips it', async () => {
    const hooks = tempHome('metaclaw-no-pg-');
    writeFileSync(
      join(hooks, 'hooks.mjs'),
      "export async function resolve(specifier, context, next) { if (specifier === 'pg' || specifier.startsWith('pg/')) throw new Error('pg loaded on the personal path'); return next(specifier, context); }\n",
    );
    writeFileSync(join(hooks, 'register.mjs'), "import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n");
    const env = { NODE_OPTIONS: `--import ${join(hooks, 'register.mjs')}` };
    const upstream = await ScriptedUpstream.start();
    const proxy = await startProxy({ env, config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' } } });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      await client.chat.completions.create({ model: 'scripted-model', messages: [{ role: 'user', content: 'hello there' }] });
      for (const args of [['status'], ['sessions', 'list'], ['store', 'status'], ['memory', 'add', 'Lunch is at noon', '--type', 'semantic']]) {
        const result = await proxy.cli(args);
        assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
      }
      assert.equal((await fetch(`${proxy.url}/healthz`)).status, 200, 'the proxy is still up');
      const tripped = await proxy.cli(['store', 'migrate', '--store', 'postgres://127.0.0.1:1/x']);
      assert.notEqual(tripped.code, 0);
      assert.match(tripped.stderr, /pg loaded on the personal path/, 'the hook would have caught pg');
    } finally {
      await proxy.dispose();
      await upstream.close();
      rmSync(hooks, { recursive: true, force: true });
    }
  });

  test('store status with no store URL reports the personal SQLite store', async () => {
    const home = tempHome();
    try {
      openDatabase(join(home, 'metaclaw.db')).close();
      const status = await runCli(['store', 'status', '--json'], { home });
      assert.equal(status.code, 0, status.stderr);
      const report = JSON.parse(status.stdout);
      assert.equal(report.engine, 'sqlite');
      assert.equal(report.schema_version, LATEST);
      assert.equal(report.tables.sessions, 0);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test('an unreachable store is one line on stderr, exit code 1, password masked, no stack trace', async () => {
    const home = tempHome();
    try {
      openDatabase(join(home, 'metaclaw.db')).close(); // import-sqlite has a database to read: what fails is the store
      const url = `postgres://team:s3cretpass@127.0.0.1:${await freePort()}/metaclaw`;
      for (const args of [
        ['store', 'migrate', '--store', url],
        ['store', 'status', '--store', url],
        ['store', 'import-sqlite', home, '--store', url],
      ]) {
        const result = await runCli(args, { home });
        assert.equal(result.code, 1, `${args.join(' ')}: ${result.stderr}`);
        const lines = result.stderr.trim().split('\n');
        assert.equal(lines.length, 1, result.stderr);
        assert.match(lines[0]!, /Cannot reach the team store at postgres:\/\/team:\*\*\*\*@127\.0\.0\.1:\d+\/metaclaw: .*ECONNREFUSED/);
        assert.ok(!result.stderr.includes('s3cretpass'));
      }
      const json = await runCli(['store', 'status', '--store', url, '--json'], { home });
      assert.equal(json.code, 1);
      assert.equal(JSON.parse(json.stdout).reachable, false);
      // The doctor says so too, as a failed check (password masked).
      const doctor = await runCli(['doctor', '--json', '--no-canary'], { home, env: { METACLAW_DATABASE_URL: url } });
      const check = (JSON.parse(doctor.stdout) as { checks: Array<{ name: string; verdict: string; detail: string }> }).checks.find(
        (candidate) => candidate.name === 'team store',
      );
      assert.equal(check?.verdict, 'fail', doctor.stdout);
      assert.match(check.detail, /Cannot reach the team store at postgres:\/\/team:\*\*\*\*@/);
      assert.ok(!doctor.stdout.includes('s3cretpass'));
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('pgvector support notice', () => {
  const answering = (installed: string | null, available: string | null) => ({ query: async () => ({ rows: [{ installed, available }] }) }) as never;

  test('says what recall uses: vectors once pgvector is installed (and which model they are of), keyword-only when pgvector is only available or absent', async () => {
    const installed = await readVectorSupport(answering('0.7.4', '0.7.4'));
    assert.equal(installed.state, 'installed');
    assert.match(
      installed.notice,
      /^vector recall ready: pgvector 0\.7\.4 is installed; nodes with memory\.embedding\.api_base and memory\.embedding\.model set embed memories/,
    );
    const available = await readVectorSupport(answering(null, '0.8.0'));
    assert.equal(available.state, 'available');
    assert.match(
      available.notice,
      /^keyword-only recall: pgvector 0\.8\.0 is available on this server but not installed in this database \(`metaclaw store migrate` installs it/,
    );
    assert.equal((await readVectorSupport(answering(null, null))).state, 'absent');
  });
});

describe('the PostgreSQL team store', { skip: postgresSkip() }, () => {
  let server: TestPostgres;
  let counter = 0;
  const freshDatabase = (): string => server.createDatabase(`store_test_${++counter}`);
  const home = tempHome();

  before(async () => {
    server = await startPostgres();
  });
  after(() => {
    server?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  const cli = (args: string[]) => runCli(args, { home });
  const query = async <T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query<T>(sql)).rows;
    } finally {
      await client.end();
    }
  };

  test('doctor reports a configured team store: its schema version against this build, and passes once the store is migrated', async () => {
    const url = freshDatabase();
    const doctorSays = async () => {
      const doctor = await runCli(['doctor', '--json', '--no-canary'], { home, env: { METACLAW_DATABASE_URL: url } });
      return (JSON.parse(doctor.stdout) as { checks: Array<{ name: string; verdict: string; detail: string; fix?: string }> }).checks.find(
        (check) => check.name === 'team store',
      )!;
    };
    const empty = await doctorSays();
    assert.equal(empty.verdict, 'fail', 'start refuses a store whose schema is older than this build');
    assert.match(
      empty.detail,
      new RegExp(
        `reachable, schema version 0 of ${LATEST}, (vector recall|keyword-only recall: (pgvector \\S+ is available|the pgvector extension is not available))`,
      ),
    );
    assert.match(empty.fix ?? '', /metaclaw store migrate/);
    assert.equal((await cli(['store', 'migrate', '--store', url])).code, 0);
    const migrated = await doctorSays();
    assert.equal(migrated.verdict, 'pass');
    assert.match(
      migrated.detail,
      new RegExp(`schema version ${LATEST} of ${LATEST}, .*; \`metaclaw start\` serves from it .*learning from the team queue on every node`),
    );
  });

  test('store migrate creates the whole schema and records every version; a second migrate changes nothing', async () => {
    const url = freshDatabase();
    const first = await cli(['store', 'migrate', '--store', url, '--json']);
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(
      JSON.parse(first.stdout).applied,
      MIGRATIONS.map((migration) => migration.version),
    );
    const tables = (await query<{ table_name: string }>(url, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")).map(
      (row) => row.table_name,
    );
    for (const table of [...TEAM_TABLES.map((team) => team.name), ...TEAM_ONLY_TABLES]) assert.ok(tables.includes(table), `${table} exists`);
    assert.ok(!tables.includes('memory_fts'), 'the FTS5 index stays SQLite-only');
    const versions = await query<{ version: number; description: string }>(url, 'SELECT version, description FROM metaclaw_schema_migrations ORDER BY version');
    assert.deepEqual(
      versions.map((row) => row.version),
      MIGRATIONS.map((migration) => migration.version),
    );
    const second = await cli(['store', 'migrate', '--store', url, '--json']);
    assert.equal(second.code, 0, second.stderr);
    assert.deepEqual(JSON.parse(second.stdout), { url, from: LATEST, to: LATEST, applied: [] });
  });

  test('every SQLite table has its PostgreSQL twin: same columns in the same order, compatible types, same NOT NULLs, and every SQLite index', async () => {
    const url = freshDatabase();
    const pool = openPool(url);
    const sqlite = openDatabase(':memory:');
    try {
      await migratePostgres(pool);
      const compatible: Record<string, string[]> = {
        INTEGER: ['integer', 'bigint'],
        REAL: ['double precision'],
        TEXT: ['text'],
        BLOB: ['bytea'],
      };
      for (const table of TEAM_TABLES.filter((candidate) => !candidate.from)) {
        const expected = sqlite.prepare<[], { name: string; type: string; notnull: number; pk: number }>(`PRAGMA table_info("${table.name}")`).all();
        const actual = (
          await pool.query<{ column_name: string; data_type: string; is_nullable: string }>(
            'SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position',
            [table.name],
          )
        ).rows;
        // The SQLite columns in their order, and the columns only a team store has (with defaults):
        // a column both stores gained later comes after those, as ALTER TABLE adds it.
        const teamOnly = table.teamOnlyColumns ?? [];
        assert.deepEqual(
          actual.map((column) => column.column_name).filter((name) => !teamOnly.includes(name)),
          expected.map((column) => column.name),
          table.name,
        );
        assert.deepEqual(
          actual.map((column) => column.column_name).filter((name) => teamOnly.includes(name)),
          [...teamOnly],
          table.name,
        );
        const shared = actual.filter((column) => !teamOnly.includes(column.column_name));
        expected.forEach((column, index) => {
          assert.ok(compatible[column.type]?.includes(shared[index]!.data_type), `${table.name}.${column.name}: ${column.type} vs ${shared[index]!.data_type}`);
          if (column.notnull) assert.equal(shared[index]!.is_nullable, 'NO', `${table.name}.${column.name} NOT NULL`);
        });
      }
      // A table a later migration adds to SQLite must be added to the team store (and its import) too.
      const sqliteTables = sqlite
        .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'memory_fts%'")
        .all()
        .map((row) => row.name);
      for (const name of sqliteTables)
        assert.ok(
          TEAM_TABLES.some((table) => table.name === name),
          `SQLite table ${name} has a team table`,
        );
      const sqliteIndexes = sqlite.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL").all();
      const pgIndexes = new Set(
        (await pool.query<{ indexname: string }>("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'")).rows.map((row) => row.indexname),
      );
      for (const { name } of sqliteIndexes) assert.ok(pgIndexes.has(name), `index ${name}`);
    } finally {
      sqlite.close();
      await pool.end();
    }
  });

  test("the pool names itself 'metaclaw' to the server and sets a statement timeout", async () => {
    const pool = openPool(server.url, { statementTimeoutMs: 1_234 });
    try {
      const row = (
        await pool.query<{ name: string; timeout: string }>(
          "SELECT current_setting('application_name') AS name, current_setting('statement_timeout') AS timeout",
        )
      ).rows[0]!;
      assert.deepEqual(row, { name: 'metaclaw', timeout: '1234ms' });
      await assert.rejects(pool.query('SELECT pg_sleep(3)'), /statement timeout/);
    } finally {
      await pool.end();
    }
  });

  test('two nodes migrating at once apply each version once', async () => {
    const url = freshDatabase();
    const pools = [openPool(url), openPool(url)];
    try {
      const results = await Promise.all(pools.map((pool) => migratePostgres(pool)));
      const applied = results.map((result) => result.applied.length).sort((a, b) => a - b);
      assert.deepEqual(applied, [0, MIGRATIONS.length]);
      const rows = await query<{ count: string }>(url, 'SELECT count(*) AS count FROM metaclaw_schema_migrations');
      assert.equal(Number(rows[0]!.count), MIGRATIONS.length);
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });

  test('store status and doctor say team recall is keyword-only because pgvector is not on this server (the test PostgreSQL has none)', async () => {
    const url = freshDatabase();
    assert.equal((await cli(['store', 'migrate', '--store', url])).code, 0);
    const notice =
      'keyword-only recall: the pgvector extension is not available on this PostgreSQL server (memory vectors need it; team nodes recall by keyword)';
    const text = await cli(['store', 'status', '--store', url]);
    assert.equal(text.code, 0, text.stderr);
    assert.ok(text.stdout.split('\n').includes(`recall      ${notice}`), text.stdout);
    assert.deepEqual(JSON.parse((await cli(['store', 'status', '--store', url, '--json'])).stdout).vector, { state: 'absent', notice });
    const doctor = await runCli(['doctor', '--json', '--no-canary'], { home, env: { METACLAW_DATABASE_URL: url } });
    const check = (JSON.parse(doctor.stdout) as { checks: Array<{ name: string; detail: string }> }).checks.find(
      (candidate) => candidate.name === 'team store',
    );
    assert.ok(check?.detail.includes(notice), doctor.stdout);
  });

  test('a store whose schema is newer than this MetaClaw is refused, never downgraded', async () => {
    const url = freshDatabase();
    assert.equal((await cli(['store', 'migrate', '--store', url])).code, 0);
    await query(url, `INSERT INTO metaclaw_schema_migrations (version, description) VALUES (${LATEST + 1}, 'from the future')`);
    const refused = await cli(['store', 'migrate', '--store', url]);
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr.trim(),
      new RegExp(`^The team store's schema \\(version ${LATEST + 1}\\) is newer than this MetaClaw \\(knows up to ${LATEST}\\); upgrade MetaClaw\\.$`),
    );
    const status = JSON.parse((await cli(['store', 'status', '--store', url, '--json'])).stdout);
    assert.equal(status.schema_version, LATEST + 1);

    // Every way in refuses it in one line naming what to do, and leaves it as it is: a node, the memory and skills commands, doctor, an import.
    const env = { METACLAW_DATABASE_URL: url, METACLAW_PROXY_API_KEY: 'owner-key-for-the-newer-store' };
    const newer = new RegExp(
      `schema version ${LATEST + 1}, newer than this MetaClaw \\(${LATEST}\\); upgrade MetaClaw\\.|schema \\(version ${LATEST + 1}\\) is newer than this MetaClaw`,
    );
    const before = await query(url, 'SELECT version, description FROM metaclaw_schema_migrations ORDER BY version');
    const personal = tempHome();
    openDatabase(join(personal, 'metaclaw.db')).close();
    for (const args of [
      ['start', '--port', String(await freePort())],
      ['memory', 'stats'],
      ['skills', 'list'],
      ['store', 'import-sqlite', personal],
    ]) {
      const result = await runCli(args, { home, env });
      const shown = `metaclaw ${args.join(' ')}:\n${result.stdout}\n${result.stderr}`;
      assert.equal(result.code, 1, shown);
      assert.match(result.stderr, newer, shown);
      assert.doesNotMatch(`${result.stdout}${result.stderr}`, /\n\s+at |StoreError|node_modules/, shown);
    }
    const doctor = await runCli(['doctor', '--json', '--no-canary'], { home, env });
    const check = (JSON.parse(doctor.stdout) as { checks: Array<{ name: string; verdict: string; detail: string }> }).checks.find(
      (c) => c.name === 'team store',
    );
    assert.equal(check?.verdict, 'fail', doctor.stdout);
    assert.match(check.detail, new RegExp(`${LATEST + 1}`), doctor.stdout);
    assert.deepEqual(
      await query(url, 'SELECT version, description FROM metaclaw_schema_migrations ORDER BY version'),
      before,
      'nothing was migrated or downgraded',
    );

    // And the other way: a personal database newer than this build is not imported into a current store.
    const current = freshDatabase();
    assert.equal((await cli(['store', 'migrate', '--store', current])).code, 0);
    const future = new Database(join(personal, 'metaclaw.db'));
    future.pragma('user_version = 999');
    future.close();
    const imported = await runCli(['store', 'import-sqlite', personal], { home, env: { METACLAW_DATABASE_URL: current } });
    assert.equal(imported.code, 1, imported.stderr);
    assert.match(imported.stderr.trim(), /^.*metaclaw\.db has schema version 999, newer than this MetaClaw \(knows up to \d+\); upgrade MetaClaw\.$/);
    assert.deepEqual(await query(current, 'SELECT count(*)::int AS n FROM sessions'), [{ n: 0 }]);
    rmSync(personal, { recursive: true, force: true });
  });

  test('import-sqlite round trip: a personal install made by the real proxy is copied row for row; a second import is refused, --merge skips what is there', async () => {
    // The upstream also answers embeddings, so memory vectors (sqlite-vec's memory_vec) are part of what is copied.
    const upstream = await ScriptedUpstream.start();
    const chat = upstream.defaultHandler;
    const embeddings = embeddingsHandler();
    upstream.defaultHandler = (request, response) => (request.path.endsWith('/embeddings') ? embeddings(request, response) : chat(request, response));
    const proxy = await startProxy({
      config: {
        llm: { api_base: `${upstream.url}/v1`, api_key: 'k' },
        memory: { flush_every_n_turns: 1, embedding: { api_base: `${upstream.url}/v1`, model: 'embed-1' } },
      },
    });
    const personal = proxy.home;
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      for (const [session, text] of [
        ['garden', 'Plan a vegetable garden for a small balcony.'],
        ['garden', 'Which tomatoes grow well in pots?'],
        ['deploy', 'Our deploys go out on Tuesdays from the release branch.'],
      ] as const) {
        await client.chat.completions.create(
          { model: 'scripted-model', messages: [{ role: 'user', content: text }] },
          { headers: { 'X-Session-Id': session } },
        );
      }
      const starter = await proxy.cli(['skills', 'install-starter']);
      assert.equal(starter.code, 0, starter.stderr);
      const added = await proxy.cli(['memory', 'add', 'The staging cluster is called blue-harbor', '--type', 'semantic']);
      assert.equal(added.code, 0, added.stderr);
      await waitFor(
        () => {
          const db = new Database(join(personal, 'metaclaw.db'), { readonly: true });
          try {
            return (
              (db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'memory_vec_index'").get() as { n: number }).n > 0 &&
              (db.prepare('SELECT count(*) AS n FROM memory_vec_index').get() as { n: number }).n >= 2
            );
          } finally {
            db.close();
          }
        },
        30_000,
        200,
      );
      await proxy.stop();
      upstream.close().catch(() => undefined);

      const sqlite = new Database(join(personal, 'metaclaw.db'), { readonly: true });
      sqlite.defaultSafeIntegers(true);
      const url = freshDatabase();
      try {
        const imported = await cli(['store', 'import-sqlite', personal, '--store', url, '--json']);
        assert.equal(imported.code, 0, imported.stderr);
        const status = JSON.parse((await cli(['store', 'status', '--store', url, '--json'])).stdout);
        assert.equal(status.schema_version, LATEST);
        for (const table of ['sessions', 'turns', 'turn_payloads', 'memory_units', 'jobs']) assert.ok(status.tables[table] > 0, `${table} has rows to compare`);

        for (const table of TEAM_TABLES.filter((candidate) => !candidate.from)) {
          const expected = sqlite.prepare(`SELECT * FROM "${table.name}"`).all() as Record<string, unknown>[];
          const actual = (await query(url, `SELECT * FROM ${table.name}`)).map((row) =>
            Object.fromEntries(
              Object.entries(row)
                .filter(([key]) => !table.teamOnlyColumns?.includes(key))
                .map(([key, value]) => [key, typeof value === 'string' ? fromPostgresText(value) : value]),
            ),
          );
          assert.equal(status.tables[table.name], expected.length, `${table.name}: row count`);
          assert.deepEqual(canonical(actual), canonical(expected), `${table.name}: every row, column by column`);
        }

        // Vectors: one row per unit, the float32 blob of sqlite-vec as a float4[] (exact: both are float32).
        sqliteVec.load(sqlite);
        const vectors = sqlite
          .prepare('SELECT i.rowid AS rowid, i.scope AS scope, v.embedding AS embedding FROM memory_vec_index i JOIN memory_vec v ON v.rowid = i.rowid')
          .all() as Array<{ rowid: bigint; scope: string; embedding: Buffer }>;
        const copied = await query<{ rowid: bigint; scope: string; embedding: number[] }>(
          url,
          'SELECT rowid, scope, embedding FROM memory_vectors ORDER BY rowid',
        );
        assert.ok(vectors.length >= 2);
        assert.equal(status.tables.memory_vectors, vectors.length);
        assert.deepEqual(
          copied.map((row) => [row.rowid, row.scope, row.embedding.map(Math.fround)]), // float4 is printed shortest: back to float32 it is exact
          vectors
            .sort((a, b) => Number(a.rowid - b.rowid))
            .map((row) => [row.rowid, row.scope, Array.from(new Float32Array(Uint8Array.from(row.embedding).buffer))]),
        );

        // The skills folder beside the database came along, each SKILL.md byte for byte.
        const skillFolders = readdirSync(join(personal, 'skills'), { withFileTypes: true }).filter((entry) => entry.isDirectory());
        const importedSkills = (JSON.parse(imported.stdout) as { skills: { imported: string[]; skipped: unknown[] } }).skills;
        assert.ok(skillFolders.length >= 40);
        assert.equal(importedSkills.imported.length, skillFolders.length, JSON.stringify(importedSkills.skipped));
        const exported = join(home, 'exported-skills');
        const skillPool = openPool(url);
        try {
          await new PgSkillStore(skillPool).exportSkills(exported);
        } finally {
          await skillPool.end();
        }
        for (const folder of skillFolders)
          assert.equal(
            readFileSync(join(exported, folder.name, 'SKILL.md'), 'utf8'),
            readFileSync(join(personal, 'skills', folder.name, 'SKILL.md'), 'utf8'),
            folder.name,
          );

        // Every imported unit is found in the team store's keyword index by its words, as in SQLite.
        const importedResult = JSON.parse(imported.stdout) as { memoryIndexed: number };
        assert.equal(importedResult.memoryIndexed, status.tables.memory_units);
        const pool = openPool(url);
        try {
          const personalMemory = new MemoryStore(openDatabase(join(personal, 'metaclaw.db'), { readonly: true }));
          const units = [...personalMemory.iterate()];
          const staging = units.find((unit) => unit.content.includes('blue-harbor'))!;
          const terms = uniqueTerms('what is the staging cluster called');
          const fromPg = await new PgMemorySearch(pool).search(staging.scope, terms, 10);
          const fromSqlite = personalMemory.search(staging.scope, terms, 10);
          assert.equal(fromPg.hits[0]?.id, staging.id);
          assert.deepEqual(
            fromPg.hits.map((hit) => hit.id),
            fromSqlite.candidates.map((candidate) => candidate.unit.id),
          );
          assert.equal(fromPg.size, units.filter((unit) => unit.scope === staging.scope).length);
        } finally {
          await pool.end();
        }

        const again = await cli(['store', 'import-sqlite', join(personal, 'metaclaw.db'), '--store', url]);
        assert.equal(again.code, 1);
        assert.match(again.stderr, /already holds rows \(sessions, turns, .*\); nothing was imported\. Add --merge/);
        const merged = await cli(['store', 'import-sqlite', personal, '--store', url, '--merge', '--json']);
        assert.equal(merged.code, 0, merged.stderr);
        const result = JSON.parse(merged.stdout) as { tables: Array<{ table: string; read: number; inserted: number }> };
        assert.ok(result.tables.every((table) => table.inserted === 0));
        assert.equal((JSON.parse(merged.stdout) as { skills: { imported: string[] } }).skills.imported.length, 0, 'skills already there are kept');
        const rowsOf = async (table: string) => Number((await query<{ n: bigint }>(url, `SELECT count(*) AS n FROM ${table}`))[0]!.n);
        assert.equal(await rowsOf('memory_search_docs'), status.tables.memory_units, 'a merge leaves the index as it was');
        assert.ok(result.tables.find((table) => table.table === 'turns')!.read > 0);

        // The install grew (a new key in state, a changed one): a merge adds the new row and keeps the old one as it was.
        const grown = join(home, 'grown.db');
        copyFileSync(join(personal, 'metaclaw.db'), grown);
        const writable = new Database(grown);
        const changedKey = (writable.prepare('SELECT key FROM state LIMIT 1').get() as { key: string }).key;
        writable.prepare("UPDATE state SET value = 'changed after import' WHERE key = ?").run(changedKey);
        writable.prepare("INSERT INTO state (key, value) VALUES ('test.grew', 'yes')").run();
        writable.close();
        const grew = await cli(['store', 'import-sqlite', grown, '--store', url, '--merge', '--json']);
        assert.equal(grew.code, 0, grew.stderr);
        const grewTables = (JSON.parse(grew.stdout) as typeof result).tables;
        assert.deepEqual(
          grewTables.filter((table) => table.inserted > 0).map((table) => [table.table, table.inserted]),
          [['state', 1]],
        );
        const values = await query<{ key: string; value: string }>(url, 'SELECT key, value FROM state');
        assert.equal(values.find((row) => row.key === 'test.grew')?.value, 'yes');
        assert.notEqual(values.find((row) => fromPostgresText(row.key) === changedKey)?.value, 'changed after import');

        // Ids were kept and the sequences moved past them: a new row gets the next id.
        const maxJob = sqlite.prepare('SELECT max(id) AS id FROM jobs').get() as { id: bigint };
        const next = await query<{ id: string }>(
          url,
          "INSERT INTO jobs (kind, payload, status, max_attempts, run_after, created_at, updated_at) VALUES ('t', '{}', 'queued', 1, 0, 0, 0) RETURNING id",
        );
        assert.equal(BigInt(next[0]!.id), maxJob.id + 1n);
      } finally {
        sqlite.close();
      }
    } finally {
      rmSync(personal, { recursive: true, force: true });
    }
  });
});

/** Rows as comparable text, whatever the driver returned: integers (number, bigint or int8 text) and floats by value, bytes as hex. */
function canonical(rows: Array<Record<string, unknown>>): string[] {
  return rows
    .map((row) =>
      JSON.stringify(
        Object.fromEntries(
          Object.entries(row).map(([key, value]) => [
            key,
            Buffer.isBuffer(value) ? `hex:${value.toString('hex')}` : typeof value === 'bigint' || typeof value === 'number' ? `num:${String(value)}` : value,
          ]),
        ),
      ),
    )
    .sort();
}
