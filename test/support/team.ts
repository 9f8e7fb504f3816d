import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before } from 'node:test';
import OpenAI from 'openai';
import type pg from 'pg';
import { openPool } from '../../src/store/postgres/index.js';
import { sendJson } from './http.js';
import { postgresSkip, startPostgres, type TestPostgres } from './postgres.js';
import { runCli, startProxy, tempHome, type ProxyHandle } from './proxy.js';
import { ScriptedUpstream } from './upstream.js';

/** A node's team-memory recall counts from `/status`: requests, and those that timed out or failed. */
export interface MemoryRecallCounts {
  requests: number;
  timeouts: number;
  failures: number;
}

/** What a team test sets up in its `before`: read when a helper runs, so the helpers can be made at module level. */
export interface TeamTestState {
  url: string;
  seed: string;
  pool: pg.Pool;
}

/**
 * The helpers every multi-node test uses: the environment that points the CLI and the nodes at the
 * test's store, a CLI call that must succeed, a member's OpenAI client on a node, a query, and a
 * node's recall counts.
 */
export function teamHelpers(state: () => TeamTestState, ownerKey: string, keys: Record<string, string>) {
  const teamEnv = (): Record<string, string> => ({ METACLAW_DATABASE_URL: state().url, METACLAW_PROXY_API_KEY: ownerKey });
  const cli = async (args: string[]): Promise<string> => {
    const result = await runCli(args, { home: state().seed, env: teamEnv() });
    assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
    return result.stdout;
  };
  /** Adds members with `metaclaw team add-member`, their keys into `keys`. */
  const addMembers = async (members: readonly string[]): Promise<void> => {
    for (const name of members) keys[name] = (JSON.parse(await cli(['team', 'add-member', name, '--json'])) as { key: string }).key;
  };
  /** Starts `count` nodes on the store with `config`, one after the other. */
  const startNodes = async (count: number, config: Record<string, unknown>): Promise<ProxyHandle[]> => {
    const nodes: ProxyHandle[] = [];
    for (let index = 0; index < count; index++) nodes.push(await startProxy({ env: teamEnv(), config }));
    return nodes;
  };
  return {
    teamEnv,
    cli,
    addMembers,
    startNodes,
    /** Migrates the store and adds members, then starts `count` nodes with `config`. */
    startTeam: async (members: readonly string[], count: number, config: Record<string, unknown>): Promise<ProxyHandle[]> => {
      await cli(['store', 'migrate']);
      await addMembers(members);
      return startNodes(count, config);
    },
    client: (node: ProxyHandle, member: string): OpenAI => new OpenAI({ baseURL: `${node.url}/v1`, apiKey: keys[member], maxRetries: 0 }),
    rows: async <T>(sql: string, params: unknown[] = []): Promise<T[]> => (await state().pool.query(sql, params)).rows as T[],
    /** The node's recall counts, read from `/status` with the owner's key. */
    memoryCounts: async (node: ProxyHandle): Promise<MemoryRecallCounts> =>
      (await sendJson(`${node.url}/status`, 'GET', { headers: { authorization: `Bearer ${ownerKey}` } })).body.memory as MemoryRecallCounts,
  };
}

/** Stops what a team test started: its nodes, its pool, the scripted upstream, the database server, the seed home. */
export async function disposeTeam(parts: {
  nodes: readonly ProxyHandle[];
  pool?: pg.Pool | undefined;
  upstream?: { close(): Promise<void> } | undefined;
  postgres?: { stop(): void } | undefined;
  seed?: string | undefined;
}): Promise<void> {
  for (const node of parts.nodes) await node.dispose().catch(() => undefined);
  await parts.pool?.end().catch(() => undefined);
  await parts.upstream?.close();
  parts.postgres?.stop();
  if (parts.seed) rmSync(parts.seed, { recursive: true, force: true });
}

/** What `teamForTests` holds while a team test runs; read it in hooks and tests, not at module load. */
export interface TeamForTests extends TeamTestState {
  readonly postgres: TestPostgres;
  readonly upstream: ScriptedUpstream;
  /** The nodes the test starts: stopped after its tests. */
  readonly nodes: ProxyHandle[];
  /** Runs `close` once the team is stopped: for a server its nodes may call until then (a Tinker double, a teacher). */
  closeAfter(close: () => Promise<void>): void;
}

/**
 * The setup every multi-node test shares, in hooks registered where this is called (at module level
 * the file's own `before` hooks run after it): a throwaway PostgreSQL with an empty database
 * `database` (not migrated: a test migrates it with the CLI), a pool on it, a scripted upstream and a
 * seed home. After the tests it stops the nodes pushed onto `nodes`, then all the rest. Without
 * PostgreSQL it starts nothing, as the test's describe block is skipped (`postgresSkip`).
 */
export function teamForTests(database: string): TeamForTests {
  const held: { postgres?: TestPostgres; url?: string; pool?: pg.Pool; upstream?: ScriptedUpstream; seed?: string } = {};
  const nodes: ProxyHandle[] = [];
  const closers: Array<() => Promise<void>> = [];
  before(async () => {
    if (postgresSkip()) return;
    held.postgres = await startPostgres();
    held.url = held.postgres.createDatabase(database);
    held.pool = openPool(held.url, { max: 2 });
    held.upstream = await ScriptedUpstream.start();
    held.seed = tempHome(`metaclaw-${database.replaceAll('_', '-')}-seed-`);
  });
  after(async () => {
    await disposeTeam({ nodes, ...held });
    for (const close of closers) await close();
  });
  const read = <K extends keyof typeof held>(key: K): NonNullable<(typeof held)[K]> => {
    const value = held[key];
    if (value === undefined) throw new Error(`${database}: the team test's ${key} is read before its before hook ran`);
    return value;
  };
  return {
    get postgres() {
      return read('postgres');
    },
    get url() {
      return read('url');
    },
    get pool() {
      return read('pool');
    },
    get upstream() {
      return read('upstream');
    },
    get seed() {
      return read('seed');
    },
    nodes,
    closeAfter: (close) => void closers.push(close),
  };
}
