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
  before(async () => {
    process.on('uncaughtException', onEscape);
    server = http.createServer({ requestTimeout: 1000, headersTimeout: 1000, connectionsCheckingInterval: 100 }, (_request, response) => response.end('ok'));
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
});
