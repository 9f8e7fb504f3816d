import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';

export const REPO = resolve(import.meta.dirname, '..', '..');
export const CLI = join(REPO, 'bin', 'metaclaw.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Environment for a child that must not see the developer's own keys or MetaClaw home. */
export function cleanEnv(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'], HOME: home, METACLAW_HOME: home, NODE_OPTIONS: '' };
  return { ...env, ...extra };
}

/**
 * Runs a program to its end: its exit code and output (never throws). Stdin gets `input`, or is
 * closed at once (Claude Code, for one, waits seconds for input on an open one).
 */
export function runProgram(
  command: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number; input?: string },
): Promise<CliResult> {
  return new Promise((resolveResult) => {
    const child = execFile(
      command,
      args,
      { env: options.env, cwd: options.cwd, timeout: options.timeoutMs ?? 60_000, maxBuffer: 32 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof (error as { code?: unknown }).code === 'number' ? (error as { code: number }).code : 1) : 0;
        resolveResult({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
    child.stdin?.end(options.input);
  });
}

/** Runs the real CLI (`bin/metaclaw.js`) as a process. */
export function runCli(args: string[], options: { home: string; env?: Record<string, string>; timeoutMs?: number; input?: string }): Promise<CliResult> {
  return runProgram(process.execPath, [CLI, ...args], {
    env: cleanEnv(options.home, options.env),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    ...(options.input !== undefined ? { input: options.input } : {}),
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolvePort(port));
    });
  });
}

/** The database file and its WAL, as bytes: what forgetting must leave without a trace. */
export function databaseBytes(home: string): Buffer {
  const wal = join(home, 'metaclaw.db-wal');
  return Buffer.concat([readFileSync(join(home, 'metaclaw.db')), existsSync(wal) ? readFileSync(wal) : Buffer.alloc(0)]);
}

export function tempHome(prefix = 'metaclaw-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A fresh MetaClaw home with the starter skills installed by the real CLI. */
export async function homeWithStarterSkills(): Promise<string> {
  const home = tempHome();
  const installed = await runCli(['skills', 'install-starter'], { home });
  if (installed.code !== 0) throw new Error(`skills install-starter failed (${installed.code}):\n${installed.stderr}`);
  return home;
}

export interface ProxyHandle {
  home: string;
  port: number;
  /** http://127.0.0.1:PORT */
  url: string;
  cli(args: string[], options?: { env?: Record<string, string>; timeoutMs?: number }): Promise<CliResult>;
  stop(): Promise<void>;
  /** Stops and deletes the home folder. */
  dispose(): Promise<void>;
}

/**
 * Starts the proxy the way a user does, `metaclaw start` (daemonised), in a fresh METACLAW_HOME
 * with `config` written as its config.yaml.
 */
export async function startProxy(
  options: { config?: Record<string, unknown>; env?: Record<string, string>; home?: string; args?: string[]; port?: number } = {},
): Promise<ProxyHandle> {
  const home = options.home ?? tempHome();
  const port = options.port ?? (await freePort());
  if (options.config) {
    const config = structuredClone(options.config);
    const proxy = (config['proxy'] ?? {}) as Record<string, unknown>;
    proxy['port'] ??= port;
    config['proxy'] = proxy;
    writeFileSync(join(home, 'config.yaml'), stringify(config), { mode: 0o600 });
  }
  const args = ['start', ...(options.config ? [] : ['--port', String(port)]), ...(options.args ?? [])];
  const started = await runCli(args, { home, ...(options.env ? { env: options.env } : {}) });
  if (started.code !== 0) throw new Error(`metaclaw start failed (${started.code}):\n${started.stdout}\n${started.stderr}`);
  const actualPort = Number((options.config?.['proxy'] as { port?: number } | undefined)?.port ?? port);
  const handle: ProxyHandle = {
    home,
    port: actualPort,
    url: `http://127.0.0.1:${actualPort}`,
    cli: (cliArgs, cliOptions = {}) => runCli(cliArgs, { home, ...cliOptions, env: { ...(options.env ?? {}), ...(cliOptions.env ?? {}) } }),
    stop: async () => {
      await runCli(['stop'], { home, ...(options.env ? { env: options.env } : {}) });
    },
    dispose: async () => {
      await handle.stop();
      rmSync(home, { recursive: true, force: true });
    },
  };
  return handle;
}

/** Runs `metaclaw start --foreground` as a child we control (for signal tests). */
export function spawnForeground(home: string, args: string[] = [], env: Record<string, string> = {}) {
  return spawn(process.execPath, [CLI, 'start', '--foreground', ...args], { env: cleanEnv(home, env), stdio: ['ignore', 'pipe', 'pipe'] });
}

export async function waitFor<T>(check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 10_000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolveWait) => setTimeout(resolveWait, intervalMs));
  }
}

/**
 * The recorded turn of a request (its `x-metaclaw-request-id`), once its record is written: the
 * proxy answers /v1/requests/{id} only after that turn's pending record. Records are written in
 * the order requests finished, so it is also the moment every earlier turn is recorded: the event
 * to wait on instead of a pause before checking what recording did (or did not) do.
 */
export async function recordedTurn(url: string, requestId: string, headers: Record<string, string> = {}): Promise<any> {
  const response = await fetch(`${url}/v1/requests/${requestId}`, { headers });
  if (response.status !== 200) throw new Error(`request ${requestId} has no recorded turn (${response.status}): ${await response.text()}`);
  return response.json();
}

/**
 * How the proxy kept a request it refused itself, by the `x-metaclaw-request-id` its error came
 * with: whether a turn was recorded for it, and its /status `last_errors` entry.
 */
export async function refusalTrace(
  url: string,
  requestId: string,
): Promise<{ recorded: boolean; listed: { status: number | null; error: string } | undefined }> {
  const recorded = (await fetch(`${url}/v1/requests/${requestId}`)).status === 200;
  const status = (await (await fetch(`${url}/status`)).json()) as {
    requests: { last_errors: Array<{ request_id: string; status: number | null; error: string }> };
  };
  return { recorded, listed: status.requests.last_errors.find((entry) => entry.request_id === requestId) };
}

/** The contents of the memories `POST /v1/memory/search` finds for `query` (default scope), best first. */
export async function searchMemory(proxy: ProxyHandle, query: string): Promise<string[]> {
  const response = await fetch(`${proxy.url}/v1/memory/search`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  const body = (await response.json()) as { results: Array<{ content: string }> };
  return body.results.map((result) => result.content);
}
