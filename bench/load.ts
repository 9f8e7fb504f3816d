/**
 * The load the benchmarks put on a proxy: helper processes (upstream, bare proxy), one request, a
 * sequential run, and a fixed-concurrency run for throughput. Shared by `npm run bench` and
 * `npm run bench:team`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { join, resolve } from 'node:path';

const REPO = resolve(import.meta.dirname, '..');

/** The key the load sends (a team node needs a member's; a personal proxy ignores it). */
let clientKey = 'sk-client';

export function useClientKey(key: string): void {
  clientKey = key;
}

export async function startHelper([script, ...args]: string[], children: ChildProcess[]): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(REPO, 'bench', script!), ...args], { cwd: REPO, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const port = await new Promise<number>((resolvePort) =>
    child.stdout.once('data', (chunk: Buffer) => resolvePort((JSON.parse(chunk.toString()) as { port: number }).port)),
  );
  return `http://127.0.0.1:${port}`;
}

/**
 * The benchmarks' proxy config in front of `upstream`. Learning jobs are off: they run off the
 * request path, and a benchmark's one endless session would otherwise trigger them over and over
 * while latency is measured.
 */
export function benchProxyConfig(upstream: string, port: number): Record<string, unknown> {
  return {
    llm: { api_base: `${upstream}/v1`, api_key: 'sk-bench' },
    proxy: { port },
    skills: { auto_evolve: false },
    memory: { auto_extract: false },
  };
}

export function freePort(): Promise<number> {
  return new Promise((resolvePort) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolvePort(port));
    });
  });
}

export function post(url: string, body: string, agent: http.Agent, onFirstByte?: () => void): Promise<void> {
  return new Promise((resolveRequest, reject) => {
    const request = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), authorization: `Bearer ${clientKey}` },
      },
      (response) => {
        let first = true;
        response.on('data', () => {
          if (first) {
            first = false;
            onFirstByte?.();
          }
        });
        response.on('end', () => (response.statusCode === 200 ? resolveRequest() : reject(new Error(`HTTP ${response.statusCode}`))));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

export async function sequential(url: string, body: string, count: number, agent: http.Agent): Promise<number[]> {
  const samples: number[] = [];
  for (let index = 0; index < count; index++) {
    const started = performance.now();
    await post(url, body, agent);
    samples.push(performance.now() - started);
  }
  return samples;
}

export async function throughput(url: string, body: string, concurrency: number, durationMs: number, agent: http.Agent): Promise<number> {
  let completed = 0;
  const deadline = performance.now() + durationMs;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        await post(`${url}/v1/chat/completions`, body, agent);
        completed++;
      }
    }),
  );
  return completed / ((performance.now() - started) / 1000);
}

/**
 * About 1 KB: a turn of an ongoing conversation, as agents send them. (A lone first user message
 * would open a new session at each request: a client without a session id that sends the same
 * opening again is starting another run.)
 */
export function smallBody() {
  return {
    model: 'bench-model',
    messages: [
      { role: 'system', content: 'You are a helpful coding assistant. Answer briefly and precisely; prefer code over prose when it helps. '.repeat(4) },
      { role: 'user', content: 'My feature branch has a typo in its name.' },
      { role: 'assistant', content: 'You can rename it; is it already pushed?' },
      { role: 'user', content: 'How do I rename a git branch locally and on the remote without breaking open pull requests?' },
    ],
  };
}

/** The shape and size of a real OpenClaw turn: a ~48 K-char system prompt, 12 tools, two user messages. */
export function openclawSizedBody() {
  const fixture = JSON.parse(readFileSync(join(REPO, 'test', 'fixtures', 'openclaw-turn.json'), 'utf8')) as {
    messages: Array<{ content: unknown }>;
    tools?: unknown;
    stream?: boolean;
    stream_options?: unknown;
  };
  const section =
    'You are a personal assistant running inside OpenClaw. Follow the tooling rules, keep the workspace tidy, and never run destructive commands without asking. ';
  fixture.messages[0]!.content = `<!-- openclaw:attempt:STABLE -->\n${section.repeat(Math.ceil(48_000 / section.length))}`;
  fixture.tools = Array.from({ length: 12 }, (_, index) => ({
    type: 'function',
    function: {
      name: `tool_${index}`,
      description: 'A tool the agent can call. '.repeat(20),
      parameters: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } } },
    },
  }));
  fixture.stream = false;
  delete fixture.stream_options;
  return fixture;
}
