import type pg from 'pg';
import { MIGRATIONS } from '../migrations.js';
import { postgresSchemaVersion } from './migrate.js';
import { TEAM_TABLES } from './tables.js';

export interface PostgresStatus {
  readonly schemaVersion: number;
  readonly latestVersion: number;
  /** Rows per table; empty before the first migrate. */
  readonly tables: Readonly<Record<string, number>>;
}

/** The store's schema version and the rows of each of its tables (a count each: for an operator, not the request path). */
export async function readPostgresStatus(pool: pg.Pool): Promise<PostgresStatus> {
  const schemaVersion = await postgresSchemaVersion(pool);
  const tables: Record<string, number> = {};
  if (schemaVersion > 0) {
    const counts = TEAM_TABLES.map((table) => `SELECT '${table.name}' AS name, count(*) AS rows FROM ${table.name}`).join(' UNION ALL ');
    const result = await pool.query<{ name: string; rows: string }>(counts);
    const byName = new Map(result.rows.map((row) => [row.name, Number(row.rows)]));
    for (const table of TEAM_TABLES) tables[table.name] = byName.get(table.name) ?? 0;
  }
  return { schemaVersion, latestVersion: MIGRATIONS.at(-1)?.version ?? 0, tables };
}
