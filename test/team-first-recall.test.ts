/**
 * A node's first recall is as good as any other: a member's very first request to a freshly
 * started node gets the memory the store holds for them, without the recall running out of its
 * budget on the node's cold work. Real `metaclaw start` nodes on a throwaway PostgreSQL, the real
 * CLI and the real OpenAI client.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { sendJson } from './support/http.js';
import { postgresSkip, startPostgres, type TestPostgres } from './support/postgres.js';
import { startProxy, tempHome, type ProxyHandle } from './support/proxy.js';
import { disposeTeam, teamHelpers } from './support/team.js';
import { ScriptedUpstream } from './support/upstream.js';

const OWNER_KEY = 'owner-key-for-the-first-recall-test';

let postgres: TestPostgres;
let url: string;
let upstream: ScriptedUpstream;
let pool: pg.Pool;
let seed: string;
const nodes: ProxyHandle[] = [];
const keys: Record<string, string> = {};

const { teamEnv, cli, client } = teamHelpers(() => ({ url, seed, pool }), OWNER_KEY, keys);

function startNode(): Promise<ProxyHandle> {
  return startProxy({ env: teamEnv(), config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'upstream-key' }, memory: { auto_extract: false } } });
}

describe("team mode: a node's first recall", { skip: postgresSkip() }, () => {
  before(async () => {
    postgres = await startPostgres();
    url = postgres.createDatabase('team_first_recall');
    pool = new pg.Pool({ connectionString: url, max: 1 });
    pool.on('error', () => undefined);
    upstream = await ScriptedUpstream.start();
    seed = tempHome('metaclaw-team-first-recall-seed-');
    await cli(['store', 'migrate']);
    keys['alice'] = (JSON.parse(await cli(['team', 'add-member', 'alice', '--json'])) as { key: string }).key;
  });

  after(() => disposeTeam({ nodes, pool, upstream, postgres, seed }));

  test("a member's very first request to a freshly started node gets their memory, and /status counts no recall timeout", async () => {
    const writer = await startNode();
    const added = await sendJson(`${writer.url}/v1/memory`, 'POST', {
      headers: { authorization: `Bearer ${keys['alice']!}` },
      body: { type: 'semantic', content: "Alice's cat is named Miso." },
    });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    await writer.dispose();

    // A fresh node on the same store: `metaclaw start` returns once /healthz answers.
    const node = await startNode();
    nodes.push(node);
    await client(node, 'alice').chat.completions.create({ model: 'm', messages: [{ role: 'user', content: '[first] What is my cat named?' }] });
    const sent = upstream.modelRequests().find((request) => request.raw.includes('[first]'));
    assert.ok(sent, 'the upstream got the first request');
    const status = await sendJson(`${node.url}/status`, 'GET', { headers: { authorization: `Bearer ${OWNER_KEY}` } });
    const memory = status.body.memory as { requests: number; timeouts: number; failures: number };
    assert.match(sent.raw, /Miso/, `the first request carries Alice's memory (/status memory: ${JSON.stringify(memory)})`);
    assert.equal(memory.timeouts, 0, 'no recall ran out of its budget');
    assert.equal(memory.failures, 0);
  });
});
