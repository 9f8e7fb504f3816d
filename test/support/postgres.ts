/**
 * A throwaway PostgreSQL server for tests: Debian's `postgresql` binaries (installed by `.ci/run`),
 * a fresh cluster in a temporary folder, trust auth on 127.0.0.1 and a free port. PostgreSQL refuses
 * to run as root, so under root the cluster is owned by and run as the `postgres` system user.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import type pg from 'pg';
import { migratePostgres, openPool, type PoolOptions } from '../../src/store/postgres/index.js';
import { freePort } from './proxy.js';

export interface TestPostgres {
  /** `postgres://postgres@127.0.0.1:PORT/postgres` */
  readonly url: string;
  readonly port: number;
  /** A new empty database on this server; its URL. */
  createDatabase(name: string): string;
  stop(): void;
  /** Stops the server, keeping its data, to simulate an outage. */
  pause(): void;
  resume(): void;
}

/** The folder holding `initdb`, `pg_ctl` and `psql`, or null when PostgreSQL is not installed. */
export function postgresBin(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((name) => existsSync(join(root, name, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : null;
}

/** Why PostgreSQL tests cannot run here, or false: for `describe(…, { skip })`. */
export function postgresSkip(): string | false {
  return postgresBin() ? false : 'needs PostgreSQL server binaries (Debian package postgresql; .ci/run installs it)';
}

export async function startPostgres(): Promise<TestPostgres> {
  const bin = postgresBin();
  if (!bin) throw new Error('PostgreSQL is not installed');
  const asRoot = process.getuid?.() === 0;
  const folder = mkdtempSync(join(tmpdir(), 'metaclaw-pg-'));
  const data = join(folder, 'data');
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(folder, uid, gid);
  }
  chmodSync(folder, 0o700);
  const run = (program: string, args: string[]): void => {
    const command = asRoot ? 'runuser' : join(bin, program);
    const argv = asRoot ? ['-u', 'postgres', '--', join(bin, program), ...args] : args;
    const result = spawnSync(command, argv, { encoding: 'utf8', timeout: 60_000 });
    if (result.status !== 0) throw new Error(`${program} failed: ${result.stderr || result.stdout}`);
  };
  run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C.UTF-8']);
  const port = await freePort();
  const options = `-p ${port} -k ${folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
  const start = (): void => run('pg_ctl', ['-D', data, '-o', options, '-l', join(folder, 'server.log'), '-w', 'start']);
  const halt = (): void => run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
  start();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let running = true;
  return {
    url,
    port,
    createDatabase(name) {
      run('psql', ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-v', 'ON_ERROR_STOP=1', '-c', `CREATE DATABASE "${name}"`]);
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    pause() {
      if (running) halt();
      running = false;
    },
    resume() {
      if (!running) start();
      running = true;
    },
    stop() {
      try {
        if (running) halt();
      } finally {
        running = false;
        rmSync(folder, { recursive: true, force: true });
      }
    },
  };
}

/** A server for one describe block, and the pools its tests open (see `teamStoresForTests`). */
export interface TestTeamStores {
  /** A migrated empty team store (a new database), and `nodes` pools on it (each one a node). */
  freshStore(options?: PoolOptions, nodes?: number): Promise<pg.Pool[]>;
  /** A pool on `url`, closed after the tests. */
  pool(url: string, options?: PoolOptions): pg.Pool;
}

/**
 * Started before the describe block's tests and stopped after them, with every pool its tests
 * opened; each database is named `prefix_N`.
 */
export function teamStoresForTests(prefix: string): TestTeamStores {
  let server: TestPostgres | undefined;
  let counter = 0;
  const pools: pg.Pool[] = [];
  before(async () => {
    server = await startPostgres();
  });
  after(async () => {
    await Promise.all(pools.map((pool) => pool.end()));
    server?.stop();
  });
  const pool = (url: string, options: PoolOptions = {}): pg.Pool => {
    const opened = openPool(url, options);
    pools.push(opened);
    return opened;
  };
  return {
    pool,
    async freshStore(options = {}, nodes = 1) {
      const url = server!.createDatabase(`${prefix}_${++counter}`);
      const opened = Array.from({ length: nodes }, () => pool(url, options));
      await migratePostgres(opened[0]!);
      return opened;
    },
  };
}
