import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Command } from 'commander';
import { DATABASE_URL_VARIABLE, maskDatabaseUrl, type LoadedConfig } from '../config/index.js';
import { evolutionLogFile } from '../skills/history.js';
import { MIGRATIONS, openDatabase, schemaVersion, type Db } from '../store/index.js';
import { isProcessAlive, readPidFile } from '../runtime/pid-file.js';
import { CliExit, loadCliConfig, print } from './context.js';
import { counted } from './plural.js';

/**
 * `metaclaw store …`: the team store (PostgreSQL). The PostgreSQL modules are loaded with
 * a dynamic import inside each action: registering these commands (for `--help` or completion)
 * must not load `pg`.
 */

interface StoreOptions {
  config?: string;
  store?: string;
  json?: boolean;
}

type Postgres = typeof import('../store/postgres/index.js');

export function registerStoreCommands(program: Command): void {
  const group = program.command('store').description('the team store (PostgreSQL): migrate, status, import a personal install');
  const common = (command: Command) =>
    command
      .option('--store <url>', `the team store's postgres:// URL (default: store.url, or ${DATABASE_URL_VARIABLE})`)
      .option('-c, --config <path>', 'config file')
      .option('--json', 'machine-readable output');
  common(group.command('migrate').description("create or bring up to date the team store's schema (safe to run from many nodes at once)")).action(
    async (options: StoreOptions) => migrateCommand(options),
  );
  common(group.command('status').description('the store in use: engine, address (password masked), schema version, reachable, rows per table')).action(
    async (options: StoreOptions) => statusCommand(options),
  );
  common(
    group
      .command('import-sqlite')
      .description("copy a personal install's database (a metaclaw.db file or a METACLAW_HOME folder) into the team store, in one transaction")
      .argument('<path>')
      .option('--merge', 'import into a store that already holds rows: rows whose key is already there are skipped and kept as they are')
      .option('--skills <dir>', "the install's skills folder and its evolution log (default: skills/ beside its metaclaw.db)")
      .option('--no-skills', 'import the database only'),
  ).action(async (path: string, options: ImportCommandOptions) => importCommand(path, options));
}

function loadStoreConfig(options: StoreOptions): LoadedConfig {
  return loadCliConfig({ ...(options.config ? { config: options.config } : {}), overrides: { 'store.url': options.store } });
}

function requireUrl(config: LoadedConfig): string {
  const url = config.values['store.url'];
  if (!url)
    throw new CliExit(
      `No team store is configured: give --store postgres://…, set ${DATABASE_URL_VARIABLE}, or \`metaclaw config set store.url postgres://…\`. (The personal SQLite store needs no migrate: MetaClaw brings it up to date at start.)`,
    );
  return url;
}

/** The CLI's name in the team queue (the queue only writes it on leases, which the CLI never takes). */
export const CLI_INSTANCE = 'metaclaw-cli';

/** Runs `work` on a pool for `url`; any failure becomes one line (password masked) and exit code 1. */
export async function withPool<T>(url: string, work: (postgres: Postgres, pool: import('pg').Pool) => Promise<T>): Promise<T> {
  const postgres = await import('../store/postgres/index.js');
  const pool = postgres.openPool(url);
  try {
    return await work(postgres, pool);
  } catch (error) {
    if (error instanceof CliExit) throw error;
    throw new CliExit(postgres.describeStoreError(error, url));
  } finally {
    await pool.end().catch(() => undefined);
  }
}

/**
 * withPool on a store of this build's schema, for the commands that read and write what the nodes
 * serve: one not migrated (or of another build's schema) is named with what to do, as a node does at
 * start, rather than failing on a missing table (or working on an older schema); nothing is read or changed.
 */
export async function withServedPool<T>(url: string, work: (postgres: Postgres, pool: import('pg').Pool) => Promise<T>): Promise<T> {
  return withPool(url, async (postgres, pool) => {
    const mismatch = postgres.schemaMismatch(await postgres.postgresSchemaVersion(pool), maskDatabaseUrl(url));
    if (mismatch) throw new CliExit(`${mismatch} Nothing was read or changed.`);
    return work(postgres, pool);
  });
}

/** What a command does on each store a node can serve from (see onServedStore). */
export interface ServedStoreWork<T> {
  /** The team store, of this build's schema; `url` unmasked (mask it before showing it). */
  team: (postgres: Postgres, pool: import('pg').Pool, url: string) => Promise<T>;
  /** The install's own database, closed once `personal` settles. */
  personal: (db: Db) => Promise<T>;
}

/**
 * Runs a command on the store the proxy serves from: the team store when store.url (or
 * METACLAW_DATABASE_URL) is set, where every node reads and writes, else the install's own database.
 * The one place that choice is made, so no command works on a store no node reads.
 */
export async function onServedStore<T>(config: LoadedConfig, work: ServedStoreWork<T>): Promise<T> {
  const url = config.values['store.url'];
  if (url) return withServedPool(url, (postgres, pool) => work.team(postgres, pool, url));
  refuseWhileANodeRuns(config);
  const db = openDatabase(config.paths.database);
  try {
    return await work.personal(db);
  } finally {
    db.close();
  }
}

/**
 * No store URL here, but the proxy running from this home is a node of a team store (`start --store
 * URL`): the install's own database is read by no node, so a member added or a memory written there
 * would silently never reach the team. Refused, with the way to name the store.
 */
function refuseWhileANodeRuns(config: LoadedConfig): void {
  const running = readPidFile(config.paths.pidFile);
  if (!running?.store || !isProcessAlive(running.pid)) return;
  throw new CliExit(
    `The proxy running from ${config.home} (pid ${running.pid}) is a node of the team store ${running.store}, and no store URL is set for this command: it would read and change this install's own database, which no node reads. Set ${DATABASE_URL_VARIABLE} (or store.url in config.yaml) to that store's URL; nothing was read or changed.`,
  );
}

async function migrateCommand(options: StoreOptions): Promise<void> {
  const url = requireUrl(loadStoreConfig(options));
  const result = await withPool(url, (postgres, pool) => postgres.migratePostgres(pool));
  if (options.json) return print(JSON.stringify({ url: maskDatabaseUrl(url), from: result.from, to: result.to, applied: result.applied }, null, 2));
  if (result.applied.length === 0) print(`The team store at ${maskDatabaseUrl(url)} is up to date (schema version ${result.to}).`);
  else print(`Migrated the team store at ${maskDatabaseUrl(url)} from schema version ${result.from} to ${result.to}.`);
}

interface StatusReport {
  engine: 'postgresql' | 'sqlite';
  /** The masked URL, or the SQLite file. */
  location: string;
  reachable: boolean;
  schema_version: number | null;
  latest_version: number;
  tables: Record<string, number>;
  /** The team store: whether pgvector is there, and whether memory vectors are stored in it. */
  vector?: { state: 'installed' | 'available' | 'absent'; notice: string };
  error?: string;
}

async function statusCommand(options: StoreOptions): Promise<void> {
  const config = loadStoreConfig(options);
  const url = config.values['store.url'];
  const report = url ? await postgresStatus(url) : sqliteStatus(config);
  if (options.json) print(JSON.stringify(report, null, 2));
  else if (!report.reachable) throw new CliExit(report.error ?? 'The store cannot be read.');
  else printStatus(report);
  if (!report.reachable) throw new CliExit('', 1);
}

async function postgresStatus(url: string): Promise<StatusReport> {
  const postgres = await import('../store/postgres/index.js');
  const base = { engine: 'postgresql' as const, location: maskDatabaseUrl(url), latest_version: MIGRATIONS.at(-1)?.version ?? 0 };
  const pool = postgres.openPool(url);
  try {
    const status = await postgres.readPostgresStatus(pool);
    const { state, notice } = await postgres.readVectorSupport(pool);
    return { ...base, reachable: true, schema_version: status.schemaVersion, vector: { state, notice }, tables: { ...status.tables } };
  } catch (error) {
    return { ...base, reachable: false, schema_version: null, tables: {}, error: postgres.describeStoreError(error, url) };
  } finally {
    await pool.end().catch(() => undefined);
  }
}

/** The personal store, read-only (no migration, nothing created): its version and rows per table. */
function sqliteStatus(config: LoadedConfig): StatusReport {
  const file = config.paths.database;
  const base = { engine: 'sqlite' as const, location: file, latest_version: MIGRATIONS.at(-1)?.version ?? 0 };
  if (!existsSync(file))
    return {
      ...base,
      reachable: false,
      schema_version: null,
      tables: {},
      error: `No personal store at ${file} yet (the proxy creates it when it first starts).`,
    };
  let db;
  try {
    db = openDatabase(file, { readonly: true });
  } catch (error) {
    return { ...base, reachable: false, schema_version: null, tables: {}, error: `Cannot open ${file}: ${(error as Error).message}` };
  }
  try {
    const tables: Record<string, number> = {};
    const names = db
      .prepare<[], { name: string }>(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'memory_fts%' AND name NOT LIKE 'memory_vec%' ORDER BY name",
      )
      .all();
    for (const { name } of names) tables[name] = db.prepare<[], { rows: number }>(`SELECT count(*) AS rows FROM "${name}"`).get()!.rows;
    return { ...base, reachable: true, schema_version: schemaVersion(db), tables };
  } finally {
    db.close();
  }
}

function printStatus(report: StatusReport): void {
  print(`engine      ${report.engine === 'sqlite' ? 'sqlite (the personal store)' : 'postgresql (the team store)'}`);
  print(`store       ${report.location}`);
  print(`reachable   yes`);
  const version = report.schema_version === 0 ? 'none (run `metaclaw store migrate`)' : `version ${report.schema_version}`;
  print(`schema      ${version}; this MetaClaw writes version ${report.latest_version}`);
  if (report.vector) print(`recall      ${report.vector.notice}`);
  const rows = Object.entries(report.tables);
  if (rows.length === 0) return;
  print('rows');
  const width = Math.max(...rows.map(([name]) => name.length));
  for (const [name, count] of rows) print(`  ${name.padEnd(width)}  ${count}`);
}

interface ImportCommandOptions extends StoreOptions {
  merge?: boolean;
  /** The folder, or false with --no-skills. */
  skills?: string | false;
}

async function importCommand(path: string, options: ImportCommandOptions): Promise<void> {
  const url = requireUrl(loadStoreConfig(options));
  if (typeof options.skills === 'string' && !existsSync(options.skills)) throw new CliExit(`No skills folder at ${options.skills}; nothing was imported.`);
  const { result, skills } = await withPool(url, async (postgres, pool) => {
    // The install's skills folder: its evolution log goes with the tables, its skills after them.
    const folder = options.skills === false ? undefined : (options.skills ?? join(dirname(postgres.resolveSqlitePath(path)), 'skills'));
    const result = await postgres.importSqlite(pool, path, { merge: options.merge ?? false, ...(folder ? { evolutionLog: evolutionLogFile(folder) } : {}) });
    // The skills in a transaction of their own: a skill already there is kept as it is.
    const skills =
      folder && existsSync(folder)
        ? { folder, ...(await new postgres.PgSkillStore(pool).importFolder(folder, { source: 'import-sqlite', moving: true })) }
        : undefined;
    return { result, skills };
  });
  if (options.json) return print(JSON.stringify({ url: maskDatabaseUrl(url), ...result, skills: skills ?? null }, null, 2));
  const read = result.tables.reduce((sum, table) => sum + table.read, 0);
  const inserted = result.tables.reduce((sum, table) => sum + table.inserted, 0);
  print(`Imported ${result.source} (schema version ${result.sourceVersion}) into ${maskDatabaseUrl(url)}: ${inserted} of ${read} rows.`);
  for (const table of result.tables) {
    if (table.read === 0) continue;
    const skipped = table.read - table.inserted;
    print(`  ${table.table.padEnd(20)} ${table.inserted}${skipped > 0 ? ` (${skipped} already there, skipped)` : ''}`);
  }
  print(`Memory keyword index: ${counted(result.memoryIndexed, 'unit')} indexed.`);
  if (!skills) print(options.skills === false ? 'Skills: not imported (--no-skills).' : 'Skills: no skills folder beside the database (give --skills DIR).');
  else {
    const same = skills.unchanged.length > 0 ? `, ${skills.unchanged.length} already in the team store as they are` : '';
    print(`Skills from ${skills.folder}: ${skills.imported.length} imported${same}.`);
    for (const skipped of skills.skipped) print(`  skipped ${skipped.path}: ${skipped.reason}`);
  }
}
