import type pg from 'pg';

/** The database's clock in epoch milliseconds, as SQL: one clock for every node, whatever theirs say. */
export const DB_CLOCK_MS = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`;

/** Sets `key` of the state table to `value` (what the personal store's StateStore.set does), in the client's transaction. */
export async function setState(client: pg.PoolClient, key: string, value: string): Promise<void> {
  await client.query('INSERT INTO state (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [key, value]);
}

/**
 * Runs `work` in one transaction on a client of the pool: committed if it returns, rolled back if it
 * throws. `beforeCommit` may finish the transaction's own way: run last statements (a notification)
 * and answer false to roll back what turned out to change nothing.
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
  beforeCommit?: (result: T, client: pg.PoolClient) => Promise<boolean>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query(beforeCommit && !(await beforeCommit(result, client)) ? 'ROLLBACK' : 'COMMIT');
    return result;
  } catch (error) {
    // A client whose rollback fails is in no state to be reused: released with the error, it leaves the pool.
    await client.query('ROLLBACK').catch((rollback: Error) => (broken = rollback));
    throw error;
  } finally {
    client.release(broken);
  }
}
