import pg from 'pg';
import { fromPostgresText } from './text.js';

/** BIGINT and NUMERIC (counts, sums, averages, times in ms) as numbers, as SQLite returns them. */
const NUMBER_TYPES = new Set([pg.types.builtins.INT8, pg.types.builtins.NUMERIC]);
const numericTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    NUMBER_TYPES.has(oid)
      ? (value: string) => Number(value)
      : (pg.types.getTypeParser(oid, format ?? 'text') as (value: string) => unknown)) as pg.CustomTypesConfig['getTypeParser'],
};

/**
 * Runs a query written once with `?` for both stores (the dashboard's, skill credit's) on the team
 * store: numbered parameters, numbers where SQLite has numbers, and text with its U+0000 back (text.ts).
 */
export async function sharedRows<T>(pool: Pick<pg.Pool, 'query'>, sql: string, params: readonly unknown[] = []): Promise<T[]> {
  let index = 0;
  const text = sql.replace(/\?/g, () => `$${++index}`);
  const result = await pool.query({ text, values: [...params], types: numericTypes });
  return result.rows.map((row: Record<string, unknown>) => {
    for (const [key, value] of Object.entries(row)) if (typeof value === 'string') row[key] = fromPostgresText(value);
    return row as T;
  });
}
