/**
 * The proxy's CPU time per request, the figure that caps its throughput on a small machine.
 *
 * Starts the scripted upstream (bench/upstream-server.ts), a MetaClaw proxy with the real CLI
 * (`metaclaw start`, skills and memory on, empty libraries, learning jobs off, as `npm run bench`'s
 * c32 rows) and the bare pass-through proxy (bench/bare-proxy.ts) for scale. It warms each proxy
 * up, then drives N requests (the 1 KB body) at concurrency 32 through each and reads the proxy
 * process's user + system CPU time from /proc/<pid>/stat before and after, all threads and the main
 * thread alone (the rest is V8's garbage collection helpers and the turn writer's thread). CPU time
 * per request moves much less than requests per second when other processes load the machine
 * (still some ±10 % here: compare runs made one after the other, and repeat).
 *
 * Usage (after `npm run build`):
 *   node --import tsx bench/cpu-per-request.ts [--requests N] [--repeats R] [--delay MS]
 * Defaults: 4,000 requests, 3 repeats, an upstream answering in 20 ms (the c32 row's).
 * `--profile DIR` runs the proxy in the foreground (`metaclaw start --foreground`, with the daemon's
 * Node flags) under `node --cpu-prof`, and leaves its .cpuprofile in DIR once it is stopped. Such a
 * profile samples wall time: on a loaded machine, calls that wake another process or thread (socket
 * writes, postMessage) look far costlier than the CPU they use; trust the CPU figures for totals.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { PROXY_ENVIRONMENT, PROXY_NODE_FLAGS } from '../src/runtime/memory-bounds.js';
import { benchProxyConfig, freePort, post, smallBody, startHelper } from './load.js';

const REPO = resolve(import.meta.dirname, '..');
const CLI = join(REPO, 'bin', 'metaclaw.js');
const CONCURRENCY = 32;

const { values: options } = parseArgs({
  options: {
    requests: { type: 'string', default: '4000' },
    repeats: { type: 'string', default: '3' },
    delay: { type: 'string', default: '20' },
    profile: { type: 'string' },
  },
});
const requests = Number(options.requests);
const repeats = Number(options.repeats);

interface Cpu {
  user: number;
  system: number;
}

/** User and system CPU time so far, in microseconds, from a /proc stat file (fields 14 and 15). */
function cpuOf(statFile: string): Cpu {
  const stat = readFileSync(statFile, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const micros = (ticks: string | undefined) => (Number(ticks) * 1_000_000) / 100; // USER_HZ is 100 on Linux
  return { user: micros(fields[11]), system: micros(fields[12]) };
}

/** A process's CPU time (all its threads), and its main thread's alone: the rest is GC helpers and worker threads. */
function cpuMicros(pid: number): Cpu & { mainThread: number } {
  const main = cpuOf(`/proc/${pid}/task/${pid}/stat`);
  return { ...cpuOf(`/proc/${pid}/stat`), mainThread: main.user + main.system };
}

/** Sends `count` requests, `CONCURRENCY` at a time. */
async function drive(url: string, body: string, count: number, agent: http.Agent): Promise<void> {
  let left = count;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (left > 0) {
        left--;
        await post(`${url}/v1/chat/completions`, body, agent);
      }
    }),
  );
}

/** CPU µs per request (user + system; system alone; the main thread's) of the process `pid` over `count` requests at c32. */
async function cpuPerRequest(url: string, pid: number, body: string, count: number, agent: http.Agent) {
  const before = cpuMicros(pid);
  await drive(url, body, count, agent);
  const after = cpuMicros(pid);
  const perRequest = (micros: number) => Math.round(micros / count);
  return {
    total: perRequest(after.user - before.user + after.system - before.system),
    system: perRequest(after.system - before.system),
    mainThread: perRequest(after.mainThread - before.mainThread),
  };
}

function cliEnvironment(home: string): NodeJS.ProcessEnv {
  return { ...process.env, METACLAW_HOME: home, OPENAI_API_KEY: '', OPENAI_BASE_URL: '', ANTHROPIC_API_KEY: '' };
}

function runCli(args: string[], home: string): void {
  execFileSync(process.execPath, [CLI, ...args], { env: cliEnvironment(home), stdio: 'ignore' });
}

/** The proxy in the foreground under the CPU profiler, with the flags `metaclaw start` gives its daemon. */
async function startProfiled(home: string, url: string, directory: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${directory}`, ...PROXY_NODE_FLAGS, CLI, 'start', '--foreground'], {
    env: { ...PROXY_ENVIRONMENT, ...cliEnvironment(home) },
    stdio: 'ignore',
  });
  for (let tries = 0; tries < 200; tries++) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return child;
    } catch {
      // not listening yet
    }
    await new Promise((resolveWait) => setTimeout(resolveWait, 100));
  }
  throw new Error('the profiled proxy did not start');
}

async function main(): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'metaclaw-cpu-'));
  const children: ChildProcess[] = [];
  let proxyPid = 0;
  try {
    const upstream = await startHelper(['upstream-server.ts', '0', options.delay], children);
    const bare = await startHelper(['bare-proxy.ts', new URL(upstream).port], children);
    const barePid = children.at(-1)!.pid!;
    const port = await freePort();
    // The c32 rows' proxy (bench/run.ts): learning jobs off, skills and memory injection on.
    writeFileSync(join(home, 'config.yaml'), stringify(benchProxyConfig(upstream, port)), { mode: 0o600 });
    const proxy = `http://127.0.0.1:${port}`;
    const profiled = options.profile ? await startProfiled(home, proxy, options.profile) : undefined;
    if (!profiled) runCli(['start'], home);
    proxyPid = profiled ? profiled.pid! : (JSON.parse(readFileSync(join(home, 'metaclaw.pid'), 'utf8')) as { pid: number }).pid;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
    const body = JSON.stringify(smallBody());

    // Warm-up: V8 compiles the hot paths during the first few thousand requests.
    await drive(proxy, body, 3_000, agent);
    await drive(bare, body, 3_000, agent);
    const rows: { metaclaw: number; metaclaw_system: number; metaclaw_main_thread: number; bare: number; bare_system: number }[] = [];
    for (let repeat = 0; repeat < repeats; repeat++) {
      const metaclaw = await cpuPerRequest(proxy, proxyPid, body, requests, agent);
      const bareCost = await cpuPerRequest(bare, barePid, body, requests, agent);
      rows.push({
        metaclaw: metaclaw.total,
        metaclaw_system: metaclaw.system,
        metaclaw_main_thread: metaclaw.mainThread,
        bare: bareCost.total,
        bare_system: bareCost.system,
      });
      process.stderr.write(
        `repeat ${repeat + 1}: MetaClaw ${metaclaw.total} µs/request (system ${metaclaw.system}, main thread ${metaclaw.mainThread}), bare proxy ${bareCost.total} (system ${bareCost.system})\n`,
      );
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const result = {
      requests,
      concurrency: CONCURRENCY,
      upstream_delay_ms: Number(options.delay),
      metaclaw_us_per_request: median(rows.map((row) => row.metaclaw)),
      bare_us_per_request: median(rows.map((row) => row.bare)),
      runs: rows,
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    agent.destroy();
    if (profiled) {
      profiled.kill('SIGTERM'); // a clean exit writes the profile
      await once(profiled, 'exit');
    } else runCli(['stop'], home);
    proxyPid = 0;
  } finally {
    if (proxyPid) {
      try {
        process.kill(proxyPid, 'SIGKILL');
      } catch {
        // already stopped
      }
    }
    for (const child of children) child.kill('SIGKILL');
    rmSync(home, { recursive: true, force: true });
  }
}

await main();
