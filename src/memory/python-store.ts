import { createHash } from 'node:crypto';
import { closeSync, copyFileSync, existsSync, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { z } from 'zod';
import { MEMORY_TYPES } from './types.js';

/**
 * Reads the memory store of the original Python MetaClaw (`~/.metaclaw/memory/memory.db`, its
 * `memories` table, schema versions up to 6) for `metaclaw memory import`. The file is never
 * opened for writing: it is copied (with its WAL, which may hold the latest writes) into a private
 * temporary folder, and the copy is read.
 */

/** The newest version of MetaClaw's memory store this reader knows. */
export const PYTHON_STORE_VERSION = 6;

/** Columns every version of MetaClaw's `memories` table has, and that an import needs. */
const REQUIRED_COLUMNS = ['memory_id', 'scope_id', 'memory_type', 'content', 'importance', 'confidence', 'status', 'created_at', 'updated_at'];
/** Columns a newer version added (or that an import can do without): read when present. */
const OPTIONAL_COLUMNS = ['summary', 'source_session_id', 'entities_json', 'topics_json', 'tags_json', 'expires_at'];

/** A JSON list column as MetaClaw writes it ('["a", "b"]'); anything else reads as no list, as MetaClaw itself reads it. */
const jsonList = z
  .unknown()
  .optional()
  .transform((value) => {
    if (typeof value !== 'string') return [];
    try {
      const parsed: unknown = JSON.parse(value);
      return Array.isArray(parsed) ? parsed.filter((item): item is string => typeof item === 'string' && item.trim() !== '') : [];
    } catch {
      return [];
    }
  });
const text = z
  .string()
  .nullish()
  .transform((value) => value ?? '');

/** One row of MetaClaw's `memories` table, checked: a row that fails is reported and skipped, not trusted. */
export const pythonMemoryRowSchema = z.object({
  memory_id: z.string().min(1),
  scope_id: text,
  memory_type: z.enum(MEMORY_TYPES),
  content: z.string(),
  summary: text,
  source_session_id: text,
  entities_json: jsonList,
  topics_json: jsonList,
  tags_json: jsonList,
  importance: z.number().nullish(),
  confidence: z.number().nullish(),
  status: text,
  created_at: z.string(),
  updated_at: z.string(),
  expires_at: text,
});
export type PythonMemoryRow = z.infer<typeof pythonMemoryRowSchema>;

export interface PythonStore {
  version: number;
  /** Every row of `memories` (oldest first), checked: the row, or why it cannot be read. */
  rows: Array<{ id: string; row?: PythonMemoryRow; problem?: string }>;
  /** What the store holds (each memory's id, status, update and expiry time): the same until MetaClaw changes a memory. */
  fingerprint: string;
}

/** Why a file cannot be imported as MetaClaw's store: one line, and nothing was imported. */
export class PythonStoreError extends Error {}

const SQLITE_HEADER = Buffer.from('SQLite format 3\u0000', 'latin1');

/** A WAL file's first four bytes (big-endian), either checksum order: what SQLite writes beside a database, not one. */
const WAL_MAGIC = [0x377f0682, 0x377f0683];

/**
 * What the file is by its first bytes: a SQLite database, a SQLite write-ahead log (the `-wal` beside
 * one), or neither (then it is read as JSONL, which reports what it cannot read).
 */
export function sqliteFileKind(path: string): 'database' | 'wal' | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const head = Buffer.alloc(SQLITE_HEADER.length);
    const read = readSync(fd, head, 0, head.length, 0);
    if (read === head.length && head.equals(SQLITE_HEADER)) return 'database';
    return read >= 4 && WAL_MAGIC.includes(head.readUInt32BE(0)) ? 'wal' : undefined;
  } catch {
    return undefined; // a folder, or a file that cannot be read: the JSONL reader says so
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Reads MetaClaw's memory store at `path` (a SQLite file); a PythonStoreError when it is not one this reader knows. */
export function readPythonStore(path: string): PythonStore {
  const folder = mkdtempSync(join(tmpdir(), 'metaclaw-python-store-'));
  try {
    const copy = join(folder, 'memory.db');
    copyFileSync(path, copy);
    if (existsSync(`${path}-wal`)) copyFileSync(`${path}-wal`, `${copy}-wal`);
    let db: Database.Database;
    try {
      db = new Database(copy, { fileMustExist: true });
    } catch (error) {
      throw new PythonStoreError(`${path} cannot be read as a SQLite database (${(error as Error).message}); nothing was imported.`);
    }
    try {
      return readOpened(db, path);
    } catch (error) {
      if (error instanceof PythonStoreError) throw error;
      throw new PythonStoreError(`${path} cannot be read as MetaClaw's memory store (${(error as Error).message}); nothing was imported.`);
    } finally {
      db.close();
    }
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

function readOpened(db: Database.Database, path: string): PythonStore {
  const tables = new Set((db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map((row) => row.name));
  const notOurs = `${path} is a SQLite database but not MetaClaw's memory store`;
  if (!tables.has('memories') || !tables.has('schema_version'))
    throw new PythonStoreError(`${notOurs} (it has no ${tables.has('memories') ? 'schema_version' : 'memories'} table); nothing was imported.`);
  const columns = new Set((db.prepare('PRAGMA table_info(memories)').all() as Array<{ name: string }>).map((row) => row.name));
  const missing = REQUIRED_COLUMNS.filter((column) => !columns.has(column));
  if (missing.length > 0) throw new PythonStoreError(`${notOurs} (its memories table has no ${missing.join(', ')}); nothing was imported.`);
  const recorded = (db.prepare('SELECT MAX(version) AS version FROM schema_version').get() as { version: unknown }).version;
  // Its issue said in words: a ZodError's message is its issue list as indented JSON, and this error is one line.
  const checked = z.number().int().nullable().safeParse(recorded);
  if (!checked.success) {
    const shown =
      typeof recorded === 'string'
        ? JSON.stringify(recorded.slice(0, 40))
        : typeof recorded === 'number' || typeof recorded === 'bigint'
          ? String(recorded)
          : 'a blob';
    throw new PythonStoreError(`${notOurs} (its schema version is ${shown}, not a whole number); nothing was imported.`);
  }
  const version = checked.data;
  if (version === null || version < 1) throw new PythonStoreError(`${notOurs} (no schema version is recorded); nothing was imported.`);
  if (version > PYTHON_STORE_VERSION)
    throw new PythonStoreError(
      `${path} is MetaClaw's memory store at schema version ${version}, newer than this MetaClaw-TS reads (up to ${PYTHON_STORE_VERSION}); nothing was imported.`,
    );
  const read = [...REQUIRED_COLUMNS, ...OPTIONAL_COLUMNS.filter((column) => columns.has(column))];
  const raw = db.prepare(`SELECT ${read.join(', ')} FROM memories ORDER BY created_at, rowid`).all() as Array<Record<string, unknown>>;
  const rows = raw.map((value) => {
    const memoryId = value['memory_id'];
    const id = typeof memoryId === 'string' || typeof memoryId === 'number' ? String(memoryId) : '';
    const parsed = pythonMemoryRowSchema.safeParse(value);
    if (parsed.success) return { id, row: parsed.data };
    const issue = parsed.error.issues[0];
    return { id, problem: `${issue?.path.join('.') || 'row'}: ${issue?.message}` };
  });
  // By id, not by the order read: MetaClaw rewrites a row it updates (a new rowid, the same memory).
  const marks = raw.map((value) => JSON.stringify([value['memory_id'], value['status'], value['updated_at'], value['expires_at'] ?? ''])).sort();
  const hash = createHash('sha256');
  for (const mark of marks) hash.update(`${mark}\n`);
  return { version, rows, fingerprint: hash.digest('hex') };
}
