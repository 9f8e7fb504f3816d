import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import OpenAI from 'openai';
import type pg from 'pg';
import { runCli, startProxy, type ProxyHandle } from './proxy.js';

/** What a team test sets up in its `before`: read when a helper runs, so the helpers can be made at module level. */
export interface TeamTestState {
  url: string;
  seed: string;
  pool: pg.Pool;
}

/**
 * The helpers every multi-node test uses: the environment that points the CLI and the nodes at the
 * test's store, a CLI call that must succeed, a member's OpenAI client on a node, and a query.
 */
export function teamHelpers(state: () => TeamTestState, ownerKey: string, keys: Record<string, string>) {
  const teamEnv = (): Record<string, string> => ({ METACLAW_DATABASE_URL: state().url, METACLAW_PROXY_API_KEY: ownerKey });
  const cli = async (args: string[]): Promise<string> => {
    const result = await runCli(args, { home: state().seed, env: teamEnv() });
    assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
    return result.stdout;
  };
  return {
    teamEnv,
    cli,
    /** Migrates the store and adds members (their keys into `keys`), then starts `count` nodes with `config`. */
    startTeam: async (members: readonly string[], count: number, config: Record<string, unknown>): Promise<ProxyHandle[]> => {
      await cli(['store', 'migrate']);
      for (const name of members) keys[name] = (JSON.parse(await cli(['team', 'add-member', name, '--json'])) as { key: string }).key;
      const nodes: ProxyHandle[] = [];
      for (let index = 0; index < count; index++) nodes.push(await startProxy({ env: teamEnv(), config }));
      return nodes;
    },
    client: (node: ProxyHandle, member: string): OpenAI => new OpenAI({ baseURL: `${node.url}/v1`, apiKey: keys[member], maxRetries: 0 }),
    rows: async <T>(sql: string, params: unknown[] = []): Promise<T[]> => (await state().pool.query(sql, params)).rows as T[],
  };
}

/** Stops what a team test started: its nodes, its pool, the scripted upstream, the database server, the seed home. */
export async function disposeTeam(parts: {
  nodes: readonly ProxyHandle[];
  pool: pg.Pool | undefined;
  upstream: { close(): Promise<void> } | undefined;
  postgres: { stop(): void } | undefined;
  seed: string | undefined;
}): Promise<void> {
  for (const node of parts.nodes) await node.dispose().catch(() => undefined);
  await parts.pool?.end().catch(() => undefined);
  await parts.upstream?.close();
  parts.postgres?.stop();
  if (parts.seed) rmSync(parts.seed, { recursive: true, force: true });
}
