import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
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
    // OpenAI's own answer for a model it does not serve: its catch-all type, the status saying what it was.
    if ((request.body as { model?: string } | undefined)?.model === 'missing-model')
      return json(response, 404, { error: { message: 'The model `missing-model` does not exist.', type: 'invalid_request_error', code: 'model_not_found' } });
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

test("an OpenAI upstream's catch-all error type reaches an Anthropic client as the type its status means", async () => {
  const anthropic = new Anthropic({ baseURL: proxy.url, apiKey: 'client-key', maxRetries: 0 });
  const request = anthropic.messages.create({ model: 'missing-model', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
  await assert.rejects(request, (error: unknown) => {
    assert.ok(error instanceof Anthropic.NotFoundError, String(error));
    assert.deepEqual(error.error, { type: 'error', error: { type: 'not_found_error', message: 'The model `missing-model` does not exist.' } });
    return true;
  });
});

describe('metaclaw setup --yes: what the upstream check says', () => {
  const flags = 'setup --yes --provider custom --model only-model --claw none --no-starter-skills'.split(' ');
  const args = (port: number, extra: string[]) => [...flags, '--api-base', `${upstream.url}/v1`, '--port', String(port), ...extra];

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

describe('the CLI a newcomer reads', () => {
  test('claw list puts every config path in one column, found or not; an unknown agent lists the known ones', async () => {
    const home = newHome();
    mkdirSync(join(home, '.qwen'));
    writeFileSync(join(home, '.qwen', 'settings.json'), '{}\n');
    const listed = await runCli(['claw', 'list'], { home });
    assert.equal(listed.code, 0, listed.stderr);
    const columns = new Set(
      listed.stdout
        .split('\n')
        .filter((line) => line.includes(home))
        .map((line) => line.indexOf(home)),
    );
    assert.equal(columns.size, 1, listed.stdout);
    assert.match(listed.stdout, /^qwen-code +found +\//m);
    const unknown = await runCli(['claw', 'wire', 'qwen'], { home });
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /"qwen" is not an agent MetaClaw knows; choose one of openclaw, .*qwen-code, opencode, none\./);
  });

  test('memory ingest --help shows no made-up session id, and memory edit --help describes every option', async () => {
    const home = newHome();
    const ingest = await runCli(['memory', 'ingest', '--help'], { home });
    assert.doesNotMatch(ingest.stdout, /ingest-\d+/);
    assert.match(ingest.stdout, /--session <id> +session id \(default: a new one, ingest-<time>\)/);
    const edit = await runCli(['memory', 'edit', '--help'], { home });
    for (const option of ['--content <text>', '--type <type>', '--importance <value>', '--pin', '--unpin'])
      assert.match(edit.stdout, new RegExp(`^  ${option.replace(/[<>]/g, '.')} +\\S`, 'm'), option);
    // Each default session id is made when the command runs.
    writeFileSync(join(home, 'chat.jsonl'), '{"role":"user","content":"My dog is called Tofu."}\n');
    const stored = await runCli(['memory', 'ingest', join(home, 'chat.jsonl')], { home });
    assert.equal(stored.code, 0, stored.stderr);
    assert.match(stored.stdout, /^Stored 1 turn of session ingest-\d+;/);
  });

  test('service status without a user bus says the state is unknown and why, instead of showing the error as a state', async () => {
    const home = newHome();
    const bin = join(home, 'bin');
    mkdirSync(bin);
    // systemctl as it answers in a container or an SSH session with no user bus.
    writeFileSync(join(bin, 'systemctl'), '#!/bin/sh\necho "Failed to connect to bus: No medium found" >&2\nexit 1\n', { mode: 0o755 });
    const env = { PATH: `${bin}:${process.env['PATH'] ?? ''}` };
    assert.equal((await runCli(['service', 'install', '--no-enable'], { home, env })).code, 0);
    const status = await runCli(['service', 'status'], { home, env });
    assert.match(status.stdout, /^Installed: \S+metaclaw\.service \(systemd, state unknown: Failed to connect to bus: No medium found\)\.$/m);
  });

  test('a METACLAW_HOME that names a file is refused in one line by every command, not with "it already exists"', async () => {
    const folder = newHome();
    const file = join(folder, 'not-a-folder');
    writeFileSync(file, 'x');
    const env = { METACLAW_HOME: file };
    for (const args of [
      ['memory', 'stats'],
      ['skills', 'list'],
      ['sessions', 'list'],
      ['config', 'set', 'proxy.port', '4000'],
    ]) {
      const result = await runCli(args, { home: folder, env });
      assert.equal(result.code, 1, args.join(' '));
      assert.equal(result.stderr, `The MetaClaw home ${file} is a file, not a folder; nothing was changed. Point METACLAW_HOME at a folder.\n`, args.join(' '));
    }
    const doctor = await runCli(['doctor', '--no-canary'], { home: folder, env });
    assert.equal(doctor.code, 1);
    assert.match(doctor.stdout, /✘ config: The MetaClaw home \S+ is a file, not a folder[^\n]*\n +→ point METACLAW_HOME at a folder/);
    assert.equal(readFileSync(file, 'utf8'), 'x');
  });

  test('config get and set of a section say it is a section and name a key in it, as unset does', async () => {
    const home = newHome();
    for (const args of [
      ['config', 'get', 'llm'],
      ['config', 'set', 'skills.embedding', 'x'],
      ['config', 'llm'],
    ]) {
      const refused = await runCli(args, { home });
      assert.equal(refused.code, 1, args.join(' '));
      assert.match(
        refused.stderr,
        /^"(llm|skills\.embedding)" is a section of keys, not a key: name one of its keys, such as "(llm|skills\.embedding)\.\w+"/,
        args.join(' '),
      );
    }
    assert.match((await runCli(['config', 'get', 'llm.api_bas'], { home })).stderr, /Unknown config key "llm\.api_bas"; did you mean "llm\.api_base"\?/);
    // A key kept only for MetaClaw's files is not "applied by a restart": its warning says it does nothing.
    const compatibility = await runCli(['config', 'set', 'memory.policy_path', '/srv/policy.json'], { home });
    assert.equal(compatibility.code, 0, compatibility.stderr);
    assert.doesNotMatch(compatibility.stdout, /restart the proxy/);
    assert.match(compatibility.stderr, /memory\.policy_path is accepted for compatibility with MetaClaw but has no effect/);
  });

  test('--help shows number defaults as numbers, not quoted text', async () => {
    const home = newHome();
    for (const [args, shown] of [
      [['start', '--help'], 'how long to wait for the proxy to answer (default: 20)'],
      [['memory', 'search', '--help'], 'how many (default: 10)'],
      [['memory', 'add', '--help'], '0..1 (default: 0.8)'],
    ] as const) {
      const help = (await runCli([...args], { home })).stdout.replace(/\s+/g, ' ');
      assert.ok(help.includes(shown), `${args.join(' ')}: ${help}`);
    }
  });

  test('rl status with no proxy running and no training yet says so, rather than announcing a list of steps that does not follow', async () => {
    const home = newHome();
    const status = await runCli(['rl', 'status'], { home });
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /^training {3}MetaClaw is not running; no training steps recorded$/m);
  });

  test("a bad --port is named as the command line's, not as an invalid config.yaml that does not exist", async () => {
    const home = newHome();
    const refused = await runCli(['start', '--port', '99999', '--no-wire'], { home });
    assert.equal(refused.code, 1);
    assert.equal(refused.stderr, 'Invalid configuration:\n  - command line: proxy.port = "99999": expected an integer from 1 to 65535\n');
  });
});
