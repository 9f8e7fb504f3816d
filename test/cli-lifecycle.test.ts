import assert from 'node:assert/strict';
import { copyFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import OpenAI from 'openai';
import { freePort, runCli, startProxy, tempHome, waitFor } from './support/proxy.js';
import { gatedReply, openAIReply, ScriptedUpstream } from './support/upstream.js';

const homes: string[] = [];
after(() => {
  for (const folder of homes) rmSync(folder, { recursive: true, force: true });
});
function newHome(): string {
  const folder = tempHome('metaclaw-cli-');
  homes.push(folder);
  return folder;
}

describe('metaclaw start / status / stop', () => {
  test('--version and --help answer without starting anything', async () => {
    const home = newHome();
    const version = await runCli(['--version'], { home });
    assert.equal(version.code, 0);
    assert.equal(version.stdout.trim(), JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version);
    const help = await runCli(['--help'], { home });
    assert.match(help.stdout, /start/);
    assert.match(help.stdout, /sessions/);
  });

  test('start returns once the proxy answers; status reports it; stop ends it; status then says stopped', async () => {
    const home = newHome();
    const port = await freePort();
    const started = await runCli(['start', '--port', String(port)], { home });
    assert.equal(started.code, 0, started.stderr);
    assert.match(started.stdout, new RegExp(`running \\(pid \\d+\\) at http://127\\.0\\.0\\.1:${port}`));
    assert.match(started.stdout, /metaclaw setup/, 'zero-config start says how to configure');
    assert.match(started.stdout, new RegExp(`Dashboard: +http://127\\.0\\.0\\.1:${port}/ui\\n`), 'start says where the dashboard is');
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    assert.deepEqual(await health.json(), { ok: true });

    const status = await runCli(['status', '--json'], { home });
    assert.equal(status.code, 0);
    const report = JSON.parse(status.stdout);
    assert.equal(report.running, true);
    assert.equal(report.mode, 'skills_only');
    assert.equal(report.listen.port, port);
    assert.ok('queue' in report && 'learning' in report);

    const again = await runCli(['start', '--port', String(port)], { home });
    assert.equal(again.code, 0);
    assert.match(again.stdout, /already running/);

    const stopped = await runCli(['stop'], { home });
    assert.equal(stopped.code, 0);
    assert.match(stopped.stdout, /stopped/);
    const after = await runCli(['status'], { home });
    assert.equal(after.code, 1);
    assert.match(after.stdout, /not running/);
  });

  test('a stale pid file is cleaned by stop and ignored by start', async () => {
    const home = newHome();
    const port = await freePort();
    writeFileSync(join(home, 'metaclaw.pid'), JSON.stringify({ pid: 2_999_999, host: '127.0.0.1', port, startedAt: '', version: '' }));
    const stop = await runCli(['stop'], { home });
    assert.equal(stop.code, 0);
    assert.match(stop.stdout, /stale pid file/);
    writeFileSync(join(home, 'metaclaw.pid'), '2999999\n');
    const started = await runCli(['start', '--port', String(port)], { home });
    assert.equal(started.code, 0, started.stderr);
    const pid = JSON.parse(readFileSync(join(home, 'metaclaw.pid'), 'utf8')).pid;
    assert.notEqual(pid, 2_999_999);
    await runCli(['stop'], { home });
  });

  test('--mode, --port and --host override the config for one run without rewriting it', async () => {
    const home = newHome();
    writeFileSync(join(home, 'config.yaml'), 'mode: skills_only\nproxy:\n  port: 1\n');
    const port = await freePort();
    const started = await runCli(['start', '--port', String(port), '--mode', 'rl', '--host', '127.0.0.1'], { home });
    assert.equal(started.code, 0, started.stderr);
    const report = (await (await fetch(`http://127.0.0.1:${port}/status`)).json()) as any;
    assert.equal(report.mode_configured, 'rl');
    assert.equal(report.mode, 'skills_only', 'no training key: rl runs as skills_only');
    assert.equal(readFileSync(join(home, 'config.yaml'), 'utf8'), 'mode: skills_only\nproxy:\n  port: 1\n');
    const status = await runCli(['status', '--json'], { home });
    assert.equal(JSON.parse(status.stdout).listen.port, port, 'status finds the instance through its pid file');
    await runCli(['stop'], { home });
  });

  test('status still finds and stop still stops the proxy when config.yaml was broken after start, and both say the file does not load', async () => {
    const home = newHome();
    const port = await freePort();
    assert.equal((await runCli(['start', '--port', String(port)], { home })).code, 0);
    writeFileSync(join(home, 'config.yaml'), 'proxy: [oops\n');
    const status = await runCli(['status'], { home });
    assert.equal(status.code, 1, 'a config that does not load is a failure to report');
    assert.match(status.stdout, new RegExp(`running \\(pid \\d+\\) at http://127\\.0\\.0\\.1:${port}`), 'status still says the proxy runs');
    assert.match(status.stderr, /config\.yaml is not valid YAML/);
    const stopped = await runCli(['stop'], { home });
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.match(stopped.stdout, /MetaClaw stopped/);
    assert.match(stopped.stderr, /config\.yaml is not valid YAML/);
    await assert.rejects(fetch(`http://127.0.0.1:${port}/healthz`));
  });

  test('start --claw with an agent MetaClaw does not know is refused before anything starts, as --mode is', async () => {
    const home = newHome();
    const port = await freePort();
    const refused = await runCli(['start', '--port', String(port), '--claw', 'openclwa'], { home });
    assert.equal(refused.code, 1, refused.stdout);
    assert.match(refused.stderr, /--claw.*openclwa.*openclaw/s);
    assert.equal(existsSync(join(home, 'metaclaw.pid')), false, 'nothing was started');
    await assert.rejects(fetch(`http://127.0.0.1:${port}/healthz`));
  });

  test('start on another port while the proxy runs names the port it runs on and exits 1; on the same port it says already running and exits 0', async () => {
    const home = newHome();
    const port = await freePort();
    const other = await freePort();
    assert.equal((await runCli(['start', '--port', String(port), '--no-wire'], { home })).code, 0);
    try {
      const moved = await runCli(['start', '--port', String(other), '--no-wire'], { home });
      assert.equal(moved.code, 1);
      assert.match(
        moved.stderr,
        new RegExp(`already running \\(pid \\d+\\) at http://127\\.0\\.0\\.1:${port}, on port ${port}, not ${other}; run \`metaclaw stop\` first`),
      );
      const again = await runCli(['start', '--port', String(port), '--no-wire'], { home });
      assert.equal(again.code, 0);
      assert.match(again.stdout, /already running/);
    } finally {
      await runCli(['stop'], { home });
    }
  });

  test('refuses to bind beyond loopback without a proxy key', async () => {
    const home = newHome();
    const result = await runCli(['start', '--host', '0.0.0.0', '--port', String(await freePort())], { home });
    assert.equal(result.code, 1);
    assert.match(result.stderr + result.stdout, /Refusing to listen on 0\.0\.0\.0 without a proxy key/);
  });
});

describe('zero-config upstream selection from the environment', () => {
  test('OPENAI_BASE_URL and OPENAI_API_KEY name the upstream when there is no config file', async () => {
    const upstream = await ScriptedUpstream.start();
    const proxy = await startProxy({ env: { OPENAI_BASE_URL: `${upstream.url}/v1`, OPENAI_API_KEY: 'sk-from-env' } });
    try {
      upstream.reply(openAIReply({ text: 'env upstream' }));
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'sk-client', maxRetries: 0 });
      const completion = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
      assert.equal(completion.choices[0]!.message.content, 'env upstream');
      assert.equal(upstream.modelRequests()[0]!.headers['authorization'], 'Bearer sk-from-env');
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test("with no upstream key anywhere, the client's own key is passed through", async () => {
    const upstream = await ScriptedUpstream.start();
    const proxy = await startProxy({ env: { OPENAI_BASE_URL: `${upstream.url}/v1` } });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'sk-users-own-subscription', maxRetries: 0 });
      await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
      assert.equal(upstream.modelRequests()[0]!.headers['authorization'], 'Bearer sk-users-own-subscription');
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test('ANTHROPIC_API_KEY alone selects an Anthropic upstream', async () => {
    const upstream = await ScriptedUpstream.start();
    const proxy = await startProxy({ env: { ANTHROPIC_API_KEY: 'sk-ant-env', ANTHROPIC_BASE_URL: upstream.url } });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      const completion = await client.chat.completions.create({ model: 'claude-x', messages: [{ role: 'user', content: 'x' }] });
      assert.equal(completion.choices[0]!.message.content, 'Hello from the scripted upstream.');
      const sent = upstream.modelRequests()[0]!;
      assert.equal(sent.path, '/v1/messages');
      assert.equal(sent.headers['x-api-key'], 'sk-ant-env');
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });
});

describe('shutdown and crashes', () => {
  test('stop lets a running stream finish before the process exits', async () => {
    const upstream = await ScriptedUpstream.start();
    const proxy = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' } } });
    try {
      // The upstream holds the rest of the answer back until the proxy refuses new connections: the
      // stream is certainly still running while the proxy stops.
      let stopSent = false;
      const refusing = waitFor(
        async () =>
          stopSent &&
          (await fetch(`${proxy.url}/healthz`).then(
            () => false,
            () => true,
          )),
        20_000,
      ).then(
        () => true,
        () => false,
      );
      upstream.reply(gatedReply(openAIReply({ text: 'a b c d e f', pieces: 6 }), 2, refusing));
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'slow' }] });
      const stopping = proxy.cli(['stop']);
      stopSent = true;
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      assert.equal(await refusing, true, 'the proxy was stopping while the stream ran');
      assert.equal(text, 'a b c d e f');
      const stopped = await stopping;
      assert.match(stopped.stdout, /stopped/);
      const db = new Database(join(proxy.home, 'metaclaw.db'), { readonly: true });
      const turns = db.prepare('SELECT outcome, response_text FROM turns').all() as Array<{ outcome: string; response_text: string }>;
      db.close();
      assert.deepEqual(turns, [{ outcome: 'ok', response_text: 'a b c d e f' }], 'the turn was recorded before exit');
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test('while requests keep arriving, the WAL is checkpointed into the database file in the background', async () => {
    const upstream = await ScriptedUpstream.start();
    const proxy = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' } } });
    const copyDir = tempHome();
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      // The database file alone (no -wal beside it) holds only what a checkpoint has copied there.
      const turnsInDatabaseFile = (): number => {
        const copy = join(copyDir, `copy-${Date.now()}.db`);
        copyFileSync(join(proxy.home, 'metaclaw.db'), copy);
        const db = new Database(copy, { readonly: true });
        try {
          return (db.prepare('SELECT COUNT(*) AS count FROM turns').get() as { count: number }).count;
        } finally {
          db.close();
        }
      };
      const started = Date.now();
      let checkpointed = 0;
      // The proxy is never idle here: a request at least every few milliseconds.
      while (checkpointed === 0 && Date.now() - started < 8_000) {
        await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: `busy ${Date.now()}` }] });
        if (Date.now() - started < 600) continue;
        try {
          checkpointed = turnsInDatabaseFile();
        } catch {
          checkpointed = 0; // caught the file mid-checkpoint: look again
        }
      }
      assert.ok(checkpointed > 0, 'recorded turns reached the database file while the proxy was busy');
    } finally {
      await proxy.dispose();
      await upstream.close();
      rmSync(copyDir, { recursive: true, force: true });
    }
  });

  test('a SIGKILL in the middle of a stream leaves the database consistent and the next start works', async () => {
    const upstream = await ScriptedUpstream.start();
    const proxy = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' } } });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      upstream.reply(openAIReply({ text: 'recorded before the crash' }));
      await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'first' }] });
      await waitFor(async () => ((await (await fetch(`${proxy.url}/status`)).json()) as any).sessions.turns === 1);

      upstream.reply(openAIReply({ text: 'x '.repeat(40), pieces: 40, gapMs: 100 }));
      const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'second' }] });
      const pid = JSON.parse(readFileSync(join(proxy.home, 'metaclaw.pid'), 'utf8')).pid as number;
      let killed = false;
      const consumed = (async () => {
        for await (const chunk of stream) {
          // Killed once the answer is flowing (its first text has arrived); read on until the connection dies.
          if (!killed && chunk.choices[0]?.delta.content) {
            killed = true;
            process.kill(pid, 'SIGKILL');
          }
        }
      })().then(
        () => 'ended',
        () => 'errored',
      );
      assert.equal(await consumed, 'errored', 'the client sees the broken stream');

      const db = new Database(join(proxy.home, 'metaclaw.db'));
      assert.deepEqual(db.pragma('integrity_check'), [{ integrity_check: 'ok' }]);
      db.close();

      const restarted = await proxy.cli(['start']);
      assert.equal(restarted.code, 0, restarted.stderr);
      const sessions = await proxy.cli(['sessions', 'list', '--json']);
      const listed = JSON.parse(sessions.stdout) as Array<{ turn_count: number }>;
      assert.equal(
        listed.reduce((sum, session) => sum + session.turn_count, 0),
        1,
        'the turn recorded before the crash is still there',
      );
      upstream.reply(openAIReply({ text: 'after restart' }));
      const completion = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'third' }] });
      assert.equal(completion.choices[0]!.message.content, 'after restart');
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });
});
