import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { silentLogger } from '../src/logging/index.js';
import { answerClientErrors } from '../src/proxy/client-error.js';
import { ProxyStats } from '../src/proxy/stats.js';

describe("node:http's refusals on a kept-alive connection", () => {
  let server: http.Server;
  let port: number;
  const stats = new ProxyStats();
  const escaped: unknown[] = [];
  const onEscape = (error: unknown) => escaped.push(error);
  const served: string[] = [];
  before(async () => {
    process.on('uncaughtException', onEscape);
    server = http.createServer({ requestTimeout: 1000, headersTimeout: 1000, connectionsCheckingInterval: 100 }, (request, response) => {
      served.push(request.url ?? '');
      if (!request.url?.startsWith('/slow')) return response.end('ok');
      // An answer that streams for a while, like a model's: a piece every 150 ms.
      const pieces = Number(new URL(request.url, 'http://x').searchParams.get('pieces') ?? 4);
      let piece = 0;
      const next = setInterval(() => {
        if (++piece <= pieces) response.write(`piece ${piece};`);
        else {
          clearInterval(next);
          response.end();
        }
      }, 150);
    });
    answerClientErrors(server, { stats, logger: silentLogger() });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as net.AddressInfo).port;
  });
  after(() => {
    process.off('uncaughtException', onEscape);
    server.closeAllConnections();
    server.close();
  });

  test('a second request whose head never ends, after one answered on the same connection, gets a 408 and its connection closed (no TypeError, no connection held open)', async () => {
    const exchange = await new Promise<{ text: string; ms: number }>((resolve) => {
      const chunks: Buffer[] = [];
      let secondSentAt = 0;
      const socket = net.connect(port, '127.0.0.1', () => socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
      // A byte of header every 200 ms: the socket never idles, only the headers' deadline can end it.
      const drip = setInterval(() => {
        if (secondSentAt > 0 && socket.writable) socket.write('a');
      }, 200);
      const giveUp = setTimeout(() => socket.destroy(), 5_000);
      socket.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        if (secondSentAt === 0) {
          secondSentAt = Date.now();
          socket.write('GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ');
        }
      });
      socket.on('error', () => undefined);
      socket.on('close', () => {
        clearInterval(drip);
        clearTimeout(giveUp);
        resolve({ text: Buffer.concat(chunks).toString('utf8'), ms: Date.now() - secondSentAt });
      });
    });
    assert.deepEqual(escaped.map(String), []);
    assert.match(exchange.text, /^HTTP\/1\.1 200 OK[\s\S]*\r\n\r\nokHTTP\/1\.1 408 Request Timeout\r\n/);
    assert.match(exchange.text, /"code":"request_timeout"/);
    assert.ok(exchange.ms < 3_000, `closed after ${exchange.ms} ms, expected about 1 s`);
    assert.equal(stats.badRequests, 1);
  });

  /**
   * Asks for a streamed answer, then pipelines `second` once its first bytes came; `then`, if
   * given, runs once the proxy has refused that. What came back, and whether the server closed.
   */
  const pipeline = (first: string, second: string, then?: (socket: net.Socket) => void) =>
    new Promise<{ text: string; closedByServer: boolean }>((resolve) => {
      const chunks: Buffer[] = [];
      let closedByServer = false;
      const refusedBefore = stats.badRequests;
      const socket = net.connect(port, '127.0.0.1', () => socket.write(first));
      const giveUp = setTimeout(() => socket.destroy(), 6_000);
      const watch = setInterval(() => {
        if (stats.badRequests === refusedBefore) return;
        clearInterval(watch);
        then?.(socket);
      }, 20);
      socket.on('data', (chunk: Buffer) => {
        if (chunks.length === 0) socket.write(second);
        chunks.push(chunk);
      });
      socket.on('end', () => (closedByServer = true));
      socket.on('error', () => undefined);
      socket.on('close', () => {
        clearTimeout(giveUp);
        clearInterval(watch);
        resolve({ text: Buffer.concat(chunks).toString('utf8'), closedByServer });
      });
    });

  /** The body of a chunked answer of `pieces` pieces, its last chunk, and nothing after it. */
  const wholeAnswer = (pieces: number) =>
    Array.from({ length: pieces }, (_, index) => `piece ${index + 1};`)
      .map((piece) => `${piece.length.toString(16)}\r\n${piece}\r\n`)
      .join('') + '0\r\n\r\n';

  test('a pipelined request that is not HTTP, or whose headers are too large, sent while the answer before it streams, leaves that answer whole; the connection closes after it', async () => {
    const before = stats.badRequests;
    const exchanges = await Promise.all(
      ['NOT HTTP AT ALL\r\n\r\n', `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(http.maxHeaderSize)}\r\n\r\n`].map((second) =>
        pipeline('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n', second),
      ),
    );
    assert.deepEqual(escaped.map(String), []);
    for (const exchange of exchanges) {
      const [head] = exchange.text.split('\r\n\r\n', 1) as [string];
      assert.match(head, /^HTTP\/1\.1 200 OK\r\n[\s\S]*transfer-encoding: chunked/i);
      // Every chunk, the last one, and nothing after it (no 400 or 431 written into the connection).
      assert.equal(exchange.text.slice(head.length + 4), wholeAnswer(4));
      assert.ok(exchange.closedByServer, 'closed by the server after the answer');
    }
    assert.equal(stats.badRequests - before, 2);
  });

  test('a pipelined head that ran out of time while the answer before it streamed is not served when it ends later: that answer arrives whole, then the connection closes', async () => {
    const before = stats.badRequests;
    served.length = 0;
    const exchange = await pipeline('GET /slow?pieces=12 HTTP/1.1\r\nHost: x\r\n\r\n', 'GET /late HTTP/1.1\r\nHost: x\r\n', (socket) => socket.write('\r\n'));
    assert.deepEqual(escaped.map(String), []);
    const [head] = exchange.text.split('\r\n\r\n', 1) as [string];
    assert.match(head, /^HTTP\/1\.1 200 OK\r\n/);
    assert.equal(exchange.text.slice(head.length + 4), wholeAnswer(12));
    assert.ok(exchange.closedByServer);
    assert.deepEqual(served, ['/slow?pieces=12'], 'the refused request never reached a handler');
    assert.equal(stats.badRequests - before, 1);
  });
});
