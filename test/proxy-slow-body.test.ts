import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startProxy, type ProxyHandle } from './support/proxy.js';
import { openAIReply, ScriptedUpstream } from './support/upstream.js';

/** What a raw client got before the proxy closed its connection, and how long that took. */
interface Exchange {
  answer: string;
  ms: number;
}

/**
 * Opens a connection, writes `head`, then one byte of body every `everyMs` (a slowloris client)
 * until the proxy closes the connection or `giveUpMs` passes.
 */
function trickle(port: number, head: string, everyMs: number, giveUpMs = 8_000): Promise<Exchange> {
  return new Promise((resolve) => {
    const started = Date.now();
    const chunks: Buffer[] = [];
    const socket = net.connect(port, '127.0.0.1', () => socket.write(head));
    const drip = setInterval(() => {
      if (socket.writable) socket.write('x');
    }, everyMs);
    const giveUp = setTimeout(() => socket.destroy(), giveUpMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => undefined); // writing after the proxy closed: EPIPE / ECONNRESET
    socket.on('close', () => {
      clearInterval(drip);
      clearTimeout(giveUp);
      resolve({ answer: Buffer.concat(chunks).toString('utf8'), ms: Date.now() - started });
    });
  });
}

const postHead = (path: string, headers: Record<string, string> = {}) =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}\r\n{"model":"m",`;

function parsed(exchange: Exchange): { status: number; head: string; body: any } {
  const [head, body] = exchange.answer.split('\r\n\r\n');
  assert.ok(head, `an answer, not a silent close (after ${exchange.ms} ms)`);
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), head, body: JSON.parse(body!) };
}

describe('proxy.request_timeout_seconds: a request must arrive in time, its answer may take as long as it takes', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    proxy = await startProxy({
      config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'sk-up', max_retries: 0 }, proxy: { request_timeout_seconds: 1 } },
    });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });

  const errors = async () =>
    ((await (await fetch(`${proxy.url}/status`)).json()) as { requests: { errors: Record<string, number>; last_errors: Array<{ error: string }> } }).requests;

  test("a body sent a byte at a time past the timeout gets a 408 in its route's error shape and its connection closed, on model and memory routes; a slow head too; each counted as a bad request", async () => {
    const before = await errors();
    const [openai, anthropic, memory, head] = await Promise.all([
      trickle(proxy.port, postHead('/v1/chat/completions'), 200),
      trickle(proxy.port, postHead('/v1/messages', { 'anthropic-version': '2023-06-01' }), 200),
      trickle(proxy.port, postHead('/v1/memory/search'), 200),
      // A head that never ends: the headers' deadline is the request's when that is shorter.
      trickle(proxy.port, 'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ', 200),
    ]);

    for (const [name, exchange] of Object.entries({ openai, anthropic, memory, head })) {
      assert.ok(exchange.ms >= 900 && exchange.ms < 4_000, `${name}: cut after ${exchange.ms} ms, expected about 1 s`);
      const answer = parsed(exchange);
      assert.equal(answer.status, 408, `${name}: ${exchange.answer}`);
      assert.match(answer.head, /\r\nconnection: close/i, name);
      assert.match(answer.head, /\r\nx-metaclaw-request-id: req_/i, name);
    }
    // Each route answers in its own API's shape.
    assert.equal(parsed(openai).body.error.code, 'request_timeout');
    assert.match(parsed(openai).body.error.message, /did not all arrive within 1 s \(proxy\.request_timeout_seconds\)/);
    assert.equal(parsed(anthropic).body.type, 'error');
    assert.match(parsed(anthropic).body.error.message, /proxy\.request_timeout_seconds/);
    assert.equal(parsed(memory).body.error.code, 'request_timeout');
    assert.equal(parsed(head).body.error.code, 'request_timeout');
    assert.match(parsed(head).body.error.message, /headers within 1 s/);

    const now = await errors();
    assert.equal(now.errors['bad_request']! - before.errors['bad_request']!, 4, 'counted as rejections');
    assert.equal(now.errors['client_aborted'], before.errors['client_aborted'], 'not as clients that left');
    assert.equal(now.errors['proxy'], before.errors['proxy']);
    assert.equal(now.last_errors.filter((entry) => /proxy\.request_timeout_seconds/.test(entry.error)).length, 4);
    assert.equal(upstream.modelRequests().length, 0);
  });

  test('a body sent to /healthz, open to anyone, is not read: the 404 comes at once, not once a body of max_body_mb has been buffered', async () => {
    const exchange = await new Promise<Exchange>((resolve) => {
      const started = Date.now();
      const socket = net.connect(proxy.port, '127.0.0.1', () =>
        socket.write('POST /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"a":'),
      );
      socket.on('error', () => undefined);
      socket.once('data', (chunk: Buffer) => {
        socket.destroy();
        resolve({ answer: chunk.toString('utf8'), ms: Date.now() - started });
      });
      setTimeout(() => socket.destroy(), 5_000).unref();
      socket.on('close', () => resolve({ answer: '', ms: Date.now() - started }));
    });
    assert.match(exchange.answer, /^HTTP\/1\.1 404 /, exchange.answer);
    assert.ok(exchange.ms < 700, `answered after ${exchange.ms} ms`);
  });

  test('a streamed answer that runs three times the timeout arrives whole, and its connection serves the next request', async () => {
    const text = 'one two three four five six seven eight nine ten';
    upstream.reply(openAIReply({ text, pieces: 10, gapMs: 300 }));
    const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const started = Date.now();
    const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'count to ten slowly' }] });
    let received = '';
    for await (const chunk of stream) received += chunk.choices[0]?.delta.content ?? '';
    assert.ok(Date.now() - started > 3_000, 'the stream outlived the timeout');
    assert.equal(received, text);
    const next = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'and again' }] });
    assert.match(next.choices[0]!.message.content!, /scripted upstream/);
  });
});
