/**
 * A pgvector-capable PostgreSQL for tests without one installed: PGlite (PostgreSQL compiled to
 * WASM, in this process) with its pgvector extension, served on a local port by pglite-socket, so
 * the code under test talks to it through `pg` as to any server. PGlite is one session; the relay
 * in front of it (support/pglite-sessions.ts) runs one connection's exchange (a transaction whole)
 * at a time, gives each connection its own prepared statements and routes NOTIFY to the
 * connections that LISTEN, so pools, listeners and whole nodes work on it. Still one session:
 * transactions run one after another, settings are shared, advisory locks never exclude; tests
 * that need those use the real PostgreSQL (support/postgres.ts).
 */
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { openPool } from '../../src/store/postgres/index.js';
import { startSessionRelay } from './pglite-sessions.js';
import { tempHome } from './proxy.js';
import type { TeamTestState } from './team.js';

export interface TestPglite {
  /** `postgres://postgres@127.0.0.1:PORT/postgres` */
  readonly url: string;
  stop(): Promise<void>;
}

export async function startPglite(): Promise<TestPglite> {
  const db = await PGlite.create({ extensions: { vector } });
  const server = new PGLiteSocketServer({ db, port: 0, maxConnections: 64 });
  await server.start();
  const [host, port] = server.getServerConn().split(':');
  const relay = await startSessionRelay({ host: host!, port: Number(port) });
  return {
    url: `postgres://postgres@127.0.0.1:${relay.port}/postgres`,
    async stop() {
      await relay.close();
      await server.stop();
      await db.close();
    },
  };
}

/**
 * A team test's store on PGlite: starts the server and fills `state` (what teamHelpers reads) with
 * its URL, a pool of one connection (PGlite runs one statement at a time) and a seed home.
 */
export async function startPgliteTeam(state: TeamTestState, seedPrefix: string): Promise<TestPglite> {
  const server = await startPglite();
  state.url = server.url;
  state.pool = openPool(server.url, { max: 1 });
  state.pool.on('error', () => undefined);
  state.seed = tempHome(seedPrefix);
  return server;
}
