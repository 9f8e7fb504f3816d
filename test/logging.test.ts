import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import OpenAI from 'openai';
import { censorSecretFields, createLogger } from '../src/logging/index.js';
import { startProxy, waitFor } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

const dir = mkdtempSync(join(tmpdir(), 'metaclaw-logging-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('secrets passed to the logger are censored at the top level, one level down and in child bindings', async () => {
  const file = join(dir, 'metaclaw.log');
  const logger = createLogger({ level: 'info', file });
  const headers = { authorization: 'Bearer sk-header-secret', 'X-Api-Key': 'sk-xkey-secret', 'user-agent': 'openai-node' };
  logger.info({ api_key: 'sk-top-secret', headers, upstream: { name: 'main', apiKey: 'sk-nested-secret' }, status: 200 }, 'request finished');
  logger.child({ authorization: 'Bearer sk-binding-secret', job: 7 }).info('learning job done');
  // the file is opened and written asynchronously, in batches
  const lines = await waitFor(() => {
    logger.flush();
    const text = existsSync(file) ? readFileSync(file, 'utf8').trim() : '';
    return text.split('\n').length === 2 && text.split('\n').map((line) => JSON.parse(line) as Record<string, any>);
  });
  const text = JSON.stringify(lines);
  for (const secret of ['sk-header-secret', 'sk-xkey-secret', 'sk-top-secret', 'sk-nested-secret', 'sk-binding-secret'])
    assert.equal(text.includes(secret), false, `${secret} reached the log`);
  assert.equal(lines[0]!['api_key'], '[redacted]');
  assert.deepEqual(lines[0]!['headers'], { authorization: '[redacted]', 'X-Api-Key': '[redacted]', 'user-agent': 'openai-node' });
  assert.deepEqual(lines[0]!['upstream'], { name: 'main', apiKey: '[redacted]' });
  assert.equal(lines[0]!['status'], 200);
  assert.equal(lines[1]!['authorization'], '[redacted]');
  assert.equal(lines[1]!['job'], 7);
  // the caller's objects are left as they were
  assert.equal(headers.authorization, 'Bearer sk-header-secret');
});

test('a log object without secrets is passed on as it is, not copied', () => {
  const object = { request_id: 'req_1', status: 200, upstream: { name: 'main' } };
  assert.equal(censorSecretFields(object), object);
});

test("the daemon's log rotates past log.max_size_mb to metaclaw.log.1 … .N, keeps log.max_files, and goes on in a fresh metaclaw.log", async () => {
  const upstream = await ScriptedUpstream.start();
  const maxBytes = 0.01 * 1024 * 1024;
  const proxy = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, log: { max_size_mb: 0.01, max_files: 2 } } });
  try {
    const log = join(proxy.home, 'logs', 'metaclaw.log');
    const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
    // Every request adds a line; ask until the second rotation has happened.
    let asked = 0;
    await waitFor(
      async () => {
        await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: `request ${++asked}` }] });
        return existsSync(`${log}.2`);
      },
      60_000,
      0,
    );
    const { response } = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'after the rotation' }] }).withResponse();
    const requestId = response.headers.get('x-metaclaw-request-id')!;
    await waitFor(() => readFileSync(log, 'utf8').includes(requestId), 5_000, 100);
    assert.equal(existsSync(`${log}.3`), false, 'only log.max_files rotated files are kept');
    for (const file of [`${log}.1`, `${log}.2`]) {
      assert.ok(statSync(file).size <= maxBytes, `${file} stays within log.max_size_mb`);
      for (const line of readFileSync(file, 'utf8').trim().split('\n')) JSON.parse(line);
    }
  } finally {
    await proxy.dispose();
    await upstream.close();
  }
});
