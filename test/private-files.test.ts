import assert from 'node:assert/strict';
import { chmodSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { freePort, runCli, tempHome, waitFor } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

const homes: string[] = [];
let upstream: ScriptedUpstream;
before(async () => {
  upstream = await ScriptedUpstream.start();
});
after(async () => {
  await upstream.close();
  for (const folder of homes) rmSync(folder, { recursive: true, force: true });
});
function newHome(): string {
  const folder = tempHome('metaclaw-private-');
  homes.push(folder);
  return folder;
}
const mode = (path: string) => statSync(path).mode & 0o777;

describe("MetaClaw's home, logs and keys are readable by the user alone", () => {
  test('start creates $METACLAW_HOME as 0700 and its log, output and pid files as 0600', async () => {
    const home = join(newHome(), 'nested', 'metaclaw');
    const started = await runCli(['start', '--port', String(await freePort()), '--no-wire'], { home });
    assert.equal(started.code, 0, started.stderr);
    try {
      assert.equal(mode(home), 0o700);
      assert.equal(mode(join(home, 'metaclaw.pid')), 0o600);
      assert.equal(mode(join(home, 'logs')), 0o700);
      assert.equal(mode(join(home, 'logs', 'metaclaw.log')), 0o600);
      assert.equal(mode(join(home, 'logs', 'metaclaw.out')), 0o600);
    } finally {
      await runCli(['stop'], { home });
    }
  });

  test("start makes an existing home folder of the user's own 0700 and says so", async () => {
    const home = newHome();
    chmodSync(home, 0o755);
    const started = await runCli(['start', '--port', String(await freePort()), '--no-wire'], { home });
    assert.equal(started.code, 0, started.stderr);
    await runCli(['stop'], { home });
    assert.equal(mode(home), 0o700);
    assert.match(started.stderr, /is now private \(0700; it was 0755\)/);
  });

  test('a config file holding keys that others can read: start warns on stderr and in the log, doctor says so, doctor --fix makes it 0600 and says so', async () => {
    const home = newHome();
    const file = join(home, 'config.yaml');
    const config = {
      llm: { api_base: `${upstream.url}/v1`, api_key: 'sk-main', fallbacks: [{ api_base: `${upstream.url}/v1`, api_key: 'sk-fallback' }] },
      proxy: { port: await freePort() },
    };
    writeFileSync(file, stringify(config));
    chmodSync(file, 0o644);

    const started = await runCli(['start', '--no-wire'], { home });
    assert.equal(started.code, 0, started.stderr);
    try {
      const warning =
        /holds llm\.api_key, llm\.fallbacks\.0\.api_key and is open to other users \(mode 0644\): run `chmod 600 \S+config\.yaml` or `metaclaw doctor --fix`/;
      assert.match(started.stderr, warning);
      await waitFor(() => warning.test(readFileSync(join(home, 'logs', 'metaclaw.log'), 'utf8')));
    } finally {
      await runCli(['stop'], { home });
    }

    const doctor = await runCli(['doctor', '--no-canary'], { home });
    assert.match(
      doctor.stdout,
      /! privacy: \S+config\.yaml holds llm\.api_key, llm\.fallbacks\.0\.api_key and is open to other users \(mode 0644\)\n\s+→ run `metaclaw doctor --fix`/,
    );
    assert.equal(mode(file), 0o644, 'doctor alone changes nothing');

    const fixed = await runCli(['doctor', '--no-canary', '--fix'], { home });
    assert.match(fixed.stdout, /✔ privacy: fixed: \S+config\.yaml is now 0600 \(it was 0644\)/);
    assert.equal(mode(file), 0o600);
    const again = await runCli(['doctor', '--no-canary'], { home });
    assert.match(again.stdout, /✔ privacy: \S+ and the keys in \S+config\.yaml are readable by you alone/);
  });

  test('start --store with a password in the URL does not say the config file holds store.url: the URL came from the command line', async () => {
    const home = newHome();
    const file = join(home, 'config.yaml');
    writeFileSync(file, stringify({ llm: { api_base: `${upstream.url}/v1` }, proxy: { port: await freePort() } }));
    chmodSync(file, 0o644);
    // Nothing listens on the store's port: the node refuses to start, after reading its config.
    const url = `postgres://team:store-secret@127.0.0.1:${await freePort()}/metaclaw`;
    const started = await runCli(['start', '--no-wire', '--store', url], { home, env: { METACLAW_PROXY_API_KEY: 'owner-key' } });
    await runCli(['stop'], { home });
    assert.notEqual(started.code, 0);
    assert.match(started.stderr, /postgres:\/\/team:\*\*\*\*@127\.0\.0\.1/);
    assert.doesNotMatch(started.stderr, /holds store\.url/);
    assert.doesNotMatch(started.stdout + started.stderr, /store-secret/);
  });

  test('the first command of a fresh install (setup, config set, memory add, skills install-starter) creates $METACLAW_HOME as 0700, so doctor finds nothing open', async () => {
    const commands = [
      [
        'setup',
        '--yes',
        '--no-verify',
        '--provider',
        'custom',
        '--api-base',
        `${upstream.url}/v1`,
        '--model',
        'm',
        '--api-key-env',
        'UPSTREAM_KEY',
        '--claw',
        'none',
      ],
      ['config', 'set', 'llm.api_key', 'sk-typed-by-hand'],
      ['memory', 'add', 'The user prefers tea.'],
      ['skills', 'install-starter'],
    ];
    for (const command of commands) {
      const home = join(newHome(), 'metaclaw');
      const result = await runCli(command, { home, env: { UPSTREAM_KEY: 'sk-from-env' } });
      assert.equal(result.code, 0, `${command.join(' ')}: ${result.stderr}`);
      assert.equal(mode(home), 0o700, `${command.join(' ')} created the home as ${mode(home).toString(8)}`);
    }
    const home = join(newHome(), 'metaclaw');
    await runCli(commands[1]!, { home });
    const doctor = await runCli(['doctor', '--no-canary'], { home });
    assert.match(doctor.stdout, /✔ privacy/);
  });

  test('doctor --fix makes an open home folder 0700', async () => {
    const home = newHome();
    chmodSync(home, 0o750);
    const doctor = await runCli(['doctor', '--no-canary'], { home });
    assert.match(doctor.stdout, /! privacy: \S+ \(MetaClaw's data, logs and keys\) is open to other users \(mode 0750\)/);
    const fixed = await runCli(['doctor', '--no-canary', '--fix'], { home });
    assert.match(fixed.stdout, /✔ privacy: fixed: \S+ is now 0700 \(it was 0750\)/);
    assert.equal(mode(home), 0o700);
  });

  test('the refusal to bind beyond loopback points to METACLAW_PROXY_API_KEY, not a key on the command line; with that variable it binds and requires the key', async () => {
    const home = newHome();
    const port = await freePort();
    const refused = await runCli(['start', '--host', '0.0.0.0', '--port', String(port), '--no-wire'], { home });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /Set the METACLAW_PROXY_API_KEY environment variable/);
    assert.doesNotMatch(refused.stderr, /config set proxy\.api_key/);

    const env = { METACLAW_PROXY_API_KEY: 'proxy-secret' };
    const started = await runCli(['start', '--host', '0.0.0.0', '--port', String(port), '--no-wire'], { home, env });
    assert.equal(started.code, 0, started.stderr);
    try {
      assert.equal((await fetch(`http://127.0.0.1:${port}/status`)).status, 401);
      assert.equal((await fetch(`http://127.0.0.1:${port}/status`, { headers: { 'x-metaclaw-api-key': 'proxy-secret' } })).status, 200);
      const status = await runCli(['status'], { home, env });
      assert.equal(status.code, 0, status.stderr);
    } finally {
      await runCli(['stop'], { home });
    }
  });
});
