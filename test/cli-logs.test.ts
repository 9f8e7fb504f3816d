import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { CLI, cleanEnv, runCli, tempHome, waitFor } from './support/proxy.js';
import { startScriptedProxy, type ScriptedProxy } from './support/scripted-proxy.js';
import { errorReply } from './support/upstream.js';

/** Every line of the log and its rotated files that mentions `text`, as written. */
function linesInLogFiles(home: string, text: string): string[] {
  const folder = join(home, 'logs');
  return readdirSync(folder)
    .filter((name) => /^metaclaw\.log(\.\d+)?$/.test(name))
    .flatMap((name) => readFileSync(join(folder, name), 'utf8').split('\n'))
    .filter((line) => line.includes(text));
}

const KEY = 'sk-owner-logs';

describe('metaclaw logs and GET /v1/logs', () => {
  let scripted: ScriptedProxy;
  let client: OpenAI;

  before(async () => {
    // A small log.max_size_mb, so that the follow test sees the real rotation; enough files that none is dropped.
    scripted = await startScriptedProxy({ config: { proxy: { api_key: KEY }, log: { max_size_mb: 0.01, max_files: 50 } } });
    client = new OpenAI({ baseURL: `${scripted.proxy.url}/v1`, apiKey: KEY, maxRetries: 0 });
  });
  after(async () => scripted.close());

  const ask = async (content: string): Promise<string> => {
    const { response } = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content }] }).withResponse();
    return response.headers.get('x-metaclaw-request-id')!;
  };

  test("prints a request's lines readably, and filters by request, level and count; --json gives the lines as written", async () => {
    const home = scripted.proxy.home;
    const requestId = await ask('hello there');
    await waitFor(() => linesInLogFiles(home, requestId).length > 0, 10_000, 100);

    const readable = await runCli(['logs', '--request', requestId], { home });
    assert.equal(readable.code, 0, readable.stderr);
    assert.match(readable.stdout, /^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}\] INFO: request finished$/m);
    assert.match(readable.stdout, new RegExp(`request_id: "${requestId}"`));
    assert.doesNotMatch(readable.stdout, /"pid"|pid:/, 'the process id is left out');

    const json = await runCli(['logs', '--request', requestId, '--json'], { home });
    const lines = json.stdout.trim().split('\n');
    assert.deepEqual(lines, linesInLogFiles(home, `"request_id":"${requestId}"`), 'exactly the lines of that request, as written');

    // An upstream that fails (the first try and both retries): the request's warnings are found by level, its info line is not.
    const down = errorReply(500, { error: { message: 'the model is down', type: 'server_error' } });
    scripted.upstream.reply(down, down, down);
    const error = await ask('this one fails').then(
      () => assert.fail('the request should fail'),
      (failure: unknown) => failure as InstanceType<typeof OpenAI.APIError>,
    );
    assert.equal(error.status, 500);
    const failedId = error.headers?.get('x-metaclaw-request-id');
    assert.ok(failedId);
    // The request's info line is logged once the proxy is idle after answering, and the log file is
    // written every half second: wait until it is there, so the filter has it to leave out.
    await waitFor(() => linesInLogFiles(home, `"request_id":"${failedId}"`).some((line) => line.includes('"level":"info"')), 10_000, 100);
    const warned = await runCli(['logs', '--level', 'warn', '--json', '--request', failedId], { home });
    const warnings = warned.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { level: string; request_id: string });
    assert.ok(warnings.length >= 3, 'a warning per failed attempt');
    assert.ok(
      warnings.every((entry) => (entry.level === 'warn' || entry.level === 'error') && entry.request_id === failedId),
      'only its warn lines and above',
    );

    const lastTwo = await runCli(['logs', '-n', '2', '--json'], { home });
    assert.equal(lastTwo.stdout.trim().split('\n').length, 2);
  });

  test('--follow prints each new line once, in order, across the log rotating to metaclaw.log.1, .2 …', async () => {
    const home = scripted.proxy.home;
    const follower = spawn(process.execPath, [CLI, 'logs', '--follow', '--json', '-n', '1'], { env: cleanEnv(home), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    follower.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    try {
      await waitFor(() => output.includes('\n'), 10_000, 50); // the last line: following has begun
      const ids: string[] = [];
      // Until the log has rotated twice since the follower started, and a little more.
      const rotatedBefore = readdirSync(join(home, 'logs')).filter((name) => /^metaclaw\.log\.\d+$/.test(name)).length;
      await waitFor(
        async () => {
          ids.push(await ask(`request ${ids.length}`));
          return existsSync(join(home, 'logs', `metaclaw.log.${rotatedBefore + 2}`)) && ids.length % 5 === 0;
        },
        60_000,
        0,
      );
      const last = ids.at(-1)!;
      await waitFor(() => output.includes(last), 10_000, 50);
      const followed = output.trim().split('\n');
      for (const line of followed) JSON.parse(line);
      for (const id of ids) {
        const written = linesInLogFiles(home, `"request_id":"${id}"`);
        assert.ok(written.length > 0);
        assert.deepEqual(
          followed.filter((line) => line.includes(`"request_id":"${id}"`)),
          written,
          `request ${id}: every line once, none lost at a rotation`,
        );
      }
      const order = ids.map((id) => followed.findIndex((line) => line.includes(`"request_id":"${id}"`)));
      assert.deepEqual(
        order,
        [...order].sort((a, b) => a - b),
        'in the order written',
      );
    } finally {
      follower.kill('SIGINT');
    }
    const code = await new Promise<number | null>((resolve) => follower.once('exit', resolve));
    assert.equal(code, 0, 'Ctrl-C ends it cleanly');
  });

  test('--follow loses no line when the log rotates twice between two of its polls (the file current in between is .1 by then)', async () => {
    const home = tempHome();
    const log = join(home, 'logs', 'metaclaw.log');
    mkdirSync(join(home, 'logs'));
    const line = (msg: string) => `${JSON.stringify({ level: 'info', time: new Date().toISOString(), msg })}\n`;
    writeFileSync(log, line('before'));
    // What the proxy's rotation does (logging/log-file.ts): .1 becomes .2, the log becomes .1, a new log is begun.
    const rotate = (first: string) => {
      if (existsSync(`${log}.1`)) renameSync(`${log}.1`, `${log}.2`);
      renameSync(log, `${log}.1`);
      writeFileSync(log, first);
    };
    const follower = spawn(process.execPath, [CLI, 'logs', '--follow', '--json', '-n', '1'], { env: cleanEnv(home), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    follower.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    try {
      await waitFor(() => output.includes('"before"'), 10_000, 20);
      // All at once, far inside the follower's 200 ms between polls.
      appendFileSync(log, line('old file, last line'));
      rotate(line('in between, first line'));
      appendFileSync(log, `${line('in between, second line')}in between, a last line with no newline`);
      rotate(line('newest file'));
      await waitFor(() => output.includes('"newest file"'), 10_000, 20);
      await new Promise((resolve) => setTimeout(resolve, 500)); // a poll more: nothing is printed twice
      assert.deepEqual(
        output
          .trim()
          .split('\n')
          .map((text) => (text.startsWith('{') ? (JSON.parse(text) as { msg: string }).msg : text)),
        ['before', 'old file, last line', 'in between, first line', 'in between, second line', 'in between, a last line with no newline', 'newest file'],
      );
    } finally {
      follower.kill('SIGINT');
    }
  });

  test('GET /v1/logs answers the same lines newest first, behind the proxy key (401 without, 403 for a member key), and names a bad query field in a 400', async () => {
    const { proxy } = scripted;
    const requestId = await ask('over http');
    await waitFor(() => linesInLogFiles(proxy.home, requestId).length > 0, 10_000, 100);
    const get = (query: string, key: string | null = KEY) =>
      fetch(`${proxy.url}/v1/logs${query}`, { headers: key === null ? {} : { authorization: `Bearer ${key}` } });

    const answer = await get(`?request=${requestId}`);
    assert.equal(answer.status, 200);
    const entries = ((await answer.json()) as { object: string; data: Array<Record<string, unknown>> }).data;
    const written = linesInLogFiles(proxy.home, `"request_id":"${requestId}"`).map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.deepEqual(entries, written.reverse(), 'the logged objects, newest first');

    const limited = ((await (await get('?limit=3')).json()) as { data: Array<{ time: string }> }).data;
    assert.equal(limited.length, 3);
    assert.ok(limited[0]!.time >= limited[2]!.time, 'newest first');
    const since = ((await (await get('?since=1d&level=error')).json()) as { data: Array<{ level: string }> }).data;
    assert.ok(since.every((entry) => entry.level === 'error'));

    assert.equal((await get('', null)).status, 401);
    const member = (JSON.parse((await proxy.cli(['team', 'add-member', 'dana', '--json'])).stdout) as { key: string }).key;
    const refused = await get('', member);
    assert.equal(refused.status, 403);
    assert.match(((await refused.json()) as { error: { message: string } }).error.message, /needs the proxy key/);

    for (const [query, field] of [
      ['?limit=0', 'limit'],
      ['?limit=1001', 'limit'],
      ['?level=loud', 'level'],
      ['?job=abc', 'job'],
      ['?since=yesterday', 'since'],
      ['?colour=red', 'colour'],
    ] as const) {
      const bad = await get(query);
      assert.equal(bad.status, 400, query);
      const body = (await bad.json()) as { error: { message: string; param?: string } };
      assert.ok(body.error.message.includes(field) || body.error.param === field, `${query}: ${JSON.stringify(body)}`);
    }

    // A rotated file that cannot be read (here a folder in its place): a 500 that names the file, not the generic one.
    const odd = join(proxy.home, 'logs', 'metaclaw.log.9');
    mkdirSync(odd);
    try {
      const unreadable = await get('?request=req_that_never_was');
      assert.equal(unreadable.status, 500);
      const error = ((await unreadable.json()) as { error: { code: string; message: string } }).error;
      assert.equal(error.code, 'log_unreadable');
      assert.match(error.message, /^The log cannot be read: .*metaclaw\.log\.9/);
    } finally {
      rmdirSync(odd);
    }
  });

  test('refuses a bad option by name with exit 1, says when there is no log yet (and names the path when the log cannot be read), and reads the log with a broken config.yaml', async () => {
    const home = scripted.proxy.home;
    for (const [args, message] of [
      [['--lines', '0'], /--lines "0"/],
      [['-n', 'abc'], /--lines "abc"/],
      [['--job', 'x'], /--job "x"/],
      [['--since', 'yesterday'], /--since "yesterday": expected a span back from now/],
      [['--level', 'loud'], /argument 'loud' is invalid/],
    ] as const) {
      const refused = await runCli(['logs', ...args], { home });
      assert.equal(refused.code, 1, `${args.join(' ')}: ${refused.stderr}`);
      assert.match(refused.stderr, message);
      assert.equal(refused.stdout, '');
    }

    const empty = tempHome();
    const none = await runCli(['logs'], { home: empty });
    assert.equal(none.code, 0);
    assert.match(none.stderr, /No log yet at .*metaclaw\.log \(has the proxy run with this METACLAW_HOME\?\)/);

    // A log folder that cannot be read is not "no log yet": that sent the user looking for a proxy that never ran.
    const fileForFolder = tempHome();
    writeFileSync(join(fileForFolder, 'logs'), 'not a folder\n');
    const folderWrong = await runCli(['logs'], { home: fileForFolder });
    assert.equal(folderWrong.code, 1);
    assert.match(folderWrong.stderr, /logs: a part of the path is not a folder\./);
    const folderForFile = tempHome();
    mkdirSync(join(folderForFile, 'logs', 'metaclaw.log'), { recursive: true });
    const fileWrong = await runCli(['logs'], { home: folderForFile });
    assert.equal(fileWrong.code, 1);
    assert.match(fileWrong.stderr, /metaclaw\.log: it is a folder\./);

    const nothingMatches = await runCli(['logs', '--request', 'req_that_never_was'], { home });
    assert.equal(nothingMatches.code, 0);
    assert.match(nothingMatches.stderr, /No log lines of request req_that_never_was in /);

    // A date alone means local midnight, like a date and time without a zone and like the times printed.
    const tokyo = tempHome();
    mkdirSync(join(tokyo, 'logs'));
    writeFileSync(
      join(tokyo, 'logs', 'metaclaw.log'),
      ['2026-12-05T14:00:00.000Z', '2026-12-05T16:00:00.000Z'].map((time) => `${JSON.stringify({ level: 'info', time, msg: `at ${time}` })}\n`).join(''),
    );
    for (const since of ['2026-12-06', '2026-12-06T00:00']) {
      const local = await runCli(['logs', '--since', since], { home: tokyo, env: { TZ: 'Asia/Tokyo' } });
      assert.equal(local.code, 0, local.stderr);
      assert.deepEqual(local.stdout.trim().split('\n'), ['[2026-12-06 01:00:00.000] INFO: at 2026-12-05T16:00:00.000Z'], `--since ${since} in Tokyo`);
    }

    const broken = tempHome();
    writeFileSync(join(broken, 'config.yaml'), 'proxy: [unclosed\n');
    const logs = join(broken, 'logs');
    mkdirSync(logs);
    writeFileSync(join(logs, 'metaclaw.log'), `${JSON.stringify({ level: 'error', time: new Date().toISOString(), pid: 1, msg: 'config did not load' })}\n`);
    const read = await runCli(['logs', '--since', '1h'], { home: broken });
    assert.equal(read.code, 0, read.stderr);
    assert.match(read.stderr, /warning: .*config\.yaml/);
    assert.match(read.stdout, /ERROR: config did not load/);
  });
  test('GET /v1/logs over a log holding a 30 MB line answers within seconds, and the proxy serves a model request meanwhile', async () => {
    const { proxy } = scripted;
    // A line far longer than the 64 KB the reader reads at a time (a stray dump, say), in two-byte characters.
    appendFileSync(join(proxy.home, 'logs', 'metaclaw.log'), `${'é'.repeat(15_000_000)}\n`);
    const started = Date.now();
    const scan = fetch(`${proxy.url}/v1/logs?request=req_that_never_was`, { headers: { authorization: `Bearer ${KEY}` } }).then(async (answer) => {
      assert.equal(answer.status, 200);
      assert.deepEqual(((await answer.json()) as { data: unknown[] }).data, []);
      return Date.now() - started;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const asked = Date.now();
    await ask('while the log is read');
    const served = Date.now() - asked;
    const scanned = await scan;
    assert.ok(served < 3_000, `a model request waited ${served} ms for the log scan`);
    assert.ok(scanned < 5_000, `the scan took ${scanned} ms`);
  });
});
