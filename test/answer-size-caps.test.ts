import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { EmbeddingClient } from '../src/embeddings/index.js';
import { LlmCallError } from '../src/learning/index.js';
import { teacherLogprobs } from '../src/rl/teacher/index.js';

/** A server that answers 200 and then sends JSON-looking bytes for ever (a broken gateway). */
async function endlessServer(): Promise<{ url: string; close: () => Promise<void>; sent: () => number }> {
  let sent = 0;
  const chunk = Buffer.alloc(1024 * 1024, 0x20);
  const server = http.createServer((request, response) => {
    request.resume();
    response.writeHead(200, { 'content-type': 'application/json' });
    response.write('{"data": [');
    const pump = () => {
      while (!response.destroyed && response.write(chunk)) sent += chunk.length;
      if (!response.destroyed) response.once('drain', pump);
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return {
    url,
    sent: () => sent,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

describe('an answer that never ends is cut at its size cap, not read until the timeout', () => {
  let server: Awaited<ReturnType<typeof endlessServer>>;
  before(async () => {
    server = await endlessServer();
  });
  after(() => server.close());

  test('an embeddings endpoint: the call fails at 64 MB with an error that says so', async () => {
    const client = new EmbeddingClient({ apiBase: server.url, apiKey: '', model: 'embed-1' }, 60_000);
    const started = Date.now();
    await assert.rejects(client.embed(['hello']), /embeddings endpoint answered more than 64 MB; the answer was dropped/);
    assert.ok(Date.now() - started < 30_000, 'cut at the cap, not at the timeout');
  });

  test('the OPD teacher: the call fails at 64 MB as a retryable LLM error', async () => {
    await assert.rejects(
      teacherLogprobs({ baseUrl: server.url, model: 'teacher', apiKey: '' }, [1, 2], [3]),
      (error: unknown) => error instanceof LlmCallError && /answered more than 64 MB/.test(error.message),
    );
  });
});
