/**
 * End to end with the real OpenClaw (pinned, on its own Node 24) against a running MetaClaw proxy
 * (Node 20) and a scripted upstream: setup → start (wires OpenClaw) → a real `openclaw agent` turn →
 * stop --unwire (config byte-identical); then the plugin variant, where `/new` in OpenClaw ends the
 * session in the proxy.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CLI, freePort, runProgram, tempHome, waitFor, type CliResult } from '../support/proxy.js';
import { isEvolverCall, isExtractorCall, completionWith } from '../support/evolver.js';
import { json, openAIReply, ScriptedUpstream, type RecordedRequest } from '../support/upstream.js';
import { installAgent, type Toolchain } from './toolchain.js';

const REPLY = 'Squash them with an interactive rebase.';
/** OpenClaw cannot run on Node 20 (its preinstall refuses it); MetaClaw itself stays on it. */
const OPENCLAW = { name: 'openclaw', version: '2026.9.6', binary: 'openclaw', node24: true };
const installed = installAgent(OPENCLAW);
const skip = 'skip' in installed ? installed.skip : undefined;

let toolchain: Toolchain;
let upstream: ScriptedUpstream;
let work: string;
let env: NodeJS.ProcessEnv;
let openclawConfig: string;
let original: Buffer;
let proxyPort: number;
let gateway: ChildProcess | undefined;

const run = (command: string, args: string[]) => runProgram(command, args, { env, cwd: work, timeoutMs: 180_000 });

/** MetaClaw on this Node (20); OpenClaw's Node 24 is only first on PATH for the `openclaw` launcher. */
const metaclaw = (...args: string[]) => run(process.execPath, [CLI, ...args]);
const openclaw = (...args: string[]) => run(toolchain.command, args);

function agentJson(result: CliResult): any {
  assert.equal(result.code, 0, `openclaw agent failed:\n${result.stderr.slice(-3000)}`);
  return JSON.parse(result.stdout.slice(result.stdout.indexOf('{')));
}

function chatRequests(): RecordedRequest[] {
  return upstream.modelRequests().filter((request) => request.path === '/v1/chat/completions' && !isEvolverCall(request) && !isExtractorCall(request));
}

function systemPrompt(request: RecordedRequest): string {
  const first = request.body.messages[0];
  return typeof first.content === 'string' ? first.content : JSON.stringify(first.content);
}

before(async () => {
  if ('failure' in installed) throw installed.failure;
  if (!('toolchain' in installed)) return;
  toolchain = installed.toolchain;
  upstream = await ScriptedUpstream.start();
  upstream.defaultHandler = (request, response) => {
    if (request.method === 'GET') return json(response, 200, { object: 'list', data: [{ id: 'mock-model', object: 'model' }] });
    if (isEvolverCall(request)) return completionWith('{"changes": []}', response);
    if (isExtractorCall(request)) return completionWith('{"memories": []}', response);
    return openAIReply({ text: REPLY })(request, response);
  };
  work = tempHome('metaclaw-e2e-openclaw-');
  for (const folder of ['home', 'state', 'ws', 'metaclaw']) mkdirSync(join(work, folder), { recursive: true });
  proxyPort = await freePort();
  openclawConfig = join(work, 'state', 'openclaw.json');
  env = {
    PATH: toolchain.path,
    HOME: join(work, 'home'),
    METACLAW_HOME: join(work, 'metaclaw'),
    OPENCLAW_STATE_DIR: join(work, 'state'),
    OPENCLAW_CONFIG_PATH: openclawConfig,
    OPENCLAW_NO_AUTO_UPDATE: '1',
    OPENCLAW_DISABLE_BONJOUR: '1',
    OPENCLAW_SKIP_CHANNELS: '1',
    OPENCLAW_NO_RESPAWN: '1',
    UPSTREAM_KEY: 'sk-upstream-e2e',
    NODE_OPTIONS: '',
  };
  // The user's OpenClaw as they had it before MetaClaw: onboarded with their own provider.
  const onboard = await openclaw(
    'onboard',
    '--non-interactive',
    '--accept-risk',
    '--skip-health',
    '--auth-choice',
    'custom-api-key',
    '--custom-base-url',
    `${upstream.url}/v1`,
    '--custom-model-id',
    'mock-model',
    '--custom-api-key',
    'sk-user-own',
    '--secret-input-mode',
    'plaintext',
    '--custom-compatibility',
    'openai',
    '--workspace',
    join(work, 'ws'),
    '--json',
  );
  assert.equal(onboard.code, 0, onboard.stderr.slice(-2000));
  original = readFileSync(openclawConfig);
});

after(async () => {
  if (gateway?.pid) {
    try {
      process.kill(-gateway.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  // Only a proxy this file started (skipped, it has no METACLAW_HOME of its own to stop).
  if (env) await metaclaw('stop');
  await upstream?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('OpenClaw end to end (real openclaw, embedded turn)', () => {
  test('setup --claw openclaw writes the config after checking the upstream', { skip }, async () => {
    const setup = await metaclaw(
      'setup',
      '--yes',
      '--provider',
      'custom',
      '--api-base',
      `${upstream.url}/v1`,
      '--model',
      'mock-model',
      '--api-key-env',
      'UPSTREAM_KEY',
      '--claw',
      'openclaw',
      '--port',
      String(proxyPort),
    );
    assert.equal(setup.code, 0, setup.stderr);
    assert.match(setup.stdout, /Checked the upstream/);
    assert.deepEqual(readFileSync(openclawConfig), original, 'setup itself does not touch OpenClaw');
  });

  test(
    'start wires OpenClaw with its own CLI; one `openclaw agent` turn goes through the proxy with skills and is recorded under its session id',
    { skip },
    async () => {
      const started = await metaclaw('start');
      assert.equal(started.code, 0, started.stderr);
      assert.match(started.stdout, /Pointed OpenClaw at MetaClaw with `openclaw config set`/);
      const validated = await openclaw('config', 'validate', '--json');
      assert.equal(validated.code, 0, validated.stdout + validated.stderr);

      upstream.reset();
      const turn = agentJson(
        await openclaw('agent', '--local', '--session-id', 'e2e-local-1', '--message', 'How do I squash my git commits into one before merging?', '--json'),
      );
      assert.equal(turn.payloads[0].text, REPLY, 'the reply reaches OpenClaw');
      assert.equal(turn.meta.agentMeta.provider, 'metaclaw');

      const [request] = chatRequests();
      assert.ok(request, 'the turn reached the upstream through the proxy');
      assert.equal(request.headers['authorization'], 'Bearer sk-upstream-e2e', "the proxy's upstream key, not OpenClaw's placeholder");
      const system = systemPrompt(request);
      assert.match(system, /You are a personal assistant running inside OpenClaw/);
      assert.match(system, /<metaclaw-context>[\s\S]*## Active Skills[\s\S]*<\/metaclaw-context>/, 'the skills block reached the upstream');

      const shown = await waitFor(async () => {
        const result = await metaclaw('sessions', 'show', 'e2e-local-1', '--json');
        return result.code === 0 ? JSON.parse(result.stdout) : undefined;
      }, 10_000);
      assert.equal(shown.session.identity_source, 'header', "the proxy saw OpenClaw's session id");
      assert.equal(shown.turns.length, 1);
      assert.match(shown.turns[0].query, /squash my git commits/);
    },
  );

  test("stop --unwire puts OpenClaw's config back byte for byte", { skip }, async () => {
    const stopped = await metaclaw('stop', '--unwire');
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.match(stopped.stdout, /Restored OpenClaw's configuration exactly as it was/);
    assert.deepEqual(readFileSync(openclawConfig), original);
  });
});

describe('OpenClaw end to end (MetaClaw plugin, gateway)', () => {
  test('with the plugin enabled, `/new` in OpenClaw ends the session in the proxy', { skip }, async () => {
    const installed = await metaclaw('claw', 'install-plugin', 'openclaw');
    assert.equal(installed.code, 0, installed.stderr);
    const inspected = await openclaw('plugins', 'inspect', 'metaclaw', '--runtime', '--json');
    assert.equal(inspected.code, 0, inspected.stderr.slice(-2000));
    const plugin = JSON.parse(inspected.stdout.slice(inspected.stdout.indexOf('{'))).plugin;
    assert.equal(plugin.status, 'loaded');
    assert.deepEqual(plugin.services, ['metaclaw-proxy']);
    assert.equal(plugin.hookCount, 1, 'one hook: session_end, which needs no conversation access');

    assert.equal((await metaclaw('start')).code, 0);
    const gatewayPort = await freePort();
    env = { ...env, OPENCLAW_GATEWAY_TOKEN: 'e2e-gateway-token', OPENCLAW_GATEWAY_PORT: String(gatewayPort) };
    gateway = spawn(toolchain.command, ['gateway', 'run', '--port', String(gatewayPort), '--bind', 'loopback', '--allow-unconfigured'], {
      env,
      cwd: work,
      detached: true,
      stdio: 'ignore',
    });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${gatewayPort}/`).catch(() => undefined)) !== undefined, 120_000, 500);

    upstream.reset();
    const turn = agentJson(await openclaw('agent', '--session-id', 'e2e-gateway-1', '--message', 'How do I rebase my branch onto main?', '--json'));
    assert.equal(turn.status, 'ok');
    assert.equal(turn.result.payloads[0].text, REPLY);
    assert.ok(chatRequests().length >= 1);
    const open = JSON.parse((await metaclaw('sessions', 'show', 'e2e-gateway-1', '--json')).stdout);
    assert.equal(open.session.ended_at, null, 'open until OpenClaw ends it');

    const reset = agentJson(await openclaw('agent', '--session-id', 'e2e-gateway-1', '--message', '/new', '--json'));
    assert.equal(reset.status, 'ok');
    const ended = await waitFor(
      async () => {
        const shown = JSON.parse((await metaclaw('sessions', 'show', 'e2e-gateway-1', '--json')).stdout);
        return shown.session.ended_at ? shown.session : undefined;
      },
      20_000,
      250,
    );
    assert.equal(ended.end_reason, 'agent', 'ended by the plugin, not by the idle timer');
    const listed = await metaclaw('sessions', 'show', 'e2e-gateway-1');
    assert.match(listed.stdout, /ended \(agent\)/);
  });

  test('stop --unwire removes the plugin and provider: the config is byte-identical again', { skip }, async () => {
    if (gateway?.pid) process.kill(-gateway.pid, 'SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const stopped = await metaclaw('stop', '--unwire');
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.deepEqual(readFileSync(openclawConfig), original);
  });
});
