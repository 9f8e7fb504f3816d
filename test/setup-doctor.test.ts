import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { parse } from 'yaml';
import { freePort, runCli, startProxy, tempHome, waitFor, type ProxyHandle } from './support/proxy.js';
import { json, openAIReply, ScriptedUpstream, type Handler } from './support/upstream.js';

const GOOD_KEY = 'sk-good-0123';

/** An upstream that checks the key like a real provider: 401 for any other key, a model list on GET. */
function keyCheckingUpstream(): Handler {
  return (request, response) => {
    if (request.headers['authorization'] !== `Bearer ${GOOD_KEY}`)
      return json(response, 401, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } });
    if (request.method === 'GET')
      return json(response, 200, {
        object: 'list',
        data: [
          { id: 'scripted-1', object: 'model' },
          { id: 'scripted-2', object: 'model' },
        ],
      });
    return openAIReply({ text: 'OK' })(request, response);
  };
}

const homes: string[] = [];
let upstream: ScriptedUpstream;
before(async () => {
  upstream = await ScriptedUpstream.start();
  upstream.defaultHandler = keyCheckingUpstream();
});
after(async () => {
  await upstream.close();
  for (const folder of homes) rmSync(folder, { recursive: true, force: true });
});
function newHome(): string {
  const folder = tempHome('metaclaw-setup-');
  homes.push(folder);
  return folder;
}

function setupArgs(port: number, extra: string[] = []): string[] {
  return [
    'setup',
    '--provider',
    'custom',
    '--api-base',
    `${upstream.url}/v1`,
    '--model',
    'scripted-1',
    '--api-key-env',
    'TEST_PROVIDER_KEY',
    '--claw',
    'none',
    '--port',
    String(port),
    ...extra,
  ];
}

describe('metaclaw setup (non-interactive)', () => {
  test('checks the key against the real API, writes config.yaml 0600, keeps unrelated sections and comments, installs starter skills', async () => {
    const home = newHome();
    const original = ['# my notes: do not lose this comment', 'rl:', '  enabled: false', '  batch_size: 8', 'custom_section:', '  anything: 1', ''].join('\n');
    writeFileSync(join(home, 'config.yaml'), original, { mode: 0o600 });
    upstream.reset();
    const port = await freePort();
    // no --yes and no terminal: it must not wait for input
    const result = await runCli(setupArgs(port), { home, env: { TEST_PROVIDER_KEY: GOOD_KEY }, timeoutMs: 30_000 });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Checked the upstream: reached .*the key works \(2 models listed\)/);
    const listCall = upstream.requests.find((request) => request.method === 'GET');
    assert.equal(listCall?.path, '/v1/models');
    assert.equal(listCall?.headers['authorization'], `Bearer ${GOOD_KEY}`);

    const file = join(home, 'config.yaml');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const text = readFileSync(file, 'utf8');
    assert.match(text, /# my notes: do not lose this comment/);
    const written = parse(text);
    assert.equal(written.llm.api_base, `${upstream.url}/v1`);
    assert.equal(written.llm.model_id, 'scripted-1');
    assert.equal(written.llm.api_key, GOOD_KEY);
    assert.equal(written.llm.api_format, 'openai');
    assert.equal(written.proxy.port, port);
    assert.equal(written.claw_type, 'none');
    assert.equal(written.memory.enabled, true);
    assert.deepEqual(written.rl, { enabled: false, batch_size: 8 });
    assert.deepEqual(written.custom_section, { anything: 1 });
    assert.ok(readdirSync(join(home, 'skills')).filter((name) => existsSync(join(home, 'skills', name, 'SKILL.md'))).length >= 30, 'starter skills installed');
    assert.ok(!result.stdout.includes(GOOD_KEY), 'the key is never printed');
  });

  test('setup with mode auto and no training key says which key to set, and the mode is written', async () => {
    const home = newHome();
    const result = await runCli(setupArgs(await freePort(), ['--yes', '--mode', 'auto', '--no-starter-skills']), {
      home,
      env: { TEST_PROVIDER_KEY: GOOD_KEY },
      timeoutMs: 30_000,
    });
    assert.equal(result.code, 0, result.stderr);
    assert.match(
      result.stdout,
      /Mode auto trains on Tinker or MinT and needs its key: `metaclaw config set rl\.api_key KEY`.*Until then it runs as skills_only\./,
    );
    assert.equal(parse(readFileSync(join(home, 'config.yaml'), 'utf8')).mode, 'auto');
  });

  test("a wrong key stops setup with the upstream's own words and writes nothing", async () => {
    const home = newHome();
    const result = await runCli(setupArgs(await freePort(), ['--yes']), { home, env: { TEST_PROVIDER_KEY: 'sk-wrong' } });
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      /nothing was written: the upstream rejected the key \(HTTP 401 from http:\/\/127\.0\.0\.1:\d+\/v1\/models\): Incorrect API key provided/,
    );
    assert.match(result.stderr, /--api-key-env/);
    assert.equal(existsSync(join(home, 'config.yaml')), false);
    assert.equal(existsSync(join(home, 'skills')), false);
  });

  test('an upstream that echoes the rejected key in its error: setup and doctor show its words without the key', async () => {
    const echoing = await ScriptedUpstream.start();
    echoing.defaultHandler = (request, response) =>
      json(response, 401, {
        error: { message: `Incorrect API key provided: ${String(request.headers['authorization']).slice('Bearer '.length)}.`, type: 'invalid_request_error' },
      });
    const key = 'sk-echoed-by-the-upstream-0123456789';
    try {
      const home = newHome();
      const args = [
        'setup',
        '--yes',
        '--provider',
        'custom',
        '--api-base',
        `${echoing.url}/v1`,
        '--model',
        'm',
        '--api-key-env',
        'TEST_PROVIDER_KEY',
        '--claw',
        'none',
      ];
      const refused = await runCli(args, { home, env: { TEST_PROVIDER_KEY: key } });
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /the upstream rejected the key \(HTTP 401 from \S+\): Incorrect API key provided: \[redacted\]/);
      assert.doesNotMatch(refused.stdout + refused.stderr, /sk-echoed/);

      const written = await runCli([...args, '--no-verify'], { home, env: { TEST_PROVIDER_KEY: key } });
      assert.equal(written.code, 0, written.stderr);
      for (const format of [[], ['--json']]) {
        const doctor = await runCli(['doctor', '--no-canary', ...format], { home });
        assert.match(doctor.stdout, /Incorrect API key provided: \[redacted\]/);
        assert.doesNotMatch(doctor.stdout + doctor.stderr, /sk-echoed/);
      }
    } finally {
      await echoing.close();
    }
  });

  test('an existing config is left byte-identical when the check fails', async () => {
    const home = newHome();
    const original = 'llm:\n  model_id: keep-me\n# trailing comment\n';
    writeFileSync(join(home, 'config.yaml'), original, { mode: 0o600 });
    const result = await runCli(setupArgs(await freePort(), ['--yes']), { home, env: { TEST_PROVIDER_KEY: 'sk-wrong' } });
    assert.equal(result.code, 1);
    assert.equal(readFileSync(join(home, 'config.yaml'), 'utf8'), original);
  });

  test('an unreachable base URL is named in the error', async () => {
    const home = newHome();
    const closed = await freePort();
    const result = await runCli(
      ['setup', '--yes', '--provider', 'custom', '--api-base', `http://127.0.0.1:${closed}/v1`, '--model', 'm', '--api-key-env', 'TEST_PROVIDER_KEY'],
      { home, env: { TEST_PROVIDER_KEY: GOOD_KEY } },
    );
    assert.equal(result.code, 1);
    assert.match(result.stderr, new RegExp(`cannot reach http://127\\.0\\.0\\.1:${closed}/v1/models: .*ECONNREFUSED`));
    assert.equal(existsSync(join(home, 'config.yaml')), false);
  });

  test('bad flags get clear errors: unknown provider, empty key variable, keys on the command line', async () => {
    const home = newHome();
    const provider = await runCli(['setup', '--yes', '--provider', 'nosuch'], { home });
    assert.equal(provider.code, 1);
    assert.match(
      provider.stderr,
      /Unknown provider "nosuch"; choose one of openai, anthropic, kimi, qwen, deepseek, minimax, novita, openrouter, volcengine, ollama, custom/,
    );
    const emptyKey = await runCli(['setup', '--yes', '--provider', 'openai', '--api-key-env', 'NOT_SET_ANYWHERE'], { home });
    assert.equal(emptyKey.code, 1);
    assert.match(emptyKey.stderr, /--api-key-env NOT_SET_ANYWHERE: that environment variable is empty or not set/);
    const inline = await runCli(['setup', '--yes', '--api-key', 'sk-123'], { home });
    assert.notEqual(inline.code, 0);
    assert.match(inline.stderr, /unknown option '--api-key'/);
    assert.equal(existsSync(join(home, 'config.yaml')), false);
  });

  test('presets fill the base URL and model: ollama needs no key', async () => {
    const home = newHome();
    const result = await runCli(['setup', '--yes', '--provider', 'ollama', '--no-verify', '--no-starter-skills', '--no-memory'], { home });
    assert.equal(result.code, 0, result.stderr);
    const written = parse(readFileSync(join(home, 'config.yaml'), 'utf8'));
    assert.equal(written.llm.provider, 'ollama');
    assert.match(written.llm.api_base, /^http:\/\/(localhost|127\.0\.0\.1):11434\/v1$/);
    assert.ok(written.llm.model_id);
    assert.equal(written.memory.enabled, false);
    assert.equal(existsSync(join(home, 'skills')), false);
  });
});

describe('metaclaw doctor', () => {
  let proxy: ProxyHandle;
  before(async () => {
    const home = newHome();
    const port = await freePort();
    const setup = await runCli(setupArgs(port, ['--yes']), { home, env: { TEST_PROVIDER_KEY: GOOD_KEY } });
    assert.equal(setup.code, 0, setup.stderr);
    proxy = await startProxy({ home, port });
  });
  after(async () => {
    await proxy.stop();
  });

  test('the canary passes: skills and memory blocks reach the upstream, the turn is recorded, nothing is learned from it', async () => {
    upstream.reset();
    const result = await proxy.cli(['doctor']);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    for (const name of ['config', 'versions', 'disk', 'database', 'upstream', 'proxy', 'canary'])
      assert.match(result.stdout, new RegExp(`✔ ${name}: `), `${name} passes`);
    assert.match(
      result.stdout,
      /✔ canary: skills block and memory block reached the upstream; turn req_\w+ recorded in session metaclaw-doctor-\w+; the upstream answered/,
    );
    assert.match(result.stdout, /All checks passed/);

    const chat = upstream.modelRequests().find((request) => request.path === '/v1/chat/completions');
    assert.ok(chat, 'the canary reached the upstream');
    const system = String(chat.body.messages[0].content);
    assert.match(system, /<metaclaw-context>/);
    assert.match(system, /## Active Skills/);
    assert.match(system, /Health check canary-\w+: keep answers short/);
    assert.equal(chat.headers['x-metaclaw-learning'], undefined, 'the marker header is not forwarded');

    // It left nothing behind to learn from: no memory scope (the admin token sees them all), no learning job, the session closed.
    const admin = { 'x-metaclaw-admin': readFileSync(join(proxy.home, 'admin-token'), 'utf8').trim() };
    const stats = (await (await fetch(`${proxy.url}/v1/memory/stats`, { headers: admin })).json()) as { scopes: Array<{ scope: string }> };
    assert.deepEqual(
      stats.scopes.filter((scope) => scope.scope.startsWith('metaclaw-doctor')),
      [],
    );
    const status = (await (await fetch(`${proxy.url}/status`)).json()) as { queue: Record<string, number> };
    assert.equal(status.queue['queued'] ?? 0, 0);
    const sessions = await proxy.cli(['sessions', 'list', '--json']);
    const doctorSession = (JSON.parse(sessions.stdout) as Array<{ id: string; ended_at: number | null; learning: number }>).find((session) =>
      session.id.startsWith('metaclaw-doctor-'),
    );
    assert.ok(doctorSession?.ended_at, 'the canary session is closed');
    assert.equal(doctorSession.learning, 0);
  });

  test('a normal turn in the same proxy still learns (the marker is per request)', async () => {
    const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'unused' });
    await client.chat.completions.create(
      { model: 'scripted-1', messages: [{ role: 'user', content: 'Remember: always use tabs for indentation.' }] },
      { headers: { 'x-session-id': 'normal-session' } },
    );
    // The turn is remembered after the client has its answer: waited for, however long a loaded machine takes.
    const memory = await waitFor(async () => {
      const found = (await (
        await fetch(`${proxy.url}/v1/memory/search`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query: 'tabs indentation' }),
        })
      ).json()) as { results: unknown[] };
      return found.results.length > 0 ? found.results : undefined;
    }, 20_000);
    assert.ok(memory.length > 0, 'the normal turn was remembered');
  });

  test('with the proxy stopped, doctor fails and says to start it', async () => {
    await proxy.stop();
    try {
      const result = await proxy.cli(['doctor']);
      assert.equal(result.code, 1);
      assert.match(result.stdout, /✘ proxy: nothing answers at http:\/\/127\.0\.0\.1:\d+\n\s+→ run `metaclaw start`/);
      assert.match(
        result.stdout,
        /✘ canary: the canary cannot go through the proxy: it is not running, so no request from your agent is learned from\n\s+→ run `metaclaw start`/,
      );
      assert.match(result.stdout, /✔ upstream: /, 'the other checks still run');
    } finally {
      const restarted = await proxy.cli(['start']);
      assert.equal(restarted.code, 0, restarted.stderr);
    }
  });

  test('an agent that is configured but not wired fails the agent check, with the command that fixes it', async () => {
    const openclawConfig = join(proxy.home, 'openclaw.json');
    writeFileSync(openclawConfig, '{ "models": { "providers": {} } }\n');
    const result = await proxy.cli(['doctor', '--no-canary', '--json'], { env: { OPENCLAW_CONFIG_PATH: openclawConfig } });
    const configured = await proxy.cli(['config', 'set', 'claw_type', 'openclaw']);
    assert.equal(configured.code, 0);
    try {
      const failing = await proxy.cli(['doctor', '--no-canary', '--json'], { env: { OPENCLAW_CONFIG_PATH: openclawConfig } });
      assert.equal(failing.code, 1);
      const report = JSON.parse(failing.stdout) as { ok: boolean; checks: Array<{ name: string; verdict: string; detail: string; fix?: string }> };
      const agent = report.checks.find((check) => check.name === 'agent');
      assert.equal(agent?.verdict, 'fail');
      assert.match(agent.detail, /OpenClaw does not send its requests through this proxy/);
      assert.match(agent.fix ?? '', /metaclaw claw wire/);
      assert.equal(result.code, 0, 'before claw_type was set, the agent check was skipped');
    } finally {
      await proxy.cli(['config', 'set', 'claw_type', 'none']);
    }
  });
});
