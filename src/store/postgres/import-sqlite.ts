import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';
import * as sqliteVec from 'sqlite-vec';
import { StoreError } from '../../errors.js';
import { openDatabase, schemaVersion, type Db } from '../database.js';
import { MIGRATIONS } from '../migrations.js';
import { indexImportedMemories } from './import-memory-index.js';
import { migratePostgres } from './migrate.js';
import { PgSkillEvolutions } from './skill-evolutions.js';
import { TEAM_TABLES, type TeamTable } from './tables.js';
import { toPostgresText } from './text.js';

/**
 * Copies a personal install's SQLite database into the team store: every table (the FTS5 index,
 * derived, is left out), in dependency order, in one PostgreSQL transaction, in batches. The SQLite
 * file is opened read-only and read in one read transaction, so a proxy still writing to it cannot
 * make the copy mix two moments. Ids are kept (rows copy 1:1); identity sequences move past them.
 *
 * Into a store that already holds rows the import is refused, unless `merge`: then a row whose
 * primary key (or another unique key) is already there is skipped and left as it is. Merge is for
 * importing the same database again after it grew; two different installs share numeric ids
 * (jobs, skill versions, memory units start at 1 in each), so the second one's rows with those ids
 * would be skipped: the result counts them so it shows.
 */

export interface ImportOptions {
  readonly merge?: boolean;
  /** The install's evolution_history.jsonl, imported into skill_evolutions (a missing file: nothing). */
  readonly evolutionLog?: string;
  /** Rows per INSERT (fewer when a table has many columns: PostgreSQL takes at most 65,535 parameters). */
  readonly batchRows?: number;
}

export interface TableImport {
  readonly table: string;
  /** Rows read from SQLite. */
  readonly read: number;
  /** Rows inserted; read - inserted were already there (merge). */
  readonly inserted: number;
}

export interface ImportResult {
  readonly source: string;
  readonly sourceVersion: number;
  readonly tables: readonly TableImport[];
  /** Memory units given an entry in the team store's keyword index. */
  readonly memoryIndexed: number;
}

/** Largest batch by size: a body of turn payloads can be megabytes. */
const BATCH_BYTES = 8 * 1024 * 1024;
const MAX_PARAMETERS = 60_000;
/** Imports into one store run one after the other ('mcim' in ASCII). */
const IMPORT_LOCK = 0x6d63696d;

/** PATH: a metaclaw.db file, or a METACLAW_HOME folder holding one. */
export function resolveSqlitePath(path: string): string {
  const file = existsSync(path) && statSync(path).isDirectory() ? join(path, 'metaclaw.db') : path;
  if (!existsSync(file)) throw new StoreError(`No MetaClaw database at ${file}.`, 'not_found');
  return file;
}

export async function importSqlite(pool: pg.Pool, path: string, options: ImportOptions = {}): Promise<ImportResult> {
  const source = resolveSqlitePath(path);
  const sqlite = openSource(source);
  try {
    const sourceVersion = checkSourceVersion(sqlite, source);
    await migratePostgres(pool);
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1)', [IMPORT_LOCK]);
      if (!options.merge) await refuseNonEmpty(client);
      const columns = await postgresColumns(client);
      sqlite.exec('BEGIN'); // one snapshot of the SQLite file for every table
      const tables: TableImport[] = [];
      for (const table of TEAM_TABLES) tables.push(await copyTable(sqlite, client, table, columns, options));
      if (options.evolutionLog) tables.push(await importEvolutionLog(client, options.evolutionLog));
      const memoryIndexed = await indexImportedMemories(sqlite, pool, client);
      sqlite.exec('COMMIT');
      await client.query('COMMIT');
      return { source, sourceVersion, tables, memoryIndexed };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  } finally {
    sqlite.close();
  }
}

/**
 * The install's evolution log into skill_evolutions, where `skills log` on the team reads it: each
 * line that is a JSON object, in the file's order, its `timestamp` kept as the row's time (the
 * import's time when it has none). A line already logged word for word is skipped, so importing
 * again (--merge) adds only the lines written since.
 */
async function importEvolutionLog(client: pg.PoolClient, file: string): Promise<TableImport> {
  const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n') : [];
  const events = lines
    .map((line) => line.trim())
    .flatMap((line) => {
      const event = jsonObject(line);
      if (!event) return [];
      const at = typeof event['timestamp'] === 'string' ? Date.parse(event['timestamp']) : Number.NaN;
      return [{ line, sessionId: typeof event['session_id'] === 'string' ? event['session_id'] : '', at: Number.isFinite(at) ? at : Date.now() }];
    });
  let inserted = 0;
  for (let start = 0; start < events.length; start += EVOLUTIONS_PER_INSERT)
    inserted += await PgSkillEvolutions.insertNew(client, events.slice(start, start + EVOLUTIONS_PER_INSERT));
  return { table: 'skill_evolutions', read: events.length, inserted };
}

const EVOLUTIONS_PER_INSERT = 1_000;

function jsonObject(line: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function openSource(file: string): Db {
  try {
    return openDatabase(file, { readonly: true });
  } catch (error) {
    throw new StoreError(`Cannot open ${file} read-only: ${(error as Error).message}`, 'not_readable');
  }
}

/** The SQLite schema must be the one the tables here mirror: the last version with SQLite DDL, or later. */
function checkSourceVersion(sqlite: Db, file: string): number {
  const version = schemaVersion(sqlite);
  const latest = MIGRATIONS.at(-1)?.version ?? 0;
  const lastSqliteChange = Math.max(...MIGRATIONS.filter((migration) => migration.sql.trim() !== '').map((migration) => migration.version));
  if (version > latest)
    throw new StoreError(`${file} has schema version ${version}, newer than this MetaClaw (knows up to ${latest}); upgrade MetaClaw.`, 'schema_too_new');
  if (version < lastSqliteChange)
    throw new StoreError(
      `${file} has schema version ${version}, older than this MetaClaw's (${latest}): start this MetaClaw once on that home (or run \`metaclaw doctor\` there) to upgrade it, then import.`,
      'schema_too_old',
    );
  return version;
}

async function refuseNonEmpty(client: pg.PoolClient): Promise<void> {
  const checks = TEAM_TABLES.map((table) => `SELECT '${table.name}' AS name WHERE EXISTS (SELECT 1 FROM ${table.name})`).join(' UNION ALL ');
  const result = await client.query<{ name: string }>(checks);
  if (result.rows.length > 0) {
    const names = result.rows.map((row) => row.name).join(', ');
    throw new StoreError(
      `The team store already holds rows (${names}); nothing was imported. Add --merge to keep them and skip imported rows whose key is already there.`,
      'store_not_empty',
    );
  }
}

async function postgresColumns(client: pg.PoolClient): Promise<Map<string, Set<string>>> {
  const result = await client.query<{ table_name: string; column_name: string }>(
    'SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()',
  );
  const columns = new Map<string, Set<string>>();
  for (const row of result.rows) {
    const set = columns.get(row.table_name) ?? new Set<string>();
    set.add(row.column_name);
    columns.set(row.table_name, set);
  }
  return columns;
}

async function copyTable(
  sqlite: Db,
  client: pg.PoolClient,
  table: TeamTable,
  targetColumns: Map<string, Set<string>>,
  options: ImportOptions,
): Promise<TableImport> {
  const rows = sourceRows(sqlite, table);
  if (!rows) return { table: table.name, read: 0, inserted: 0 };
  const target = targetColumns.get(table.name) ?? new Set<string>();
  const missing = rows.columns.filter((column) => !target.has(column));
  if (missing.length > 0)
    throw new StoreError(`The team store's ${table.name} has no column ${missing.join(', ')}: the schemas differ; nothing was imported.`, 'schema_mismatch');

  const columnList = rows.columns.map((column) => `"${column}"`).join(', ');
  const perBatch = Math.max(1, Math.min(options.batchRows ?? 500, Math.floor(MAX_PARAMETERS / rows.columns.length)));
  let read = 0;
  let inserted = 0;
  let batch: unknown[][] = [];
  let bytes = 0;
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    const width = rows.columns.length;
    const tuples = batch.map((_, row) => `(${rows.columns.map((__, column) => `$${row * width + column + 1}`).join(', ')})`).join(', ');
    const sql = `INSERT INTO ${table.name} (${columnList}) VALUES ${tuples}${options.merge ? ' ON CONFLICT DO NOTHING' : ''}`;
    const result = await client.query(sql, batch.flat());
    inserted += result.rowCount ?? 0;
    batch = [];
    bytes = 0;
  };
  for (const values of rows.iterate()) {
    read++;
    batch.push(values);
    bytes += values.reduce<number>((sum, value) => sum + sizeOf(value), 0);
    if (batch.length >= perBatch || bytes >= BATCH_BYTES) await flush();
  }
  await flush();
  if (table.identity) {
    await client.query(
      `SELECT setval(pg_get_serial_sequence('${table.name}', '${table.identity}'), COALESCE((SELECT max(${table.identity}) FROM ${table.name}), 0) + 1, false)`,
    );
  }
  return { table: table.name, read, inserted };
}

interface SourceRows {
  readonly columns: readonly string[];
  iterate(): IterableIterator<unknown[]>;
}

/** The SQLite rows of a team table, as positional values ready for PostgreSQL; undefined when the install never made that table. */
function sourceRows(sqlite: Db, table: TeamTable): SourceRows | undefined {
  if (table.from === 'memory_vec') return memoryVectorRows(sqlite);
  if (!tableExists(sqlite, table.name)) return undefined;
  const statement = sqlite.prepare(`SELECT * FROM "${table.name}"`).raw(true).safeIntegers(true);
  const columns = statement.columns().map((column) => column.name);
  return { columns, iterate: () => mapRows(statement.iterate() as IterableIterator<unknown[]>, (row) => row.map(toPostgres)) };
}

/**
 * SQLite keeps memory vectors in a sqlite-vec table (made by the proxy once a first vector gave the
 * dimension) with memory_vec_index naming each one's unit and scope; here they are one row each,
 * the vector as a float4[]. Only vectors of units that exist are copied (the foreign key).
 */
function memoryVectorRows(sqlite: Db): SourceRows | undefined {
  if (!tableExists(sqlite, 'memory_vec') || !tableExists(sqlite, 'memory_vec_index')) return undefined;
  sqliteVec.load(sqlite);
  const statement = sqlite
    .prepare('SELECT i.rowid, i.scope, v.embedding FROM memory_vec_index i JOIN memory_vec v ON v.rowid = i.rowid JOIN memory_units u ON u.rowid = i.rowid')
    .raw(true)
    .safeIntegers(true);
  return {
    columns: ['rowid', 'scope', 'embedding'],
    iterate: () =>
      mapRows(statement.iterate() as IterableIterator<unknown[]>, ([rowid, scope, embedding]) => [
        toPostgres(rowid),
        scope,
        Array.from(floats(embedding as Buffer)),
      ]),
  };
}

function* mapRows(rows: IterableIterator<unknown[]>, map: (row: unknown[]) => unknown[]): IterableIterator<unknown[]> {
  for (const row of rows) yield map(row);
}

function tableExists(sqlite: Db, name: string): boolean {
  return sqlite.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
}

/**
 * Integers come as bigint (exact past 2^53) and go as text, which PostgreSQL reads into any numeric
 * column; text gets its U+0000 stand-in (text.ts).
 */
function toPostgres(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  return typeof value === 'string' ? toPostgresText(value) : value;
}

function floats(blob: Buffer): Float32Array {
  // A copy: the blob's offset in its buffer need not be a multiple of 4.
  return new Float32Array(Uint8Array.from(blob).buffer);
}

function sizeOf(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (Buffer.isBuffer(value)) return value.length;
  if (Array.isArray(value)) return value.length * 8;
  return 8;
}
