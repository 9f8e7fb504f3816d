/**
 * A pgvector-capable PostgreSQL for tests without one installed: PGlite (PostgreSQL compiled to
 * WASM, in this process) with its pgvector extension, served on a local port by pglite-socket, so
 * the code under test talks to it through `pg` as to any server. PGlite is one session: the socket
 * server multiplexes clients onto it, running one client's statements at a time and a transaction's
 * to its end before another's. That is enough for a store's SQL, pools included; it is not a
 * server of many sessions (NOTIFY is not delivered to LISTEN-ing clients, session settings are
 * shared, and so are named prepared statements: a second connection preparing the keyword search's
 * statements fails), so a test runs searches on one connection at a time, and tests that need the
 * rest use the real PostgreSQL (support/postgres.ts).
 */
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

export interface TestPglite {
  /** `postgres://postgres@127.0.0.1:PORT/postgres` */
  readonly url: string;
  stop(): Promise<void>;
}

export async function startPglite(): Promise<TestPglite> {
  const db = await PGlite.create({ extensions: { vector } });
  const server = new PGLiteSocketServer({ db, port: 0, maxConnections: 64 });
  await server.start();
  return {
    url: `postgres://postgres@${server.getServerConn()}/postgres`,
    async stop() {
      await server.stop();
      await db.close();
    },
  };
}

/** Drops the one session's named prepared statements, after the connection that prepared them is gone, so another may prepare them. */
export async function forgetPreparedStatements(db: { query(sql: string): Promise<unknown> }): Promise<void> {
  await db.query('DEALLOCATE ALL');
}
