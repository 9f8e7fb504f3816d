import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { censorSecretFields, createLogger } from '../src/logging/index.js';
import { waitFor } from './support/proxy.js';

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
