import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { JsonParser } from '@croct/json5-parser';
import OpenAI from 'openai';
import { stringify } from 'yaml';
import { freePort, recordedTurn, runCli, tempHome, type CliResult } from './support/proxy.js';
import { learningAwareUpstream } from './support/evolver.js';
import { ScriptedUpstream } from './support/upstream.js';

const FIXTURE = join(import.meta.dirname, 'fixtures', 'claws', 'openclaw.json5');
const folders: string[] = [];
let upstream: ScriptedUpstream;
before(async () => {
  upstream = await ScriptedUpstream.start();
});
after(async () => {
  await upstream.close();
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

interface User {
  /** the user's HOME (OpenClaw's config lives in it) */
  home: string;
  /** $METACLAW_HOME, inside it */
  metaclaw: string;
  openclawConfig: string;
  port: number;
  cli(args: string[]): Promise<CliResult>;
}

/** A user with OpenClaw installed (its JSON5 config, no CLI on PATH) and MetaClaw configured for it. */
async function newUser(config: Record<string, unknown> = {}): Promise<User> {
  const home = tempHome('metaclaw-user-');
  folders.push(home);
  const metaclaw = join(home, '.metaclaw');
  mkdirSync(join(home, '.openclaw'), { recursive: true });
  const openclawConfig = join(home, '.openclaw', 'openclaw.json');
  copyFileSync(FIXTURE, openclawConfig);
  mkdirSync(metaclaw, { recursive: true });
  const port = await freePort();
  writeFileSync(
    join(metaclaw, 'config.yaml'),
    stringify({ claw_type: 'openclaw', llm: { api_base: `${upstream.url}/v1`, api_key: 'sk-up', model_id: 'up-model' }, proxy: { port }, ...config }),
    { mode: 0o600 },
  );
  return { home, metaclaw, openclawConfig, port, cli: (args) => runCli(args, { home, env: { METACLAW_HOME: metaclaw, PATH: '/usr/bin:/bin' } }) };
}

describe('start wires the agent, stop --unwire restores it byte for byte', () => {
  test('start → OpenClaw points at the proxy (sandbox untouched) → stop --unwire → file identical', async () => {
    const user = await newUser();
    const before = readFileSync(user.openclawConfig);
    const started = await user.cli(['start']);
    assert.equal(started.code, 0, started.stderr);
    assert.match(started.stdout, /Wired OpenClaw to the proxy \(.*openclaw\.json; original backed up to /);
    try {
      const wired = JsonParser.parse(readFileSync(user.openclawConfig, 'utf8')).toJSON() as any;
      const provider = wired.models.providers.metaclaw;
      assert.equal(provider.baseUrl, `http://127.0.0.1:${user.port}/v1`);
      assert.equal(provider.api, 'openai-completions');
      assert.equal(provider.models[0].id, 'up-model');
      assert.equal(provider.models[0].compat.sendSessionAffinityHeaders, true);
      assert.equal(wired.agents.defaults.model.primary, 'metaclaw/up-model');
      assert.equal(wired.agents.defaults.sandbox.mode, 'all', 'the sandbox stays on');
      assert.equal(wired.models.providers.openrouter.apiKey, 'sk-or-user-key', "the user's own provider is kept");
      assert.match(readFileSync(user.openclawConfig, 'utf8'), /\/\/ The sandbox must stay on\./, 'comments survive');

      const again = await user.cli(['start']);
      assert.match(again.stdout, /already running/);
      assert.match(again.stdout, /OpenClaw is already wired to the proxy/);

      const verified = await user.cli(['claw', 'verify']);
      assert.equal(verified.code, 0, verified.stdout);
      assert.match(verified.stdout, /OpenClaw is wired to http:\/\/127\.0\.0\.1:\d+/);
      const listed = await user.cli(['claw', 'list']);
      assert.match(listed.stdout, /openclaw\s+found, wired/);
    } finally {
      const stopped = await user.cli(['stop', '--unwire']);
      assert.equal(stopped.code, 0, stopped.stderr);
      assert.match(stopped.stdout, /MetaClaw stopped/);
      assert.match(stopped.stdout, /Restored OpenClaw's configuration exactly as it was/);
    }
    assert.deepEqual(readFileSync(user.openclawConfig), before);
    const verify = await user.cli(['claw', 'verify']);
    assert.equal(verify.code, 1);
    assert.match(verify.stdout, /not wired to this proxy/);
    assert.match(verify.stderr, /Fix: run `metaclaw claw wire openclaw`\./);
  });

  test('start --no-wire leaves the agent alone; start --claw none too', async () => {
    const user = await newUser();
    const before = readFileSync(user.openclawConfig);
    const started = await user.cli(['start', '--no-wire']);
    assert.equal(started.code, 0, started.stderr);
    assert.doesNotMatch(started.stdout, /Wired/);
    const none = await user.cli(['start', '--claw', 'none']);
    assert.equal(none.code, 0);
    await user.cli(['stop']);
    assert.deepEqual(readFileSync(user.openclawConfig), before);
  });

  test('a malformed agent config: start still runs the proxy, says what is wrong, and changes nothing', async () => {
    const user = await newUser();
    writeFileSync(user.openclawConfig, '{ models: { providers: { broken: [1, 2,, } }\n');
    const before = readFileSync(user.openclawConfig);
    const started = await user.cli(['start']);
    try {
      assert.equal(started.code, 0, started.stderr);
      assert.match(started.stdout, /Could not wire OpenClaw: .*openclaw\.json/);
      assert.match(started.stdout, /metaclaw claw wire/);
      assert.equal((await fetch(`http://127.0.0.1:${user.port}/healthz`)).status, 200);
    } finally {
      await user.cli(['stop']);
    }
    assert.deepEqual(readFileSync(user.openclawConfig), before);
  });

  test('claw wire that cannot wire exits 1 and does not claim a proxy is running; with claw_type none it says what to name', async () => {
    const user = await newUser();
    writeFileSync(user.openclawConfig, '{ models: { providers: { broken: [1, 2,, } }\n');
    const failed = await user.cli(['claw', 'wire']);
    assert.equal(failed.code, 1, failed.stdout);
    assert.match(failed.stdout + failed.stderr, /Could not wire OpenClaw: .*openclaw\.json/);
    assert.doesNotMatch(failed.stdout + failed.stderr, /proxy is running/);
    const none = await newUser({ claw_type: 'none' });
    const nothing = await none.cli(['claw', 'wire']);
    assert.equal(nothing.code, 1, nothing.stdout);
    assert.match(nothing.stderr, /claw_type is none.*metaclaw claw wire TYPE/);
  });

  test('a damaged wiring ledger: claw list still lists the agents and warns, doctor names it, unwire refuses, and the ledger is left as it was', async () => {
    const user = await newUser();
    const wired = await user.cli(['claw', 'wire']);
    assert.equal(wired.code, 0, wired.stderr);
    const ledger = join(user.metaclaw, 'claws', 'ledger.json');
    const damaged = readFileSync(ledger, 'utf8').slice(0, 40);
    writeFileSync(ledger, damaged);
    const listed = await user.cli(['claw', 'list']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^openclaw +found {2}.*openclaw\.json$/m);
    assert.match(
      listed.stderr,
      /^warning: which agents are wired is unknown\. The wiring ledger .*ledger\.json is not valid JSON; fix it by hand, or move it aside .*claws\/backups\)\.$/m,
    );
    const doctor = await user.cli(['doctor']);
    assert.match(doctor.stdout, /✘ wiring ledger: The wiring ledger .*ledger\.json is not valid JSON/);
    const unwire = await user.cli(['claw', 'unwire']);
    assert.equal(unwire.code, 1, unwire.stdout);
    assert.match(unwire.stderr, /The wiring ledger .*ledger\.json is not valid JSON/);
    assert.doesNotMatch(unwire.stderr, /\n\s+at /);
    assert.equal(readFileSync(ledger, 'utf8'), damaged);
  });

  test("claw install-plugin openclaw loads this repo's plugin with its config; unwire removes it exactly", async () => {
    const user = await newUser();
    const before = readFileSync(user.openclawConfig);
    const installed = await user.cli(['claw', 'install-plugin', 'openclaw']);
    assert.equal(installed.code, 0, installed.stderr);
    assert.match(installed.stdout, /Enabled the MetaClaw plugin in OpenClaw/);
    const wired = JsonParser.parse(readFileSync(user.openclawConfig, 'utf8')).toJSON() as any;
    const pluginPath = wired.plugins.load.paths[0] as string;
    assert.ok(existsSync(join(pluginPath, 'openclaw.plugin.json')), "the plugin folder is this package's");
    const manifest = JSON.parse(readFileSync(join(pluginPath, 'openclaw.plugin.json'), 'utf8'));
    assert.equal(manifest.id, 'metaclaw');
    assert.equal(wired.plugins.entries.metaclaw.enabled, true);
    assert.equal(wired.plugins.entries.metaclaw.config.proxyUrl, `http://127.0.0.1:${user.port}`);
    assert.equal(wired.plugins.entries.metaclaw.hooks, undefined, 'no conversation access is asked for');
    assert.equal(wired.models.providers.metaclaw.models[0].compat.sendSessionAffinityHeaders, true);
    const unwired = await user.cli(['claw', 'unwire']);
    assert.equal(unwired.code, 0, unwired.stderr);
    assert.deepEqual(readFileSync(user.openclawConfig), before);
  });
});

describe('metaclaw uninstall', () => {
  test('without --yes and without a terminal it refuses and changes nothing', async () => {
    const user = await newUser();
    await user.cli(['start']);
    try {
      const refused = await user.cli(['uninstall']);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /Run `metaclaw uninstall --yes` to confirm/);
      assert.equal((await fetch(`http://127.0.0.1:${user.port}/healthz`)).status, 200, 'still running');
      assert.ok(existsSync(join(user.metaclaw, 'config.yaml')));
    } finally {
      await user.cli(['stop', '--unwire']);
    }
  });

  test('--yes: stops the proxy, restores OpenClaw exactly, removes $METACLAW_HOME, printing each step', async () => {
    const user = await newUser();
    const before = readFileSync(user.openclawConfig);
    assert.equal((await user.cli(['start'])).code, 0);
    const removed = await user.cli(['uninstall', '--yes']);
    assert.equal(removed.code, 0, removed.stderr);
    assert.match(removed.stdout, /1\. Stopping the proxy\nMetaClaw stopped/);
    assert.match(removed.stdout, /2\. Restoring every agent MetaClaw wired\n\s+Restored OpenClaw's configuration exactly as it was/);
    assert.match(removed.stdout, /3\. Removing the login service/);
    assert.match(removed.stdout, /4\. Removing /);
    assert.deepEqual(readFileSync(user.openclawConfig), before);
    assert.equal(existsSync(user.metaclaw), false);
    await assert.rejects(fetch(`http://127.0.0.1:${user.port}/healthz`));
  });

  test('--yes with a config.yaml that does not load still stops the proxy, restores OpenClaw and removes $METACLAW_HOME, saying the file does not load', async () => {
    const user = await newUser();
    const before = readFileSync(user.openclawConfig);
    assert.equal((await user.cli(['start'])).code, 0);
    writeFileSync(join(user.metaclaw, 'config.yaml'), 'proxy: [oops\n');
    const removed = await user.cli(['uninstall', '--yes']);
    assert.equal(removed.code, 0, removed.stderr);
    assert.match(removed.stderr, /config\.yaml is not valid YAML/);
    assert.match(removed.stdout, /1\. Stopping the proxy\nMetaClaw stopped/);
    assert.deepEqual(readFileSync(user.openclawConfig), before);
    assert.equal(existsSync(user.metaclaw), false);
    await assert.rejects(fetch(`http://127.0.0.1:${user.port}/healthz`));
  });

  test("a METACLAW_HOME that also holds the user's own files: only MetaClaw's are removed", async () => {
    const user = await newUser();
    assert.equal((await user.cli(['start'])).code, 0);
    writeFileSync(join(user.metaclaw, 'my-notes.txt'), 'mine\n');
    const removed = await user.cli(['uninstall', '--yes']);
    assert.equal(removed.code, 0, removed.stderr);
    assert.deepEqual(readdirSync(user.metaclaw), ['my-notes.txt']);
    assert.match(removed.stdout, /Left .*\.metaclaw: it also holds files MetaClaw did not make \(my-notes\.txt\)/);
  });

  test('--keep-data keeps skills and memories (the database) and removes the rest', async () => {
    const user = await newUser();
    upstream.defaultHandler = learningAwareUpstream({});
    assert.equal((await user.cli(['skills', 'install-starter'])).code, 0);
    assert.equal((await user.cli(['start'])).code, 0);
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${user.port}/v1`, apiKey: 'unused' });
    await client.chat.completions.create({ model: 'up-model', messages: [{ role: 'user', content: 'We deploy with Helm charts from the infra repo.' }] });
    const added = await user.cli(['memory', 'add', 'Our staging cluster is called blue-harbor', '--type', 'semantic']);
    assert.equal(added.code, 0, added.stderr);
    const removed = await user.cli(['uninstall', '--yes', '--keep-data']);
    assert.equal(removed.code, 0, removed.stderr);
    assert.deepEqual(
      readdirSync(user.metaclaw)
        .filter((name) => !name.startsWith('metaclaw.db'))
        .sort(),
      ['skills'],
    );
    assert.ok(existsSync(join(user.metaclaw, 'metaclaw.db')));
    assert.equal(existsSync(join(user.metaclaw, 'config.yaml')), false, 'the config (which holds the key) is removed');
    // Kept memories are usable by a later install.
    writeFileSync(join(user.metaclaw, 'config.yaml'), stringify({ proxy: { port: user.port } }), { mode: 0o600 });
    const search = await user.cli(['memory', 'search', 'staging cluster']);
    assert.match(search.stdout, /blue-harbor/);
  });
});

/** A user with no agent wired, the proxy started in front of the learning-aware upstream, and a client for it. */
async function startedPlainUser(): Promise<{ user: User; base: string; client: OpenAI }> {
  const user = await newUser({ claw_type: 'none' });
  upstream.defaultHandler = learningAwareUpstream({});
  assert.equal((await user.cli(['start'])).code, 0);
  const base = `http://127.0.0.1:${user.port}`;
  return { user, base, client: new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused' }) };
}

describe('POST /v1/sessions/{id}/end', () => {
  test('ends a session the proxy saw (learning runs), is idempotent, and 404s an unknown one', async () => {
    const { user, base, client } = await startedPlainUser();
    try {
      // OpenClaw's affinity header carries a call counter: the session is the part before it.
      await client.chat.completions.create(
        { model: 'up-model', messages: [{ role: 'user', content: 'Set up a cron job that rotates logs nightly.' }] },
        { headers: { session_id: 'oc-session-1:3' } },
      );
      const unknown = await fetch(`${base}/v1/sessions/nobody/end`, { method: 'POST' });
      assert.equal(unknown.status, 404);
      assert.match(JSON.stringify(await unknown.json()), /No session nobody has been seen/);
      const ended = await fetch(`${base}/v1/sessions/oc-session-1/end`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"reason":"openclaw:new"}',
      });
      assert.equal(ended.status, 200);
      assert.deepEqual(await ended.json(), { session_id: 'oc-session-1', ended: true, already_ended: false });
      const again = await fetch(`${base}/v1/sessions/oc-session-1/end`, { method: 'POST' });
      assert.deepEqual(await again.json(), { session_id: 'oc-session-1', ended: false, already_ended: true });
      const shown = await user.cli(['sessions', 'show', 'oc-session-1', '--json']);
      const session = JSON.parse(shown.stdout).session;
      assert.ok(session.ended_at);
      assert.equal(session.end_reason, 'agent');
      const status = (await (await fetch(`${base}/status`)).json()) as { queue: Record<string, number> };
      assert.ok((status.queue['queued'] ?? 0) + (status.queue['leased'] ?? 0) + (status.queue['done'] ?? 0) >= 1, 'session-end learning was enqueued');
    } finally {
      await user.cli(['stop']);
    }
  });

  test('a session ended right after its last turn is found and stays ended (the turn is written first)', async () => {
    const { user, base, client } = await startedPlainUser();
    try {
      const { response } = await client.chat.completions
        .create(
          { model: 'up-model', messages: [{ role: 'user', content: 'Rotate the logs and tell me when done.' }] },
          { headers: { session_id: 'oc-session-2:1' } },
        )
        .withResponse();
      const ended = await fetch(`${base}/v1/sessions/oc-session-2/end`, { method: 'POST' });
      assert.equal(ended.status, 200, 'the session of a turn answered a moment ago is known');
      assert.deepEqual(await ended.json(), { session_id: 'oc-session-2', ended: true, already_ended: false });
      // Once the turn's record is written, nothing of that turn is left to reopen the session.
      await recordedTurn(base, response.headers.get('x-metaclaw-request-id')!);
      const session = JSON.parse((await user.cli(['sessions', 'show', 'oc-session-2', '--json'])).stdout).session;
      assert.ok(session.ended_at, 'recording the turn did not reopen it');
      assert.equal(session.turn_count, 1);
    } finally {
      await user.cli(['stop']);
    }
  });
});
