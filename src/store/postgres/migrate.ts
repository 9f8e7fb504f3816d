import type pg from 'pg';
import { StoreError } from '../../errors.js';
import { MIGRATIONS, type Migration } from '../migrations.js';
import { POSTGRES_PGVECTOR_V23 } from '../postgres-schema.js';

/**
 * Brings a PostgreSQL team store's schema up to date from the one migration list (each entry's
 * `postgres` text). Every node may run this at start: one transaction holds a transaction-level
 * advisory lock, so two nodes migrating at once run one after the other and the second finds
 * nothing left to do. A schema newer than this build is refused, never downgraded.
 */

/** Applied versions, one row each (PostgreSQL's counterpart of SQLite's `PRAGMA user_version`). */
export const MIGRATIONS_TABLE = 'metaclaw_schema_migrations';

/** The migration that creates pgvector when it can (re-run by later migrations: see POSTGRES_PGVECTOR_V23). */
const PGVECTOR_VERSION = 23;

/** The advisory lock key every MetaClaw node migrates under ('mcmg' in ASCII). */
const MIGRATION_LOCK = 0x6d636d67;

export interface MigrateResult {
  readonly from: number;
  readonly to: number;
  readonly applied: readonly number[];
}

export async function migratePostgres(pool: pg.Pool, migrations: readonly Migration[] = MIGRATIONS): Promise<MigrateResult> {
  const latest = migrations.at(-1)?.version ?? 0;
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
    );
    const from = await readVersion(client);
    refuseNewer(from, latest);
    const applied: number[] = [];
    for (const migration of migrations) {
      if (migration.version <= from) continue;
      // Simple query protocol (no parameters): a migration may hold many statements.
      if (migration.postgres.trim() !== '') await client.query(migration.postgres);
      await client.query(`INSERT INTO ${MIGRATIONS_TABLE} (version, description) VALUES ($1, $2)`, [migration.version, migration.description]);
      applied.push(migration.version);
    }
    // pgvector may have come to the server since version 23 ran: try again (a no-op once it is installed).
    if (from >= PGVECTOR_VERSION && latest >= PGVECTOR_VERSION) await client.query(POSTGRES_PGVECTOR_V23);
    await client.query('COMMIT');
    return { from, to: Math.max(from, latest), applied };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** The store's schema version: 0 when it was never migrated. */
export async function postgresSchemaVersion(client: pg.Pool | pg.PoolClient): Promise<number> {
  const exists = await client.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [MIGRATIONS_TABLE]);
  if (!exists.rows[0]?.present) return 0;
  return readVersion(client);
}

/**
 * Why this build cannot work on a store of schema `version` at `where` (its masked address), or
 * undefined when the schema is this build's: a node refuses to start on it, and so does every
 * `metaclaw memory` command (its queries failed with "relation … does not exist", or ran on an older schema).
 */
export function schemaMismatch(version: number, where: string, latest = MIGRATIONS.at(-1)?.version ?? 0): string | undefined {
  if (version === latest) return undefined;
  return version < latest
    ? `The team store at ${where} has schema version ${version}; this MetaClaw needs ${latest}. Run \`metaclaw store migrate\` first.`
    : `The team store at ${where} has schema version ${version}, newer than this MetaClaw (${latest}); upgrade MetaClaw.`;
}

async function readVersion(client: pg.Pool | pg.PoolClient): Promise<number> {
  const result = await client.query<{ version: number | null }>(`SELECT max(version) AS version FROM ${MIGRATIONS_TABLE}`);
  return result.rows[0]?.version ?? 0;
}

function refuseNewer(version: number, latest: number): void {
  if (version > latest) {
    throw new StoreError(
      `The team store's schema (version ${version}) is newer than this MetaClaw (knows up to ${latest}); upgrade MetaClaw.`,
      'schema_too_new',
    );
  }
}
