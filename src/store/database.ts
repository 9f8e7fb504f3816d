import Database from 'better-sqlite3';
import { StoreError } from '../errors.js';
import { chmodSync, existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { MIGRATIONS, type Migration } from './migrations.js';
import { makeFolders } from '../shared/make-folders.js';

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
  // The folders it makes are private like the file (the first `memory add` creates $METACLAW_HOME).
  if (path !== ':memory:') makeFolders(dirname(path), 0o700);
  let db: Db | undefined;
  try {
    db = new Database(path, options.readonly ? { readonly: true, fileMustExist: true } : {});
    if (isNew) chmodSync(path, 0o600);
    return configure(db, migrations, options, path);
  } catch (error) {
    db?.close();
    throw unusableDatabase(error, path) ?? error;
  }
}

function configure(db: Db, migrations: readonly Migration[], options: OpenOptions, path: string): Db {
  db.pragma('busy_timeout = 5000');
  if (options.readonly) return db;
  const what = path === ':memory:' ? 'The database' : `The database ${path}`;
  // Refused before any pragma writes to it: switching a newer version's file to WAL would change it.
  refuseNewerSchema(db, migrations, what);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  // When the WAL restarts after a checkpoint has caught up, its file is cut back to 16 MB.
  db.pragma('journal_size_limit = 16777216');
  db.pragma('foreign_keys = ON');
  // Deleted rows are overwritten with zeros: a forgotten memory must not linger in free pages.
  db.pragma('secure_delete = ON');
  migrate(db, migrations, what);
  if (options.busyTimeoutMs !== undefined) db.pragma(`busy_timeout = ${Math.max(0, Math.round(options.busyTimeoutMs))}`);
  return db;
}

/** SQLite's codes for a database file that cannot be used as it is, with what the user can do about it. */
const UNUSABLE: ReadonlyArray<readonly [code: string, fix: string]> = [
  ['SQLITE_NOTADB', 'move it aside to start afresh, or put a backup in its place'],
  ['SQLITE_CORRUPT', 'stop MetaClaw, back it up, then recover it with `sqlite3 FILE .recover` (see `metaclaw doctor`)'],
  ['SQLITE_CANTOPEN', 'check that its folder exists and that you may read and write both'],
  ['SQLITE_READONLY', 'MetaClaw needs to write the file and its folder'],
  ['SQLITE_PERM', 'check who owns the file and its folder'],
  ['SQLITE_IOERR', 'the disk reported an error: check the device and its free space'],
];

/**
 * An error opening the database that the user must fix (a file that is not a database, a folder
 * MetaClaw may not write) as a StoreError naming the file, so every command says so in one line
 * instead of a stack trace. Other errors (SQLITE_BUSY, bugs) are left as they are.
 */
function unusableDatabase(error: unknown, path: string): StoreError | undefined {
  const driver = unbuiltDriver(error);
  if (driver) return driver;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return undefined;
  const fix = UNUSABLE.find(([prefix]) => code.startsWith(prefix))?.[1];
  if (fix === undefined) return undefined;
  return new StoreError(`MetaClaw's database ${path} cannot be opened: ${(error as Error).message}; ${fix.replace('FILE', path)}.`, 'database_unusable', {
    cause: error,
  });
}

/** What to run when the SQLite driver's native module is missing or was built for another Node. */
export const REBUILD_DRIVER_FIX =
  "run `npm rebuild better-sqlite3` in MetaClaw's folder (npm 12 and later skip a dependency's install script unless package.json's allowScripts lists it: this checkout's does, a global install needs `--allow-scripts=better-sqlite3`)";

/**
 * better-sqlite3 loads its compiled module on first use. When its install script never ran (npm 12
 * blocks unlisted ones) or it was built for another Node, every command would end in a stack trace
 * about bindings files: say instead what is wrong and how to fix it.
 */
function unbuiltDriver(error: unknown): StoreError | undefined {
  const message = error instanceof Error ? error.message : '';
  const missing = message.startsWith('Could not locate the bindings file');
  const otherNode = (error as { code?: unknown }).code === 'ERR_DLOPEN_FAILED' || /NODE_MODULE_VERSION/.test(message);
  if (!missing && !otherNode) return undefined;
  const what = missing ? 'is not built' : `was built for another Node than this one (${process.version})`;
  return new StoreError(`The SQLite driver better-sqlite3 ${what}; ${REBUILD_DRIVER_FIX}.`, 'sqlite_driver_unbuilt', { cause: error });
}

export function schemaVersion(db: Db): number {
  return db.pragma('user_version', { simple: true }) as number;
}

function refuseNewerSchema(db: Db, migrations: readonly Migration[], what: string): void {
  const current = schemaVersion(db);
  const latest = migrations.at(-1)?.version ?? 0;
  if (current > latest) {
    throw new StoreError(`${what} has schema version ${current}, newer than this MetaClaw (knows up to ${latest}); upgrade MetaClaw.`, 'schema_too_new');
  }
}

export function migrate(db: Db, migrations: readonly Migration[], what = 'The database'): void {
  refuseNewerSchema(db, migrations, what);
  for (const migration of migrations) {
    if (migration.version <= schemaVersion(db)) continue;
    // Several processes may open one database at once (the proxy and an MCP server per editor
    // session, on a first run or after an upgrade). The write lock is taken first and the version
    // read again under it: a migration another process applied meanwhile is not run twice.
    db.transaction(() => {
      if (migration.version <= schemaVersion(db)) return;
      // A migration that only changes PostgreSQL (the team store) still moves the version on.
      if (migration.sql.trim() !== '') db.exec(migration.sql);
      db.pragma(`user_version = ${migration.version}`);
    }).immediate();
  }
}

/** Integrity check used by `metaclaw doctor`: "ok" or the first problems SQLite reports. */
export function checkIntegrity(db: Db): string[] {
  const rows = db.pragma('integrity_check') as Array<{ integrity_check: string }>;
  return rows.map((row) => row.integrity_check);
}
