import type pg from 'pg';
import { MIGRATIONS } from '../migrations.js';
import { postgresSchemaVersion } from './migrate.js';
import { TEAM_ONLY_TABLES, TEAM_TABLES } from './tables.js';

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
    // A team-only table a later version added is counted once the store has it.
    const present = new Set(
      (await pool.query<{ name: string }>('SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()')).rows.map(
        (row) => row.name,
      ),
    );
    const names = [...TEAM_TABLES.map((table) => table.name), ...TEAM_ONLY_TABLES.filter((name) => present.has(name))];
    const counts = names.map((name) => `SELECT '${name}' AS name, count(*) AS rows FROM ${name}`).join(' UNION ALL ');
    const result = await pool.query<{ name: string; rows: string }>(counts);
    const byName = new Map(result.rows.map((row) => [row.name, Number(row.rows)]));
    for (const name of names) tables[name] = byName.get(name) ?? 0;
  }
  return { schemaVersion, latestVersion: MIGRATIONS.at(-1)?.version ?? 0, tables };
}
