/**
 * Is it the code or the machine? Compares this checkout's proxy with another checkout's (an older
 * commit, made with `git worktree add ../old <commit>` and built there with `npm run build`) in one
 * run, on the same machine load.
 *
 * One scripted upstream answers at once (latency) and another in 20 ms (throughput, as the c32 row
 * of `npm run bench`). Each checkout's proxy is started by its own CLI with the benchmarks' config.
 * Rounds alternate direct, this build and the other build (the order flips every round), so a VM
 * whose speed drifts slows every side alike. It prints the added latency (p50 / p90 over direct,
 * 1 KB and 60 KB bodies) and the c32 requests per second of each, and their ratios.
 *
 * A full `npm run bench` on a slower or busier machine moves every row; this says whether the code
 * moved them. Nothing is written.
 *
 * Usage (after `npm run build` in both checkouts):
 *   node --import tsx bench/compare-builds.ts OTHER_CHECKOUT [--rounds N]
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { benchProxyConfig, freePort, openclawSizedBody, sequential, smallBody, startHelper, throughput } from './load.js';
import { summarize } from './stats.js';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { rounds: { type: 'string', default: '8' } } });
const rounds = Number(values.rounds);
if (positionals.length !== 1 || !Number.isInteger(rounds) || rounds < 1) {
  process.stderr.write('usage: node --import tsx bench/compare-builds.ts OTHER_CHECKOUT [--rounds N]\n');
  process.exit(2);
}
const builds = [
  { name: 'this checkout', repo: resolve(import.meta.dirname, '..') },
  { name: 'other checkout', repo: resolve(positionals[0]!) },
];

interface Target {
  name: string;
  fast: string;
  slow: string;
}

const children: ChildProcess[] = [];
const root = mkdtempSync(join(tmpdir(), 'metaclaw-compare-'));
/** The proxies started, to stop each with its own CLI. */
const started: Array<{ repo: string; home: string }> = [];

function cli(repo: string, home: string, args: string[]): void {
  execFileSync(process.execPath, [join(repo, 'bin', 'metaclaw.js'), ...args], {
    env: { ...process.env, METACLAW_HOME: home, OPENAI_API_KEY: '', OPENAI_BASE_URL: '', ANTHROPIC_API_KEY: '' },
    stdio: 'ignore',
  });
}

/** A proxy of `repo` in front of `upstream`, started by that checkout's CLI. */
async function startProxy(repo: string, name: string, upstream: string): Promise<string> {
  const home = join(root, name);
  mkdirSync(home);
  const port = await freePort();
  writeFileSync(join(home, 'config.yaml'), stringify(benchProxyConfig(upstream, port)), { mode: 0o600 });
  cli(repo, home, ['start']);
  started.push({ repo, home });
  return `http://127.0.0.1:${port}`;
}

/**
 * Until the proxy has recorded what it was sent (its turn count holds still) and runs no learning
 * job, at most 2 minutes. The direct upstream has no /status: nothing to wait for.
 */
async function settled(base: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  let turns = -1;
  while (Date.now() < deadline) {
    const response = await fetch(`${base}/status`).catch(() => undefined);
    if (!response || response.status !== 200) return;
    const status = (await response.json()) as { queue?: { queued?: number; leased?: number }; sessions?: { turns?: number } };
    const now = status.sessions?.turns ?? 0;
    if (now === turns && (status.queue?.queued ?? 0) + (status.queue?.leased ?? 0) === 0) return;
    turns = now;
    await new Promise((resolveWait) => setTimeout(resolveWait, 250));
  }
}

const p = (samples: number[], at: number): number => summarize(samples)[at === 50 ? 'p50' : 'p90'];

try {
  const fastUpstream = await startHelper(['upstream-server.ts', '0', '0'], children);
  const slowUpstream = await startHelper(['upstream-server.ts', '0', '20'], children);
  const targets: Target[] = [{ name: 'direct', fast: fastUpstream, slow: slowUpstream }];
  for (const [index, build] of builds.entries())
    targets.push({
      name: build.name,
      fast: await startProxy(build.repo, `b${index}-fast`, fastUpstream),
      slow: await startProxy(build.repo, `b${index}-slow`, slowUpstream),
    });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const small = JSON.stringify(smallBody());
  const large = JSON.stringify(openclawSizedBody());
  const chat = (base: string) => `${base}/v1/chat/completions`;
  // Warm-up: a proxy still compiling its hot paths is slower than the daemon it stands for.
  for (const target of targets) {
    await sequential(chat(target.fast), small, 300, agent);
    await sequential(chat(target.fast), large, 60, agent);
    await throughput(target.slow, small, 32, 1_500, agent);
  }
  const samples = new Map(targets.map((target) => [target.name, { small: [] as number[], large: [] as number[], rps: [] as number[] }]));
  const order = (round: number) => (round % 2 === 0 ? targets : [...targets].reverse());
  // Latency first, then throughput: a c32 run leaves its proxy recording thousands of turns for a
  // while, which would weigh on the latency of whichever proxy is measured next.
  for (let round = 0; round < rounds; round++) {
    process.stderr.write(`latency round ${round + 1} of ${rounds}\n`);
    for (const target of order(round)) {
      samples.get(target.name)!.small.push(...(await sequential(chat(target.fast), small, 150, agent)));
      samples.get(target.name)!.large.push(...(await sequential(chat(target.fast), large, 40, agent)));
    }
  }
  for (let round = 0; round < rounds; round++) {
    process.stderr.write(`throughput round ${round + 1} of ${rounds}\n`);
    for (const target of order(round)) {
      await settled(target.slow);
      samples.get(target.name)!.rps.push(await throughput(target.slow, small, 32, 2_500, agent));
    }
  }
  const direct = samples.get('direct')!;
  const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
  const rows = builds.map(({ name }) => {
    const mine = samples.get(name)!;
    return {
      name,
      small: [p(mine.small, 50) - p(direct.small, 50), p(mine.small, 90) - p(direct.small, 90)],
      large: [p(mine.large, 50) - p(direct.large, 50), p(mine.large, 90) - p(direct.large, 90)],
      ratio: mean(mine.rps) / mean(direct.rps),
      rps: mean(mine.rps),
    };
  });
  const ms = (value: number) => value.toFixed(3);
  console.log(`| build | added p50 / p90, 1 KB (ms) | added p50 / p90, 60 KB (ms) | c32 req/s, upstream in 20 ms | ratio to direct |`);
  console.log('|---|---|---|---|---|');
  console.log(
    `| direct | ${ms(p(direct.small, 50))} / ${ms(p(direct.small, 90))} (its own) | ${ms(p(direct.large, 50))} / ${ms(p(direct.large, 90))} (its own) | ${mean(direct.rps).toFixed(0)} | 1.000 |`,
  );
  for (const row of rows)
    console.log(
      `| ${row.name} | ${ms(row.small[0]!)} / ${ms(row.small[1]!)} | ${ms(row.large[0]!)} / ${ms(row.large[1]!)} | ${row.rps.toFixed(0)} | ${row.ratio.toFixed(3)} |`,
    );
  const [mine, other] = rows as [(typeof rows)[0], (typeof rows)[0]];
  console.log(
    `\nthis checkout / other: added p50 1 KB ${(mine.small[0]! / other.small[0]!).toFixed(2)}×, 60 KB ${(mine.large[0]! / other.large[0]!).toFixed(2)}×, throughput ${(mine.rps / other.rps).toFixed(2)}×`,
  );
} finally {
  for (const { repo, home } of started) {
    try {
      cli(repo, home, ['stop']);
    } catch {
      // already gone
    }
  }
  for (const child of children) child.kill();
  rmSync(root, { recursive: true, force: true });
}
