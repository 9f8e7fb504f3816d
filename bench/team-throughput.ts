/**
 * Team nodes under load (issue 16): proxies started by the real CLI on one throwaway PostgreSQL,
 * against the personal (SQLite) proxy and the upstream itself, all in the same run.
 * - Added latency: sequential 1 KB requests, rounds alternating direct / personal / team node.
 * - Throughput at concurrency 32 with 1, 2 and 3 team nodes (the 32 clients spread over them), as a
 *   ratio to direct, and the personal proxy's in the same rounds.
 * Every process shares this machine's cores (2 here): three nodes, PostgreSQL, the upstream and the
 * client together measure contention as much as the proxy.
 *
 * Standalone: `node --import tsx bench/team-throughput.ts [--seconds 4]` (needs Debian's `postgresql`).
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { stringify } from 'yaml';
import { startPostgres } from '../test/support/postgres.js';
import { freePort, sequential, smallBody, startHelper, throughput, useClientKey } from './load.js';
import { round3, summarize } from './stats.js';
import { numberOption } from './options.js';

const CLI = join(resolve(import.meta.dirname, '..'), 'bin', 'metaclaw.js');
const OWNER_KEY = 'owner-key-for-the-team-bench';

function cli(args: string[], home: string, env: Record<string, string> = {}): string {
  return execFileSync(process.execPath, [CLI, ...args], {
    env: { ...process.env, METACLAW_HOME: home, OPENAI_API_KEY: '', OPENAI_BASE_URL: '', ANTHROPIC_API_KEY: '', ...env },
    encoding: 'utf8',
  });
}

/** Starts a proxy with the real CLI; skill evolution and memory extraction off (no LLM here), raw-turn memory learning on. */
async function startNode(home: string, upstream: string, env: Record<string, string>): Promise<string> {
  mkdirSync(home, { recursive: true });
  const port = await freePort();
  const config = { llm: { api_base: `${upstream}/v1`, api_key: 'sk-bench' }, proxy: { port }, skills: { auto_evolve: false }, memory: { auto_extract: false } };
  writeFileSync(join(home, 'config.yaml'), stringify(config), { mode: 0o600 });
  cli(['start', '--no-wire'], home, env);
  return `http://127.0.0.1:${port}`;
}

/**
 * Waits (up to 3 minutes) until the personal proxy's queue and the team queue have nothing
 * queued or running that a process here runs: each measurement then starts without another
 * process's learning backlog on the same two cores (skills.search_keys jobs have no team worker).
 */
async function learningSettled(personal: string, pool: pg.Pool): Promise<void> {
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    const own = (await (await fetch(`${personal}/status`)).json()) as { queue: { queued?: number; leased?: number } };
    const team = await pool.query<{ n: string }>("SELECT count(*) AS n FROM jobs WHERE status IN ('queued', 'leased') AND kind <> 'skills.search_keys'");
    if ((own.queue.queued ?? 0) + (own.queue.leased ?? 0) + Number(team.rows[0]!.n) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  console.error('the learning backlog did not drain within 3 minutes; measuring anyway');
}

/** c32 spread over `urls` round-robin. */
async function spread(urls: string[], body: string, seconds: number, agent: http.Agent): Promise<number> {
  const rates = await Promise.all(
    urls.map((url, index) => throughput(url, body, Math.floor(32 / urls.length) + (index < 32 % urls.length ? 1 : 0), seconds * 1000, agent)),
  );
  return rates.reduce((sum, rate) => sum + rate, 0);
}

export async function measureTeamThroughput(seconds: number): Promise<string[]> {
  const root = mkdtempSync(join(tmpdir(), 'metaclaw-team-bench-'));
  const server = await startPostgres();
  const children: ChildProcess[] = [];
  const homes: Array<{ home: string; env: Record<string, string> }> = [];
  const agent = new http.Agent({ keepAlive: true, maxSockets: 128 });
  try {
    const url = server.createDatabase('team_bench');
    const team = { METACLAW_DATABASE_URL: url, METACLAW_PROXY_API_KEY: OWNER_KEY };
    cli(['store', 'migrate'], root, team);
    const key = (JSON.parse(cli(['team', 'add-member', 'bench', '--json'], root, team)) as { key: string }).key;
    useClientKey(key);
    // Answering in 20 ms, like a fast model: the headline throughput row of `npm run bench`.
    const upstream = await startHelper(['upstream-server.ts', '0', '20'], children);
    const personal = await startNode(join(root, 'personal'), upstream, {});
    homes.push({ home: join(root, 'personal'), env: {} });
    const nodes: string[] = [];
    for (let index = 0; index < 3; index++) {
      nodes.push(await startNode(join(root, `node${index}`), upstream, team));
      homes.push({ home: join(root, `node${index}`), env: team });
    }
    // A turn of an ongoing conversation, as in `npm run bench` (a lone opening message would open a session per request).
    const body = JSON.stringify(smallBody());
    for (const target of [upstream, personal, ...nodes]) await sequential(`${target}/v1/chat/completions`, body, 200, agent);
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    await learningSettled(personal, pool);

    const samples: Record<'direct' | 'personal' | 'team', number[]> = { direct: [], personal: [], team: [] };
    for (let round = 0; round < 20; round++) {
      samples.direct.push(...(await sequential(`${upstream}/v1/chat/completions`, body, 50, agent)));
      samples.personal.push(...(await sequential(`${personal}/v1/chat/completions`, body, 50, agent)));
      samples.team.push(...(await sequential(`${nodes[0]}/v1/chat/completions`, body, 50, agent)));
    }
    const direct = summarize(samples.direct);
    const latency = (name: 'personal' | 'team') => {
      const summary = summarize(samples[name]);
      return `${round3(summary.p50 - direct.p50)} / ${round3(summary.p99 - direct.p99)}`;
    };

    const rates = { direct: 0, personal: 0, one: 0, two: 0, three: 0 };
    const measure = async (targets: string[]) => {
      await learningSettled(personal, pool);
      return spread(targets, body, seconds / 2, agent);
    };
    for (let round = 0; round < 2; round++) {
      rates.direct += await measure([upstream]);
      rates.personal += await measure([personal]);
      rates.one += await measure(nodes.slice(0, 1));
      rates.two += await measure(nodes.slice(0, 2));
      rates.three += await measure(nodes);
    }
    const stored = Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM turns')).rows[0]!.n);
    const jobs = (await pool.query<{ status: string; n: string }>('SELECT status, count(*) AS n FROM jobs GROUP BY status ORDER BY status')).rows;
    await pool.end();
    const ratio = (rate: number) => `${Math.round(rate / 2)} (${round3(rate / rates.direct)})`;
    const loadAverage = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    return [
      `### Team nodes on one PostgreSQL (${new Date().toISOString().slice(0, 16)} UTC; load average after: ${loadAverage})`,
      '',
      '| measure | direct | personal proxy (SQLite) | 1 team node | 2 team nodes | 3 team nodes |',
      '|---|---:|---:|---:|---:|---:|',
      `| added latency, 1 KB, p50 / p99 (ms) | – | ${latency('personal')} | ${latency('team')} | | |`,
      `| throughput at c32, upstream answering in 20 ms, requests/s (ratio to direct) | ${Math.round(rates.direct / 2)} | ${ratio(rates.personal)} | ${ratio(rates.one)} | ${ratio(rates.two)} | ${ratio(rates.three)} |`,
      '',
      `Turns stored in the team store after the run: ${stored.toLocaleString('en')}; learning jobs (run by the nodes): ${jobs.map((row) => `${row.status} ${Number(row.n).toLocaleString('en')}`).join(', ') || 'none'}. Each measurement starts once every process's learning backlog is done (the nodes learn every turn as a raw memory of its member, yielding to their own traffic).`,
    ];
  } finally {
    agent.destroy();
    for (const { home, env } of homes) {
      try {
        cli(['stop'], home, env);
      } catch {
        // already stopped
      }
    }
    for (const child of children) child.kill();
    server.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) console.log((await measureTeamThroughput(numberOption('seconds', 4))).join('\n'));
