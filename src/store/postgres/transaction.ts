import type pg from 'pg';

/** The database's clock in epoch milliseconds, as SQL: one clock for every node, whatever theirs say. */
export const DB_CLOCK_MS = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`;

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
