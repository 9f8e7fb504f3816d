/**
 * `metaclaw memory` on a node of a team: with store.url (here METACLAW_DATABASE_URL) set, every
 * command reads and writes the team store the nodes serve from, not the install's own database
 * file, which no node reads.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import OpenAI from 'openai';
import { sendJson } from './support/http.js';
import { postgresSkip } from './support/postgres.js';
import { runCli, startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { openPool } from '../src/store/postgres/index.js';
import { pythonStore } from './support/python-store.js';
import { teamForTests, teamHelpers } from './support/team.js';

const OWNER_KEY = 'owner-key-for-the-team-memory-cli-test';
const RULE = 'Every production deploy needs two approvals from the platform team.';

const team = teamForTests('team_memory_cli');
const { cli, teamEnv } = teamHelpers(() => team, OWNER_KEY, {});
let node: ProxyHandle;

interface DoctorReport {
  checks: Array<{ name: string; verdict: string; detail: string }>;
}

const json = async <T>(args: string[]): Promise<T> => JSON.parse(await cli([...args, '--json'])) as T;
const unitRow = async (id: string) =>
  (
    await team.pool.query<{ scope: string; content: string; core: number; status: string }>(
      'SELECT scope, content, core, status FROM memory_units WHERE id = $1',
      [id],
    )
  ).rows[0];

/** One check of `metaclaw doctor` (which exits 1 here: the seed home has no upstream of its own). */
async function doctorCheck(name: string): Promise<{ verdict: string; detail: string } | undefined> {
  const result = await runCli(['doctor', '--json'], { home: team.seed, env: teamEnv() });
  return (JSON.parse(result.stdout) as DoctorReport).checks.find((check) => check.name === name);
}

/** Memory units in the install's own database file, which a team node never reads (0 when there is no file). */
function personalUnits(): number {
  const path = join(team.seed, 'metaclaw.db');
  if (!existsSync(path)) return 0;
  const db = new Database(path, { readonly: true });
  try {
    const table = db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'memory_units'").get() as { n: number };
    return table.n === 0 ? 0 : (db.prepare('SELECT count(*) AS n FROM memory_units').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

describe('metaclaw memory with a team store', { skip: postgresSkip() }, () => {
  before(async () => {
    await cli(['store', 'migrate']);
    node = await startProxy({ env: teamEnv(), config: { llm: { api_base: `${team.upstream.url}/v1`, api_key: 'upstream-key' } } });
    team.nodes.push(node);
  });

  test('a standing rule added from the CLI lands in the team store, a running node injects it into the next request, and search, show, edit, core, stats and forget work on the units the nodes hold', async () => {
    const rule = await json<{ id: string; scope: string; core: boolean }>(['memory', 'add', RULE, '--core']);
    assert.equal(rule.core, true);
    assert.deepEqual(await unitRow(rule.id), { scope: 'default', content: RULE, core: 1, status: 'active' }, 'the rule is a row of the team store');

    // The node that serves the owner's requests reads it from the store (its trigger tells the node at once).
    const client = new OpenAI({ baseURL: `${node.url}/v1`, apiKey: OWNER_KEY, maxRetries: 0 });
    await waitFor(
      async () => {
        await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Can I ship the billing fix to production now?' }] });
        return team.upstream.modelRequests().at(-1)!.raw.includes('two approvals');
      },
      15_000,
      300,
    );

    // A unit added over a node's HTTP API is one the CLI reads.
    const added = await sendJson(`${node.url}/v1/memory`, 'POST', {
      headers: { authorization: `Bearer ${OWNER_KEY}` },
      body: { content: 'The shared staging cluster is called blue-harbor.', type: 'semantic' },
    });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    const fact = added.body as { id: string };
    const shown = await cli(['memory', 'show', fact.id]);
    assert.match(shown, /The shared staging cluster is called blue-harbor\./);
    const hits = await json<Array<{ id: string }>>(['memory', 'search', 'staging cluster name']);
    assert.deepEqual(
      hits.map((hit) => hit.id),
      [fact.id],
      'search runs over the team index',
    );

    await cli(['memory', 'edit', fact.id, '--content', 'The shared staging cluster is called green-harbor.']);
    assert.equal((await unitRow(fact.id))?.content, 'The shared staging cluster is called green-harbor.');
    const core = await json<Array<{ id: string }>>(['memory', 'core']);
    assert.deepEqual(
      core.map((unit) => unit.id),
      [rule.id],
    );

    const stats = await json<{ scopes: Array<{ scope: string; active: number; core: number }>; tables: Array<{ table: string; rows: number }>; store: string }>(
      ['memory', 'stats'],
    );
    const scope = stats.scopes.find((item) => item.scope === 'default');
    assert.ok(scope && scope.core === 1 && scope.active >= 2, JSON.stringify(stats.scopes));
    const units = Number((await team.pool.query<{ n: string }>('SELECT count(*) AS n FROM memory_units')).rows[0]!.n);
    assert.equal(stats.tables.find((table) => table.table === 'memory_units')?.rows, units, "the team store's row counts");
    assert.match(stats.store, /^postgres(ql)?:\/\//);
    assert.ok(!stats.store.includes(new URL(team.url).password || 'no-password-in-url'), 'the password is masked');

    const forgot = await cli(['memory', 'forget', fact.id]);
    assert.match(forgot, /It is gone from the team store\./);
    assert.equal(await unitRow(fact.id), undefined);
    assert.equal(personalUnits(), 0, "the install's own database holds none of it");
  });

  test('a store not migrated is named with what to do in one line, its password masked, and nothing is written to it', async () => {
    const bare = new URL(team.postgres.createDatabase('team_memory_cli_bare'));
    bare.password = 'not-for-the-terminal';
    for (const args of [
      ['memory', 'add', RULE, '--core'],
      ['memory', 'stats'],
      ['memory', 'core'],
    ]) {
      const result = await runCli(args, { home: team.seed, env: { ...teamEnv(), METACLAW_DATABASE_URL: bare.toString() } });
      assert.equal(result.code, 1, `${args.join(' ')}: ${result.stdout}`);
      // It said `failed: relation "memory_units" does not exist`, which names no fix.
      assert.match(
        result.stderr,
        /^The team store at postgres:\/\/postgres:\*\*\*\*@[^ ]+ has schema version 0; this MetaClaw needs \d+\. Run `metaclaw store migrate` first\./,
      );
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
      assert.ok(!result.stderr.includes('not-for-the-terminal'), result.stderr);
    }
    const pool = openPool(bare.toString(), { max: 1 });
    try {
      assert.equal((await pool.query("SELECT to_regclass('memory_units') AS t")).rows[0].t, null, 'nothing was created in the bare store');
    } finally {
      await pool.end();
    }
  });

  test("export, import (JSONL and the Python MetaClaw's store) and ingest on a team store go to the team store and its queue", async () => {
    const exported = join(team.seed, 'exported.jsonl');
    await cli(['memory', 'export', '-o', exported]);
    const lines = readFileSync(exported, 'utf8').trim().split('\n');
    assert.ok(
      lines.some((line) => line.includes('two approvals')),
      'the export is read from the team store',
    );

    const moved = join(team.seed, 'moved.jsonl');
    writeFileSync(moved, `${JSON.stringify({ type: 'preference', content: 'Carol prefers answers in metric units.', scope: 'user:carol' })}\n`);
    const imported = await json<{ imported: number }>(['memory', 'import', moved]);
    assert.equal(imported.imported, 1);
    assert.equal((await team.pool.query("SELECT 1 FROM memory_units WHERE scope = 'user:carol'")).rowCount, 1);

    // Where the Python MetaClaw keeps its store in a home both share: `doctor` offers to import it until it is.
    const python = join(team.seed, 'memory', 'memory.db');
    mkdirSync(dirname(python), { recursive: true });
    pythonStore(python);
    const offered = await doctorCheck('metaclaw memories');
    assert.equal(offered?.verdict, 'warn', JSON.stringify(offered));
    const fromPython = await json<{ imported: number; skipped: Array<{ line: number; id: string; reason: string }> }>(['memory', 'import', python]);
    assert.equal(fromPython.imported, 4, JSON.stringify(fromPython));
    assert.deepEqual(
      fromPython.skipped.map((item) => item.id),
      ['m-old-cat', 'm-trip', 'm-archived', 'm-gossip'],
      'rows skipped for the same reasons as on the personal store, named by their row',
    );
    const cat = await team.pool.query<{ scope: string }>("SELECT scope FROM memory_units WHERE content LIKE '%Biscuit%'");
    assert.deepEqual(
      cat.rows.map((row) => row.scope),
      ['default'],
    );
    const noted = await doctorCheck('metaclaw memories');
    assert.equal(noted?.verdict, 'pass', `doctor stops offering the import: ${JSON.stringify(noted)}`);

    const conversation = join(team.seed, 'conversation.jsonl');
    writeFileSync(
      conversation,
      [
        { role: 'user', content: 'We moved the weekly sync to Thursdays at ten.' },
        { role: 'assistant', content: 'Noted: Thursdays at ten.' },
      ]
        .map((turn) => JSON.stringify(turn))
        .join('\n'),
    );
    const ingested = await json<{ stored: unknown[]; extraction_job: number | null }>(['memory', 'ingest', conversation, '--session', 'cli-import-1']);
    assert.equal(ingested.stored.length, 2);
    assert.equal((await team.pool.query("SELECT 1 FROM memory_units WHERE content LIKE '%weekly sync to Thursdays%'")).rowCount, 1);
    assert.ok(ingested.extraction_job !== null, 'extraction is queued');
    assert.equal((await team.pool.query('SELECT kind FROM jobs WHERE id = $1', [ingested.extraction_job])).rowCount, 1, "in the team's queue");
    assert.equal(personalUnits(), 0, "the install's own database holds none of it");
  });
});
