/**
 * Team members on one proxy: `metaclaw team …` issues keys; a member's key is their API key, fixes
 * their memory scope, and opens only the model routes and their own records.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { sendJson } from './support/http.js';
import { runCli, tempHome } from './support/proxy.js';
import { startScriptedProxy, type ScriptedProxy } from './support/scripted-proxy.js';

const OWNER_KEY = 'owner-key-for-the-team-test';

let scripted: ScriptedProxy;
const keys: Record<string, string> = {};

async function addMember(name: string): Promise<string> {
  const added = await scripted.proxy.cli(['team', 'add-member', name, '--json']);
  assert.equal(added.code, 0, added.stderr);
  return (JSON.parse(added.stdout) as { key: string }).key;
}

function client(key: string, headers: Record<string, string> = {}): OpenAI {
  return new OpenAI({ baseURL: `${scripted.proxy.url}/v1`, apiKey: key, defaultHeaders: headers, maxRetries: 0 });
}

function call(key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  return sendJson(`${scripted.proxy.url}${path}`, method, { body, headers: { authorization: `Bearer ${key}`, ...headers } });
}

/** The text of what the upstream was sent for the last model request. */
function lastUpstreamBody(): string {
  return JSON.stringify(scripted.upstream.modelRequests().at(-1)?.body ?? null);
}

before(async () => {
  scripted = await startScriptedProxy({ env: { METACLAW_PROXY_API_KEY: OWNER_KEY } });
  keys['alice'] = await addMember('alice');
  keys['bob'] = await addMember('Bob');
});
after(async () => scripted.close());

describe('metaclaw team: members with keys of their own', () => {
  test('a member key is the agent API key: it is served with the configured upstream key and never travels upstream', async () => {
    const answer = await client(keys['alice']!).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hello there' }] });
    assert.equal(answer.choices[0]?.message.content, 'Hello from the scripted upstream.');
    const sent = scripted.upstream.modelRequests().at(-1)!;
    assert.equal(sent.headers['authorization'], 'Bearer k', 'the upstream gets the configured key');
    assert.ok(!JSON.stringify(sent.headers).includes(keys['alice']!), 'the member key is not forwarded');
    const owner = await client(OWNER_KEY).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    assert.ok(owner.choices[0]);
    await assert.rejects(client('mcm_' + 'x'.repeat(43)).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }), /401/);
  });

  test("a member's memories are theirs alone: another member's key cannot find, read or export them, and scope headers cannot widen it", async () => {
    const added = await call(keys['alice']!, 'POST', '/v1/memory', { type: 'semantic', content: "Alice's cat is named Miso." });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    assert.equal(added.body.scope, 'user:alice');
    const id = added.body.id as string;

    const widening = { 'x-user-id': 'alice', 'x-memory-scope': 'user:alice' };
    const bobSearch = await call(keys['bob']!, 'POST', '/v1/memory/search', { query: 'cat named Miso' }, widening);
    assert.equal(bobSearch.status, 200);
    assert.equal(bobSearch.body.scope, 'user:bob');
    assert.deepEqual(bobSearch.body.results, []);
    const named = await call(keys['bob']!, 'POST', '/v1/memory/search', { query: 'cat', scope: 'user:alice' });
    assert.equal(named.status, 403);
    // Told what holds for a member key: headers and the admin token are no way round it for Bob.
    assert.match(
      named.body.error.message,
      /^A member key works in its own memory scope "user:bob" \(and reads "team"\); it cannot reach scope "user:alice"\.$/,
    );
    assert.equal((await call(keys['bob']!, 'GET', `/v1/memory/${id}`, undefined, widening)).status, 404);
    assert.equal((await call(keys['bob']!, 'DELETE', `/v1/memory/${id}`)).status, 404);
    const bobExport = await call(keys['bob']!, 'GET', '/v1/memory/export', undefined, widening);
    assert.ok(!String(bobExport.body).includes('Miso'));

    const aliceSearch = await call(keys['alice']!, 'POST', '/v1/memory/search', { query: 'cat named Miso' });
    assert.deepEqual(
      aliceSearch.body.results.map((unit: { content: string }) => unit.content),
      ["Alice's cat is named Miso."],
    );

    // Recall on model requests follows the key too.
    await client(keys['bob']!, widening).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'What is my cat named?' }] });
    assert.ok(!lastUpstreamBody().includes('Miso'), "Bob's request is not given Alice's memory");
    await client(keys['alice']!).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'What is my cat named?' }] });
    assert.ok(lastUpstreamBody().includes('Miso'), "Alice's request recalls her memory");
    // The Anthropic SDK sends the key as x-api-key: the same member, the same scope.
    const anthropic = new Anthropic({ baseURL: scripted.proxy.url, apiKey: keys['alice']!, maxRetries: 0 });
    await anthropic.messages.create({ model: 'm', max_tokens: 64, messages: [{ role: 'user', content: 'Remind me: what is my cat named?' }] });
    assert.ok(lastUpstreamBody().includes('Miso'), 'an Anthropic client with her key gets her memory');
    assert.ok(!JSON.stringify(scripted.upstream.modelRequests().at(-1)!.headers).includes(keys['alice']!), 'her key is not forwarded');
  });

  test("a member key opens the model routes and the member's own records, nothing else", async () => {
    for (const path of ['/status', '/metrics', '/v1/skills', '/v1/dashboard/overview', '/v1/dashboard/sessions', '/v1/rl/steps']) {
      const refused = await call(keys['bob']!, 'GET', path);
      assert.equal(refused.status, 403, path);
      assert.equal(refused.body.error.code, 'member_not_allowed', path);
    }
    assert.equal((await call(OWNER_KEY, 'GET', '/status')).status, 200);

    const sameSession = { 'x-session-id': 'shared-session' };
    const alice = await client(keys['alice']!, sameSession)
      .chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'first words' }] })
      .withResponse();
    const bob = await client(keys['bob']!, sameSession)
      .chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'other words' }] })
      .withResponse();
    const requestId = alice.response.headers.get('x-metaclaw-request-id')!;
    const own = await call(keys['alice']!, 'GET', `/v1/requests/${requestId}`);
    assert.equal(own.status, 200);
    assert.equal((await call(keys['bob']!, 'GET', `/v1/requests/${requestId}`)).status, 404);
    // Answered once Bob's own turn is recorded (and so every earlier one).
    assert.equal((await call(keys['bob']!, 'GET', `/v1/requests/${bob.response.headers.get('x-metaclaw-request-id')!}`)).status, 200);

    // The same session id from two members names two sessions.
    const sessions = await scripted.proxy.cli(['sessions', 'list', '--json'], { env: { METACLAW_PROXY_API_KEY: OWNER_KEY } });
    const ids = (JSON.parse(sessions.stdout) as Array<{ id: string }>).map((session) => session.id);
    assert.ok(ids.includes('alice~shared-session') && ids.includes('bob~shared-session'), ids.join(', '));
    const ended = await call(keys['bob']!, 'POST', '/v1/sessions/shared-session/end');
    assert.equal(ended.status, 200);
    assert.equal(ended.body.session_id, 'shared-session');
    assert.equal((await call(keys['bob']!, 'POST', '/v1/sessions/alice~shared-session/end')).status, 404);
  });

  test("a member cannot continue or read another member's Responses API answer", async () => {
    const first = await call(keys['alice']!, 'POST', '/v1/responses', { model: 'm', input: 'My locker code is 4711.' });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const responseId = first.body.id as string;
    assert.equal((await call(keys['alice']!, 'GET', `/v1/responses/${responseId}`)).status, 200);
    assert.equal((await call(keys['bob']!, 'GET', `/v1/responses/${responseId}`)).status, 404);
    const sentBefore = scripted.upstream.modelRequests().length;
    const stolen = await call(keys['bob']!, 'POST', '/v1/responses', { model: 'm', input: 'What was the code?', previous_response_id: responseId });
    assert.equal(stolen.status, 400);
    assert.equal(stolen.body.error.code, 'previous_response_not_found');
    assert.equal(scripted.upstream.modelRequests().length, sentBefore, 'nothing reached the upstream');
    const continued = await call(keys['alice']!, 'POST', '/v1/responses', { model: 'm', input: 'What was the code?', previous_response_id: responseId });
    assert.equal(continued.status, 200);
    assert.ok(lastUpstreamBody().includes('4711'), 'her own conversation continues');
  });

  test("the team scope is shared: the owner writes it from the CLI while the proxy runs, every member's requests are given its rules and facts, and a member key reads it but cannot change it", async () => {
    const remember = async (content: string, ...flags: string[]) => {
      const added = await scripted.proxy.cli(['memory', 'add', content, '--json', ...flags]);
      assert.equal(added.code, 0, added.stderr);
      return JSON.parse(added.stdout) as { id: string; scope: string };
    };
    const rule = await remember('Every production deploy needs two approvals from the platform team.', '--scope', 'team', '--core');
    const fact = await remember('The shared staging cluster is called blue-harbor.', '--scope', 'team');
    assert.equal(fact.scope, 'team');
    // And one of Alice's own rules, written by another process after her scope was cached: the proxy notices within a second.
    await remember('Always answer Alice in British English.', '--scope', 'user:alice', '--core');
    await new Promise((resolve) => setTimeout(resolve, 1_100));

    await client(keys['alice']!).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'What is the staging cluster called?' }] });
    const alice = lastUpstreamBody();
    assert.ok(alice.includes('blue-harbor'), "the team's fact is recalled for Alice");
    assert.ok(alice.includes('two approvals'), "the team's rule is a standing instruction for Alice");
    assert.ok(alice.includes('British English'), 'her own rule added from the CLI is there without a restart');
    await client(keys['bob']!).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Write a haiku about autumn.' }] });
    const bob = lastUpstreamBody();
    assert.ok(bob.includes('two approvals'), "the team's rule is shown to Bob too");
    assert.ok(!bob.includes('British English'), "Alice's rule is hers");

    const read = await call(keys['bob']!, 'POST', '/v1/memory/search', { query: 'staging cluster', scope: 'team' });
    assert.equal(read.status, 200);
    assert.deepEqual(
      read.body.results.map((unit: { id: string }) => unit.id),
      [fact.id],
    );
    assert.equal((await call(keys['bob']!, 'GET', `/v1/memory/${fact.id}`)).status, 200);
    for (const [method, path, body] of [
      ['POST', '/v1/memory', { type: 'semantic', content: 'Bob was here.', scope: 'team' }],
      ['PATCH', `/v1/memory/${fact.id}`, { content: 'The staging cluster is called red-harbor.' }],
      ['DELETE', `/v1/memory/${rule.id}`, undefined],
      ['DELETE', '/v1/memory?scope=team', undefined],
    ] as const) {
      const refused = await call(keys['bob']!, method, path, body);
      assert.equal(refused.status, 403, `${method} ${path}`);
      assert.equal(refused.body.error.code, 'shared_scope_read_only', `${method} ${path}`);
    }
    const shown = await scripted.proxy.cli(['memory', 'search', 'staging cluster', '--scope', 'team', '--json']);
    assert.match(shown.stdout, /blue-harbor/);
    assert.doesNotMatch(shown.stdout, /red-harbor|Bob was here/);

    const doctor = await scripted.proxy.cli(['doctor', '--json', '--no-canary']);
    const team = (JSON.parse(doctor.stdout) as { checks: Array<{ name: string; verdict: string; detail: string }> }).checks.find(
      (check) => check.name === 'team',
    );
    assert.deepEqual(team, { name: 'team', verdict: 'pass', detail: '2 members (alice, bob); shared scope "team": 2 memories' });
    const status = await call(OWNER_KEY, 'GET', '/status');
    assert.deepEqual(status.body.team, { members: 2, shared_scope: 'team', shared_memories: 2 });
    const statusLine = await scripted.proxy.cli(['status']);
    assert.match(statusLine.stdout, /team {8}2 members; shared scope "team": 2 memories/);
  });

  test('rotating a key or removing a member takes effect at once on the running proxy; --forget forgets their memories', async () => {
    const rotated = await scripted.proxy.cli(['team', 'rotate-key', 'alice', '--json']);
    assert.equal(rotated.code, 0, rotated.stderr);
    const newKey = (JSON.parse(rotated.stdout) as { key: string }).key;
    assert.equal((await call(keys['alice']!, 'POST', '/v1/memory/search', { query: 'cat' })).status, 401);
    assert.equal((await call(newKey, 'POST', '/v1/memory/search', { query: 'cat' })).status, 200);
    keys['alice'] = newKey;

    assert.equal((await call(keys['bob']!, 'POST', '/v1/memory', { type: 'preference', content: 'Bob likes green tea.' })).status, 201);
    const removed = await scripted.proxy.cli(['team', 'remove-member', 'bob', '--forget', '--json']);
    assert.equal(removed.code, 0, removed.stderr);
    assert.ok((JSON.parse(removed.stdout) as { forgotten_memories: number }).forgotten_memories >= 1);
    assert.equal((await call(keys['bob']!, 'POST', '/v1/memory/search', { query: 'tea' })).status, 401);
    const left = await scripted.proxy.cli(['memory', 'search', 'green tea', '--scope', 'user:bob', '--json']);
    assert.deepEqual(JSON.parse(left.stdout), []);

    const listed = await scripted.proxy.cli(['team', 'list', '--json']);
    const names = (JSON.parse(listed.stdout) as Array<{ name: string; key: string }>).map((member) => member.name);
    assert.deepEqual(names, ['alice']);
    assert.ok(!listed.stdout.includes(newKey), 'a listed key is only its first characters');
    // The plain list says when a key was rotated, as well as when the member was added.
    const plain = await scripted.proxy.cli(['team', 'list']);
    assert.match(plain.stdout, /^alice +mcm_\S+… +scope user:alice {2}since \d{4}-\d{2}-\d{2}, key rotated \d{4}-\d{2}-\d{2}\n$/);
  });

  test('a team needs the owner key first: add-member refuses without proxy.api_key, and names are checked', async () => {
    const home = tempHome('metaclaw-team-');
    const refused = await runCli(['team', 'add-member', 'carol'], { home });
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /proxy\.api_key/);
    const bad = await scripted.proxy.cli(['team', 'add-member', 'no spaces']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /Invalid member name/);
    const taken = await scripted.proxy.cli(['team', 'add-member', 'ALICE']);
    assert.match(taken.stderr, /already exists/);
  });
});
