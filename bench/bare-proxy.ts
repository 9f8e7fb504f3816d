/**
 * A bare pass-through proxy for benchmarks: node:http in, node:http out, the body parsed and
 * serialised once, the answer piped back. Nothing else. Measured in the same run as MetaClaw, it
 * shows what any Node proxy adds on this machine (an extra process hop both ways), so the report
 * can tell that floor apart from MetaClaw's own work. Usage: upstreamPort.
 */
import http from 'node:http';

const upstreamPort = Number(process.argv[2]);
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

const server = http.createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const body = Buffer.from(JSON.stringify(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
    const upstream = http.request(
      {
        host: '127.0.0.1',
        port: upstreamPort,
        path: request.url,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': body.length },
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, { 'content-type': answer.headers['content-type'] ?? 'application/json' });
        answer.on('data', (chunk: Buffer) => response.write(chunk));
        answer.on('end', () => response.end());
      },
    );
    upstream.end(body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as { port: number }).port })}\n`);
});
