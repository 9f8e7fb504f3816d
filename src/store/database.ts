import Database from 'better-sqlite3';
import { StoreError } from '../errors.js';
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { MIGRATIONS, type Migration } from './migrations.js';

export type Db = Database.Database;

export interface OpenOptions {
  readonly migrations?: readonly Migration[];
  readonly readonly?: boolean;
  /** How long a write waits for another connection's lock once the schema is up to date (default 5 s). */
  readonly busyTimeoutMs?: number;
}

/**
 * Opens the database in WAL mode and brings its schema up to date. The file holds conversations,
 * so it is created with mode 0600. A database newer than this build is refused, never downgraded.
 */
export function openDatabase(path: string, options: OpenOptions = {}): Db {
  const migrations = options.migrations ?? MIGRATIONS;
  const isNew = path !== ':memory:' && !existsSync(path);
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path, options.readonly ? { readonly: true, fileMustExist: true } : {});
  if (isNew) chmodSync(path, 0o600);
  db.pragma('busy_timeout = 5000');
  if (options.readonly) return db;
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  // When the WAL restarts after a checkpoint has caught up, its file is cut back to 16 MB.
  db.pragma('journal_size_limit = 16777216');
  db.pragma('foreign_keys = ON');
  // Deleted rows are overwritten with zeros: a forgotten memory must not linger in free pages.
  db.pragma('secure_delete = ON');
  migrate(db, migrations);
  if (options.busyTimeoutMs !== undefined) db.pragma(`busy_timeout = ${Math.max(0, Math.round(options.busyTimeoutMs))}`);
  return db;
}

export function schemaVersion(db: Db): number {
  return db.pragma('user_version', { simple: true }) as number;
}

export function migrate(db: Db, migrations: readonly Migration[]): void {
  const current = schemaVersion(db);
  const latest = migrations.at(-1)?.version ?? 0;
  if (current > latest) {
    throw new StoreError(`The database schema (version ${current}) is newer than this MetaClaw (knows up to ${latest}); upgrade MetaClaw.`, 'schema_too_new');
  }
  for (const migration of migrations) {
    if (migration.version <= current) continue;
    db.transaction(() => {
      // A migration that only changes PostgreSQL (the team store) still moves the version on.
      if (migration.sql.trim() !== '') db.exec(migration.sql);
      db.pragma(`user_version = ${migration.version}`);
    })();
  }
}

/** Integrity check used by `metaclaw doctor`: "ok" or the first problems SQLite reports. */
export function checkIntegrity(db: Db): string[] {
  const rows = db.pragma('integrity_check') as Array<{ integrity_check: string }>;
  return rows.map((row) => row.integrity_check);
}
