import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePort, runCli, startProxy, tempHome, type ProxyHandle } from './support/proxy.js';
import { json, openAIReply, ScriptedUpstream } from './support/upstream.js';

// What a newcomer meets following the README on a fresh machine: the memory API's documented
// bodies and answers, the review routes' refusals, setup's check of the upstream, and the CLI's own
// listings and help. Each case below was found on the way and failed before its fix.

const GOOD_KEY = 'sk-first-use-0123';

let upstream: ScriptedUpstream;
let proxy: ProxyHandle;
const homes: string[] = [];

before(async () => {
  upstream = await ScriptedUpstream.start();
  // A provider that checks the key as OpenAI does (its message ends with a full stop) and lists one model.
  upstream.defaultHandler = (request, response) => {
    const key = request.headers['authorization'];
    if (key !== undefined && key !== `Bearer ${GOOD_KEY}`)
      return json(response, 401, { error: { message: 'Incorrect API key provided: sk-wr***.', type: 'invalid_request_error', code: 'invalid_api_key' } });
    if (request.method === 'GET') return json(response, 200, { object: 'list', data: [{ id: 'only-model', object: 'model' }] });
    return openAIReply({ text: 'OK' })(request, response);
  };
  proxy = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_key: GOOD_KEY }, memory: { auto_extract: false } } });
});

after(async () => {
  await proxy.dispose();
  await upstream.close();
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

function newHome(): string {
  const home = tempHome('metaclaw-first-use-');
  homes.push(home);
  return home;
}

async function call(path: string, method: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${proxy.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: await response.json() };
}

describe('the memory API as the README documents it', () => {
  test('POST /v1/memory without a type adds a semantic fact, as `metaclaw memory add` and MCP memory_add do', async () => {
    const added = await call('/v1/memory', 'POST', { content: 'The build runs on Fridays.' });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    assert.equal(added.body.type, 'semantic');
    const read = await call(`/v1/memory/${added.body.id}`, 'GET');
    assert.equal(read.body.content, 'The build runs on Fridays.');
    // A stated type is still checked, and an empty content is named as such (it hid behind the type before).
    const badType = await call('/v1/memory', 'POST', { type: 'gossip', content: 'x' });
    assert.equal(badType.status, 400);
    assert.equal(badType.body.error.param, 'type');
    const empty = await call('/v1/memory', 'POST', { content: '  ' });
    assert.equal(empty.status, 400);
    assert.equal(empty.body.error.message, 'content: must not be empty');
  });

  test('an empty scope in a body is a 400 scope_empty, as an empty ?scope= is, and nothing is stored', async () => {
    const before = (await call('/v1/memory/stats', 'GET')).body.total_units;
    for (const [path, body] of [
      ['/v1/memory/search', { query: 'build', scope: '' }],
      ['/v1/memory', { content: 'Scoped to nothing.', scope: '' }],
      ['/v1/memory/ingest', { session_id: 'empty-scope', scope: '', turns: [{ role: 'user', content: 'Scoped to nothing.' }] }],
    ] as const) {
      const refused = await call(path, 'POST', body);
      assert.equal(refused.status, 400, path);
      assert.equal(refused.body.error.code, 'scope_empty', `${path}: ${JSON.stringify(refused.body)}`);
      assert.equal(refused.body.error.param, 'scope');
    }
    assert.equal((await call('/v1/memory/stats', 'GET')).body.total_units, before);
  });

  test('a PATCH that changes nothing says which fields it takes, naming no "(body)" field', async () => {
    const added = await call('/v1/memory', 'POST', { type: 'project_state', content: 'Deploys happen on Tuesdays.' });
    const refused = await call(`/v1/memory/${added.body.id}`, 'PATCH', {});
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.message, 'request body: nothing to change: give content, type, importance, core or pinned');
    assert.equal(refused.body.error.param, null);
  });
});

test('a proposal id that is not a number is a 400 naming the id, without "NaN" or "(body)"', async () => {
  for (const action of ['approve', 'reject']) {
    const refused = await call(`/v1/skills/proposals/abc/${action}`, 'POST');
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.param, 'id');
    assert.match(refused.body.error.message, /^proposal id "abc": expected a whole number 1 or more/);
  }
  assert.equal((await call('/v1/skills/proposals/7/approve', 'POST')).body.error.code, 'proposal_not_found');
});

describe('metaclaw setup --yes: what the upstream check says', () => {
  const args = (port: number, extra: string[]) => [
    'setup',
    '--yes',
    '--provider',
    'custom',
    '--api-base',
    `${upstream.url}/v1`,
    '--model',
    'only-model',
    '--claw',
    'none',
    '--port',
    String(port),
    '--no-starter-skills',
    ...extra,
  ];

  test('with no key it does not claim that "the key works", and counts one model as one', async () => {
    const result = await runCli(args(await freePort(), []), { home: newHome() });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Checked the upstream: reached \S+; it answers without a key \(1 model listed\)\./);
    assert.doesNotMatch(result.stdout, /key works/);
  });

  test('a rejected key quotes the provider once, without a doubled full stop', async () => {
    const result = await runCli(args(await freePort(), ['--api-key-env', 'WRONG_KEY']), { home: newHome(), env: { WRONG_KEY: 'sk-wrong' } });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /the upstream rejected the key \(HTTP 401 from \S+\/v1\/models\): Incorrect API key provided: sk-wr\*\*\*\.\n/);
    assert.doesNotMatch(result.stderr, /\.\./);
  });
});

