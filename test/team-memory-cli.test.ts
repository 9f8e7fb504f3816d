/**
 * `metaclaw memory` on a node of a team: with store.url (here METACLAW_DATABASE_URL) set, every
 * command reads and writes the team store the nodes serve from, not the install's own database
 * file, which no node reads.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import OpenAI from 'openai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type pg from 'pg';
import { embeddingsHandler } from './support/embeddings.js';
import { sendJson } from './support/http.js';
import { startPgliteTeam, type TestPglite } from './support/pglite.js';
import { postgresSkip } from './support/postgres.js';
import { CLI, cleanEnv, freePort, runCli, startProxy, tempHome, waitFor, type ProxyHandle } from './support/proxy.js';
import { openPool } from '../src/store/postgres/index.js';
import { pythonStore } from './support/python-store.js';
import { disposeTeam, teamForTests, teamHelpers } from './support/team.js';
import { json as answer, ScriptedUpstream } from './support/upstream.js';

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

/** Asks the node as the owner in `session` until the upstream sees `marker` (the node has read the new rule). */
async function askUntilInjected(marker: string, question: string, session: string): Promise<void> {
  const client = new OpenAI({ baseURL: `${node.url}/v1`, apiKey: OWNER_KEY, maxRetries: 0 });
  await waitFor(
    async () => {
      await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: question }] }, { headers: { 'X-Session-Id': session } });
      return team.upstream.modelRequests().at(-1)!.raw.includes(marker);
    },
    15_000,
    300,
  );
}

/** The tables of turns, bodies and memory whose rows quote `marker` anywhere. */
async function tablesQuoting(marker: string): Promise<string[]> {
  const found: string[] = [];
  for (const table of ['turns', 'turn_payloads', 'payload_segments', 'memory_units']) {
    const rows = await team.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table} t WHERE t::text LIKE $1`, [`%${marker}%`]);
    if (Number(rows.rows[0]!.n) > 0) found.push(table);
  }
  return found;
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

  test('a rule forgotten from the CLI leaves the turns of the sessions a node injected it into, in every table of the team store', async () => {
    const marker = 'zephyrquill';
    const rule = await json<{ id: string }>(['memory', 'add', `Tag every ${marker} release\nwith the build number.`, '--core']);
    await askUntilInjected(marker, 'Which steps does a release take?', 'team-rule-applied');
    const holding = () => tablesQuoting(marker);
    // The node records the turn that injected it.
    await waitFor(async () => (await holding()).includes('turn_payloads'), 15_000, 200);

    assert.match(await cli(['memory', 'forget', rule.id]), /It is gone from the team store\./);
    assert.deepEqual(await holding(), [], 'no turn, body or part quotes the forgotten rule');
  });

  test("forgetting the shared scope also scrubs the owner's sessions its rules were injected into (found by the ids the turns record)", async () => {
    const marker = 'velvetcompass';
    const rule = await json<{ id: string; scope: string }>([
      'memory',
      'add',
      `Before any ${marker} deploy, page the on-call lead.`,
      '--core',
      '--scope',
      'team',
    ]);
    assert.equal(rule.scope, 'team');
    await askUntilInjected(marker, 'What do I do before a deploy?', 'owner-shared-rule-applied');
    const holding = () => tablesQuoting(marker);
    await waitFor(async () => (await holding()).some((table) => table === 'turn_payloads' || table === 'payload_segments'), 15_000, 200);
    const session = (await team.pool.query<{ scope: string }>("SELECT scope FROM sessions WHERE id = 'owner-shared-rule-applied'")).rows[0];
    assert.equal(session?.scope, 'default', "the turn is the owner's, in another scope than the rule's");

    assert.match(await cli(['memory', 'forget-scope', 'team', '--yes']), /Forgot 1 memory of scope team\./);
    assert.deepEqual(await holding(), [], 'no turn, body or part quotes the forgotten shared rule');
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

/**
 * With pgvector in the team store (PGlite with its extension: this machine's Debian PostgreSQL has
 * none, so `CREATE EXTENSION vector` fails there) and a node whose memory.embedding is set. The CLI
 * runs on the node's machine, with its config. The scripted embeddings give "quuxer" the meaning of
 * "zorblat", so only a vector links a question about the one to a memory about the other.
 */
describe('metaclaw memory on a team store with memory vectors', () => {
  const OWNER = 'owner-key-for-the-team-memory-cli-vectors-test';
  const state = { url: '', seed: '', pool: undefined as unknown as pg.Pool };
  const vectorTeam = teamHelpers(() => state, OWNER, {});
  let server: TestPglite;
  let upstream: ScriptedUpstream;
  let embedder: ProxyHandle;
  let embeddingsDown = false;

  /** `metaclaw memory …` in the node's home (memory.embedding set there), which must succeed. */
  const nodeCli = async (args: string[]): Promise<{ stdout: string; stderr: string }> => {
    const result = await embedder.cli(args, { env: vectorTeam.teamEnv() });
    assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
    return result;
  };
  /** Until the unit holding exactly `content` has a vector in the team store. */
  const embedded = (content: string, what: string) =>
    waitFor(
      async () =>
        (await state.pool.query('SELECT 1 FROM memory_vectors v JOIN memory_units u ON u.rowid = v.rowid WHERE u.content = $1', [content])).rowCount === 1,
      20_000,
      200,
    ).catch(() => {
      throw new Error(`${what}: the running node never embedded "${content}"`);
    });
  const embedJobsPending = async () =>
    Number((await state.pool.query<{ n: string }>("SELECT count(*) AS n FROM jobs WHERE kind = 'memory.embed' AND status IN ('queued', 'leased')")).rows[0]!.n);

  before(async () => {
    server = await startPgliteTeam(state, 'metaclaw-team-memory-cli-vectors-');
    upstream = await ScriptedUpstream.start();
    const chat = upstream.defaultHandler;
    const embed = embeddingsHandler(() => embeddingsDown, new Map([['quuxer', 'zorblat']]));
    upstream.defaultHandler = (request, response) => {
      if (request.path.endsWith('/embeddings')) return embed(request, response);
      if (request.method === 'GET') return answer(response, 200, { object: 'list', data: [{ id: 'm', object: 'model' }] });
      return chat(request, response);
    };
    await vectorTeam.cli(['store', 'migrate']);
    embedder = await startProxy({
      env: vectorTeam.teamEnv(),
      config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'upstream-key' }, memory: { embedding: { api_base: `${upstream.url}/v1`, model: 'embed-1' } } },
    });
    // The job the node queues at its start (for units stored while no node embedded) is done: what is embedded later was queued later.
    await waitFor(async () => (await embedJobsPending()) === 0, 30_000, 200);
  });

  after(async () => {
    await disposeTeam({ nodes: embedder ? [embedder] : [], pool: state.pool, upstream, seed: state.seed });
    await server?.stop();
  });

  test('units added and imported from the CLI are queued for embedding with their write, and the running node embeds them without a restart', async () => {
    const added = JSON.parse((await nodeCli(['memory', 'add', 'Zorblat sends the invoices.', '--json'])).stdout) as { id: string };
    assert.ok(added.id);
    // Queued in the team queue by the write itself (before, the CLI queued nothing: the node embedded only at its next start).
    await embedded('Zorblat sends the invoices.', 'memory add');

    const file = join(state.seed, 'import.jsonl');
    writeFileSync(file, `${JSON.stringify({ type: 'semantic', content: 'The greyhound Pepper hides under the desk during thunderstorms.' })}\n`);
    await nodeCli(['memory', 'import', file]);
    await embedded('The greyhound Pepper hides under the desk during thunderstorms.', 'memory import');
  });

  test('search recalls by meaning as the node does, embedding the query from the CLI', async () => {
    // Added over the node's HTTP API, which queues its embedding: this test reads the CLI's search alone.
    const added = await sendJson(`${embedder.url}/v1/memory`, 'POST', {
      headers: { authorization: `Bearer ${OWNER}` },
      body: { content: 'Zorblat runs on the old rack in Leeds.', type: 'semantic' },
    });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    const fact = added.body as { id: string };
    await embedded('Zorblat runs on the old rack in Leeds.', 'POST /v1/memory');

    const question = 'Who maintains the quuxer?';
    const found = await nodeCli(['memory', 'search', question, '--json']);
    const hits = JSON.parse(found.stdout) as Array<{ id: string }>;
    assert.ok(
      hits.some((hit) => hit.id === fact.id),
      `no keyword links "quuxer" to the unit, only its vector: ${found.stdout}`,
    );
    assert.equal(found.stderr, '');
    assert.ok(
      upstream.requests.some((request) => request.path.endsWith('/embeddings') && JSON.stringify(request.body.input).includes(question)),
      'the CLI embedded the question',
    );
  });

  test("when the embeddings endpoint fails, or the store's vectors are of another model, search says why in one line and keywords answer", async () => {
    const content = 'The greyhound Biscuit naps on the balcony every afternoon.';
    const added = await sendJson(`${embedder.url}/v1/memory`, 'POST', { headers: { authorization: `Bearer ${OWNER}` }, body: { content, type: 'semantic' } });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    // The store's vectors are of embed-1 (this one is written), so the CLI's search embeds its query.
    await embedded(content, 'POST /v1/memory');
    embeddingsDown = true;
    try {
      const fallback = await nodeCli(['memory', 'search', 'Where does Biscuit nap in the afternoon?']);
      assert.match(fallback.stdout, /The greyhound Biscuit naps on the balcony/, 'keywords still answer');
      assert.match(
        fallback.stderr,
        /^Searched by keywords only: the query could not be embedded by embed-1 at http:\/\/127\.0\.0\.1:\d+\/v1 \(embeddings endpoint answered 500: [^\n]*embedding backend down[^\n]*\)\.\n$/,
      );
    } finally {
      embeddingsDown = false;
    }

    // A config that embeds with another model than the store's vectors are of: keywords, and why.
    const other = join(state.seed, 'other-model.yaml');
    writeFileSync(other, readFileSync(join(embedder.home, 'config.yaml'), 'utf8').replace('embed-1', 'embed-2'));
    const asked = 'Where does Biscuit sleep after lunch?';
    const mismatch = await nodeCli(['memory', 'search', asked, '--config', other]);
    assert.match(mismatch.stdout, /The greyhound Biscuit naps on the balcony/);
    assert.equal(
      mismatch.stderr,
      "Searched by keywords only: the store's vectors are of embed-1, and memory.embedding.model here is embed-2 (every node and the CLI should use one model).\n",
    );
    assert.ok(!upstream.requests.some((request) => JSON.stringify(request.body?.input ?? '').includes(asked)), 'no query vector of another model is asked for');
  });

  test('metaclaw mcp on the same machine does the same: memory_add is embedded by the running node, memory_search recalls by meaning', async () => {
    const env = Object.fromEntries(
      Object.entries(cleanEnv(embedder.home, vectorTeam.teamEnv())).filter((entry): entry is [string, string] => entry[1] !== undefined),
    );
    const client = new Client({ name: 'metaclaw-team-memory-cli-test', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], env, stderr: 'pipe' }));
    try {
      const text = (result: unknown) => (result as { content: Array<{ text?: string }> }).content[0]?.text ?? '';
      await client.callTool({ name: 'memory_add', arguments: { content: 'Zorblat waters the office ferns on Fridays.' } });
      await embedded('Zorblat waters the office ferns on Fridays.', 'memory_add over MCP');
      const hits = JSON.parse(text(await client.callTool({ name: 'memory_search', arguments: { query: 'Who maintains the quuxer?' } }))) as Array<{
        content: string;
      }>;
      assert.ok(
        hits.some((hit) => hit.content === 'Zorblat waters the office ferns on Fridays.'),
        JSON.stringify(hits),
      );
    } finally {
      await client.close();
    }
  });

  test("setup on a node of a team does not probe the provider's embeddings (a node never reads that probe) and says what a node uses instead", async () => {
    const home = tempHome('metaclaw-team-memory-cli-setup-');
    const pings = () =>
      upstream.requests.filter((request) => request.path.endsWith('/embeddings') && JSON.stringify(request.body?.input) === '["ping"]').length;
    const before = pings();
    try {
      const args = ['setup', '--yes', '--provider', 'openai', '--api-base', `${upstream.url}/v1`, '--model', 'm', '--api-key-env', 'TEST_KEY'];
      const result = await runCli([...args, '--claw', 'none', '--port', String(await freePort()), '--no-starter-skills'], {
        home,
        env: { ...vectorTeam.teamEnv(), TEST_KEY: 'k' },
      });
      assert.equal(result.code, 0, result.stderr);
      assert.match(
        result.stdout,
        /^Embeddings: not probed\. A team store is configured, and its nodes use memory\.embedding\.\* rather than the provider's endpoint; memory\.embedding\.api_base and memory\.embedding\.model are not both set here[^\n]*recall is by keyword: set both for vectors\.$/m,
      );
      assert.doesNotMatch(result.stdout, /^Retrieval:/m, 'no personal retrieval decision is reported');
      assert.equal(pings(), before, 'the embeddings endpoint was not called');
      const db = join(home, 'metaclaw.db');
      if (existsSync(db)) {
        const sqlite = new Database(db, { readonly: true });
        try {
          const stored = sqlite.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'state'").get() as { n: number };
          const probes =
            stored.n === 0 ? 0 : (sqlite.prepare("SELECT count(*) AS n FROM state WHERE key = 'embeddings.provider_probe'").get() as { n: number }).n;
          assert.equal(probes, 0, 'no probe saved in the personal database');
        } finally {
          sqlite.close();
        }
      }
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
