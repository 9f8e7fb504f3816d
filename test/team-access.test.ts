/**
 * What a member's key means on the nodes of a team store: headers cannot widen its scope, a client
 * that sends no session id keeps one session across nodes, `metaclaw team rotate-key` takes effect
 * on every node and leaves only a hash in the store, and a node finds the store from config.yaml.
 * Real `metaclaw start` nodes on one throwaway PostgreSQL, the real CLI and the real OpenAI client.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { before, describe, test } from 'node:test';
import type OpenAI from 'openai';
import { sendJson } from './support/http.js';
import { postgresSkip } from './support/postgres.js';
import { startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { teamForTests, teamHelpers } from './support/team.js';

const OWNER_KEY = 'owner-key-for-the-team-access-test';

const team = teamForTests('team_access');
const { nodes } = team;
const keys: Record<string, string> = {};

const { teamEnv, cli, client, rows, addMembers, startTeam, memoryCounts } = teamHelpers(() => team, OWNER_KEY, keys);

function llmConfig() {
  return { llm: { api_base: `${team.upstream.url}/v1`, api_key: 'upstream-key' }, memory: { auto_extract: false } };
}

/** What the upstream was sent for the model request whose user message holds `marker`. */
function sentFor(marker: string): string {
  const found = team.upstream.modelRequests().find((request) => request.raw.includes(marker));
  assert.ok(found, `the upstream got the request marked ${marker}`);
  return found.raw;
}

function ask(node: ProxyHandle, member: string, messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[], headers: Record<string, string> = {}) {
  return client(node, member).chat.completions.create({ model: 'm', messages }, { headers });
}

/** Whether `key` is refused (401) or served (200) by `node` on a model route. */
async function answers(node: ProxyHandle, key: string): Promise<number> {
  const response = await fetch(`${node.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'are you there?' }] }),
  });
  await response.arrayBuffer();
  return response.status;
}

describe("team mode: a member's key on the nodes of a team store", { skip: postgresSkip() }, () => {
  before(async () => {
    nodes.push(...(await startTeam(['alice', 'bob'], 2, llmConfig())));
  });

  test("X-User-Id and X-Memory-Scope cannot widen a member's scope on a node: Bob's search and model request get Bob's scope only", async () => {
    const added = await sendJson(`${nodes[0]!.url}/v1/memory`, 'POST', {
      headers: { authorization: `Bearer ${keys['alice']!}` },
      body: { type: 'semantic', content: "Alice's cat is named Miso." },
    });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    assert.equal(added.body.scope, 'user:alice');

    const widening = { 'x-user-id': 'alice', 'x-memory-scope': 'user:alice' };
    const search = await sendJson(`${nodes[1]!.url}/v1/memory/search`, 'POST', {
      headers: { authorization: `Bearer ${keys['bob']!}`, ...widening },
      body: { query: 'cat named Miso' },
    });
    assert.equal(search.status, 200, JSON.stringify(search.body));
    assert.equal(search.body.scope, 'user:bob');
    assert.deepEqual(search.body.results, []);
    const named = await sendJson(`${nodes[0]!.url}/v1/memory/search`, 'POST', {
      headers: { authorization: `Bearer ${keys['bob']!}` },
      body: { query: 'cat named Miso', scope: 'user:alice' },
    });
    assert.equal(named.status, 403, 'naming another scope in the body is refused');

    // The control: with Alice's key, the node gives her request her memory.
    await waitFor(
      async () => {
        const marker = `[widen-alice-${Date.now()}]`;
        await ask(nodes[1]!, 'alice', [{ role: 'user', content: `${marker} What is my cat named?` }]);
        return /Miso/.test(sentFor(marker));
      },
      5_000,
      20,
    );
    const before = await memoryCounts(nodes[1]!);
    await ask(nodes[1]!, 'bob', [{ role: 'user', content: '[widen-bob] What is my cat named?' }], widening);
    const after = await memoryCounts(nodes[1]!);
    assert.equal(after.requests, before.requests + 1);
    assert.equal(after.timeouts + after.failures, before.timeouts + before.failures, "recall ran in full for Bob's request");
    assert.doesNotMatch(sentFor('[widen-bob]'), /Miso/, "Alice's memory never reaches Bob's request");
  });

  test('a client that sends no session id keeps one session across nodes: turn 1 on node A and turn 2 on node B are seq 1 and 2 of it, and a second run of the same words opens a new one', async () => {
    const opening = { role: 'user' as const, content: '[no-id] Plan the migration of the billing service to the new cluster.' };
    const conversation = async (): Promise<void> => {
      const first = await ask(nodes[0]!, 'alice', [opening]);
      // Seconds later in real use; a short pause lets node A's announcement reach node B.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await ask(nodes[1]!, 'alice', [
        opening,
        { role: 'assistant', content: first.choices[0]!.message.content ?? '' },
        { role: 'user', content: '[no-id] Now list the risks of that plan.' },
      ]);
    };
    const placed = (count: number) =>
      waitFor(async () => {
        const found = await rows<{ session_id: string; seq: number }>("SELECT session_id, seq FROM turns WHERE query LIKE '[no-id]%' ORDER BY started_at, seq");
        return found.length === count ? found : undefined;
      }, 10_000);

    await conversation();
    const once = await placed(2);
    assert.equal(new Set(once.map((row) => row.session_id)).size, 1, `one session: ${JSON.stringify(once)}`);
    assert.deepEqual(
      once.map((row) => row.seq),
      [1, 2],
    );
    assert.match(once[0]!.session_id, /^alice~/, "the session is the member's own");

    await conversation();
    const twice = await placed(4);
    const second = twice.slice(2);
    assert.equal(new Set(second.map((row) => row.session_id)).size, 1, `the second run is one session: ${JSON.stringify(twice)}`);
    assert.notEqual(second[0]!.session_id, once[0]!.session_id, 'a second run of the same opening words is a session of its own');
    assert.deepEqual(
      second.map((row) => row.seq),
      [1, 2],
    );
  });

  test('team rotate-key: every node refuses the old key and serves the new one within about a second; team list and the members table hold no key, only its SHA-256', async () => {
    const old = keys['alice']!;
    for (const node of nodes) assert.equal(await answers(node, old), 200);
    const rotated = JSON.parse(await cli(['team', 'rotate-key', 'alice', '--json'])) as { key: string };
    const since = Date.now();
    assert.notEqual(rotated.key, old);
    keys['alice'] = rotated.key;
    const delays = await Promise.all(
      nodes.map((node) =>
        waitFor(
          async () => ((await answers(node, old)) === 401 && (await answers(node, rotated.key)) === 200 ? { ms: Date.now() - since } : undefined),
          5_000,
          20,
        ),
      ),
    );
    const slowest = Math.max(...delays.map((delay) => delay.ms));
    assert.ok(slowest <= 1_500, `every node took the new key within about a second (slowest ${slowest} ms)`);

    const listed = await cli(['team', 'list', '--json']);
    const members = JSON.parse(listed) as Array<{ name: string }>;
    assert.deepEqual(members.map((member) => member.name).sort(), ['alice', 'bob']);
    for (const key of [old, rotated.key, keys['bob']!]) assert.ok(!listed.includes(key), 'team list shows no full key');

    const stored = await rows<Record<string, unknown>>('SELECT * FROM team_members ORDER BY name');
    const alice = stored.find((row) => row['name'] === 'alice')!;
    assert.equal(alice['key_hash'], createHash('sha256').update(rotated.key, 'utf8').digest('hex'));
    const bob = stored.find((row) => row['name'] === 'bob')!;
    assert.equal(bob['key_hash'], createHash('sha256').update(keys['bob']!, 'utf8').digest('hex'));
    const everything = JSON.stringify(stored);
    for (const key of [old, rotated.key, keys['bob']!]) assert.ok(!everything.includes(key), 'no column holds a plaintext key');
  });

  test('a node started with store.url in its config.yaml (no METACLAW_DATABASE_URL, no --store) serves from the team store', async () => {
    const node = await startProxy({ env: { METACLAW_PROXY_API_KEY: OWNER_KEY }, config: { ...llmConfig(), store: { url: team.url } } });
    nodes.push(node);
    const status = await sendJson(`${node.url}/status`, 'GET', { headers: { authorization: `Bearer ${OWNER_KEY}` } });
    assert.equal(status.status, 200);
    assert.equal(status.body.store.engine, 'postgres');
    // Bob's key exists only in the team store.
    await ask(node, 'bob', [{ role: 'user', content: '[from-config] Which node is this?' }]);
    await waitFor(async () => (await rows("SELECT id FROM turns WHERE query LIKE '[from-config]%'")).length === 1, 10_000);
  });

  test("a member's very first request to a freshly started node gets their memory: the node warmed its recall before answering /healthz, and /status counts no recall timeout", async () => {
    await addMembers(['carol']);
    // The running node learns of the new member within about a second.
    await waitFor(
      async () =>
        (
          await sendJson(`${nodes[0]!.url}/v1/memory`, 'POST', {
            headers: { authorization: `Bearer ${keys['carol']!}` },
            body: { type: 'semantic', content: "Carol's dog is named Biscuit." },
          })
        ).status === 201,
      5_000,
    );
    // `metaclaw start` returns once /healthz answers; the request follows at once.
    const node = await startProxy({ env: teamEnv(), config: llmConfig() });
    nodes.push(node);
    await ask(node, 'carol', [{ role: 'user', content: '[first-recall] What is my dog named?' }]);
    const memory = await memoryCounts(node);
    assert.match(sentFor('[first-recall]'), /Biscuit/, `the first request carries Carol's memory (/status memory: ${JSON.stringify(memory)})`);
    assert.equal(memory.requests, 1);
    assert.equal(memory.timeouts + memory.failures, 0, 'the first recall ran in full');
  });
});
