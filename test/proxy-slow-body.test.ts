import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { gatedReply, openAIReply, ScriptedUpstream } from './support/upstream.js';

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

/** A streamed chat request, whole, as a raw client writes it. */
function streamRequest(content: string): string {
  const body = JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content }] });
  return `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** The start of a pipelined request's head that never ends. */
const UNENDING_HEAD = 'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ';

/**
 * A keep-alive client that pipelines: request 1 whole, then the start of a second request that
 * never ends (`second`), at once or once the first bytes of the answer came. Everything it read
 * until the proxy closed the connection, and whether the proxy closed it (its FIN, not our giving up).
 */
function pipelineStalled(
  port: number,
  first: string,
  second: string,
  when: 'at-once' | 'mid-answer',
  giveUpMs = 10_000,
): Promise<Exchange & { closedByProxy: boolean }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const chunks: Buffer[] = [];
    let closedByProxy = false;
    const socket = net.connect(port, '127.0.0.1', () => socket.write(when === 'at-once' ? first + second : first));
    const giveUp = setTimeout(() => socket.destroy(), giveUpMs);
    socket.on('data', (chunk: Buffer) => {
      if (chunks.length === 0 && when === 'mid-answer') socket.write(second);
      chunks.push(chunk);
    });
    socket.on('end', () => (closedByProxy = true));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(giveUp);
      resolve({ answer: Buffer.concat(chunks).toString('latin1'), ms: Date.now() - started, closedByProxy });
    });
  });
}

/**
 * Reads one chunked HTTP answer off the front of `raw`: its head, its body, and whatever bytes came
 * after its last chunk (a second status line written into the connection shows up there, or as a
 * broken chunk).
 */
function chunkedAnswer(raw: string): { head: string; body: string; after: string } {
  const headEnd = raw.indexOf('\r\n\r\n');
  assert.ok(headEnd > 0, `an answer head: ${JSON.stringify(raw.slice(0, 200))}`);
  const head = raw.slice(0, headEnd);
  assert.match(head, /\r\ntransfer-encoding: chunked/i, head);
  let at = headEnd + 4;
  let body = '';
  for (;;) {
    const lineEnd = raw.indexOf('\r\n', at);
    assert.ok(lineEnd > at, `a chunk size at byte ${at}: ${JSON.stringify(raw.slice(at, at + 80))}`);
    const size = parseInt(raw.slice(at, lineEnd), 16);
    assert.ok(/^[0-9a-f]+$/i.test(raw.slice(at, lineEnd)) && Number.isFinite(size), `a chunk size, not ${JSON.stringify(raw.slice(at, at + 80))}`);
    at = lineEnd + 2;
    if (size === 0) {
      assert.equal(raw.slice(at, at + 2), '\r\n', 'the last chunk ends the answer');
      return { head, body, after: raw.slice(at + 2) };
    }
    assert.ok(at + size + 2 <= raw.length, `chunk of ${size} bytes cut short: the answer was truncated`);
    body += raw.slice(at, at + size);
    assert.equal(raw.slice(at + size, at + size + 2), '\r\n', 'a chunk ends with CRLF');
    at += size + 2;
  }
}

/** The text an OpenAI chat stream carried, and whether it ended with [DONE]. */
function streamedText(body: string): { text: string; done: boolean } {
  let text = '';
  let done = false;
  for (const line of body.split('\n')) {
    if (!line.startsWith('data: ')) continue;
    if (line === 'data: [DONE]') done = true;
    else text += JSON.parse(line.slice(6)).choices[0]?.delta?.content ?? '';
  }
  return { text, done };
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

  // A pipelined request's head that times out is the *next* request's: the answer already on the
  // wire (or about to be) is the one the agent is waiting for, so it must arrive whole; only then
  // is the connection closed. Node's own handler would cut it, and a raw 408 written into the
  // connection there would read as the first request's answer or garble it.
  test("a pipelined second request whose head never ends, sent while the first one's answer streams, does not cut or garble that answer: it arrives whole, then the connection closes; the refusal is counted", async () => {
    const text = 'alpha beta gamma delta epsilon zeta eta theta';
    upstream.reply(openAIReply({ text, pieces: 8, gapMs: 300 }));
    const before = await errors();
    const exchange = await pipelineStalled(proxy.port, streamRequest('stream slowly'), UNENDING_HEAD, 'mid-answer');

    const answer = chunkedAnswer(exchange.answer);
    assert.match(answer.head, /^HTTP\/1\.1 200 /);
    assert.deepEqual(streamedText(answer.body), { text, done: true });
    assert.equal(answer.after, '', 'nothing written after the answer (no 408 for the stalled head)');
    assert.ok(exchange.closedByProxy, 'the proxy closed the connection after the answer, not kept it for the stalled head');
    assert.ok(exchange.ms > 2_000, `the answer outlived the head's 1 s deadline (closed after ${exchange.ms} ms)`);

    const now = await errors();
    assert.equal(now.errors['bad_request']! - before.errors['bad_request']!, 1, 'the stalled head counted as a rejection');
    assert.match(now.last_errors[0]!.error, /did not arrive in time \(its headers within 1 s/);
    assert.equal(now.errors['stream_broken'], before.errors['stream_broken']);
    assert.equal(now.errors['client_aborted'], before.errors['client_aborted']);
  });

  test("a pipelined second request whose head never ends, sent before the first one's answer began, gets no 408 in that answer's place: the first answer arrives whole with connection: close", async () => {
    const text = 'one answer for one request';
    const before = await errors();
    // The upstream holds its answer until the stalled head has been refused.
    const refused = waitFor(async () => (await errors()).errors['bad_request']! > before.errors['bad_request']!, 8_000);
    upstream.reply(gatedReply(openAIReply({ text, pieces: 3 }), 0, refused));
    const exchange = await pipelineStalled(proxy.port, streamRequest('answer after a pause'), UNENDING_HEAD, 'at-once');

    const answer = chunkedAnswer(exchange.answer);
    assert.match(answer.head, /^HTTP\/1\.1 200 /, 'the first request gets its own answer, not the 408');
    assert.match(answer.head, /\r\nconnection: close/i);
    assert.deepEqual(streamedText(answer.body), { text, done: true });
    assert.equal(answer.after, '');
    assert.ok(exchange.closedByProxy);

    const now = await errors();
    assert.equal(now.errors['bad_request']! - before.errors['bad_request']!, 1);
    assert.match(now.last_errors[0]!.error, /headers within 1 s/);
  });

  test("a pipelined second request whose body stalls, sent while the first one's answer streams, gets its route's 408 after that answer, which arrives whole", async () => {
    const text = 'uno dos tres cuatro cinco seis siete ocho';
    upstream.reply(openAIReply({ text, pieces: 8, gapMs: 300 }));
    const before = await errors();
    const sentUpstream = upstream.modelRequests().length;
    const exchange = await pipelineStalled(proxy.port, streamRequest('stream slowly again'), postHead('/v1/chat/completions'), 'mid-answer');

    const answer = chunkedAnswer(exchange.answer);
    assert.match(answer.head, /^HTTP\/1\.1 200 /);
    assert.deepEqual(streamedText(answer.body), { text, done: true });
    const late = parsed({ answer: answer.after, ms: exchange.ms });
    assert.equal(late.status, 408, answer.after);
    assert.match(late.head, /\r\nconnection: close/i);
    assert.equal(late.body.error.code, 'request_timeout');
    assert.match(late.body.error.message, /did not all arrive within 1 s/);
    assert.ok(exchange.closedByProxy);

    const now = await errors();
    assert.equal(now.errors['bad_request']! - before.errors['bad_request']!, 1, 'counted once, by the route');
    assert.equal(now.errors['client_aborted'], before.errors['client_aborted']);
    assert.equal(upstream.modelRequests().length - sentUpstream, 1, 'the stalled request never went upstream');
  });
});
