import { join } from 'node:path';
import { z } from 'zod';
import { resolveConfiguredPath } from '../config/index.js';
import { StateStore, type Db } from '../store/index.js';
import type { MemoryImportReport } from './transfer.js';
import type { PythonMemoryRow, PythonStore } from './python-store.js';

/**
 * Brings the memories of the original Python MetaClaw's store (read by python-store.ts) into this
 * install: each row becomes an import line and goes through the same import as a JSONL export.
 */

/** MetaClaw calls a memory pinned when its importance is at least this (its `pin_memory` sets 0.99). */
const PINNED_IMPORTANCE = 0.99;

/**
 * The scope a MetaClaw scope becomes: its `session:` parts dropped (MetaClaw itself recalls from
 * the base scope only), and its default scope, "default", the one this import fills by default
 * (memory.scope or --scope). `user:…` and `workspace:…` scopes are derived here from the same
 * headers the same way, so they stay as they are.
 */
function pythonScope(scope: string, defaultScope: string): string {
  const base = scope
    .split('|')
    .map((part) => part.trim())
    .filter((part) => part !== '' && !part.startsWith('session:'))
    .join('|');
  return base === '' || base === 'default' ? defaultScope : base;
}

/** Why MetaClaw itself no longer recalls this row (archived, expired), or undefined while it does. */
function lapsed(row: PythonMemoryRow, now: number): string | undefined {
  if (row.status === 'archived') return 'archived in MetaClaw (expired or merged away), so it is not brought back';
  if (row.status !== 'active' && row.status !== 'superseded') return `status "${row.status}" is not one MetaClaw writes`;
  const expires = row.expires_at === '' ? Number.NaN : Date.parse(row.expires_at);
  if (expires <= now) return `expired on ${row.expires_at}: MetaClaw no longer recalled it`;
  return undefined;
}

/** How many of the store's memories MetaClaw still recalls (what an import may add). */
export function livePythonRows(store: PythonStore, now = Date.now()): number {
  return store.rows.filter((entry) => entry.row?.status === 'active' && lapsed(entry.row, now) === undefined).length;
}

/** A MetaClaw row as an import line's value, or why it is not brought in. */
function rowValue(row: PythonMemoryRow, defaultScope: string, now: number): { value: Record<string, unknown> } | { reason: string } {
  const reason = lapsed(row, now);
  if (reason !== undefined) return { reason };
  const importance = Math.min(1, Math.max(0, row.importance ?? 0.5));
  // Index-only texts (never injected): the tags, entities and topics MetaClaw searched by, and a summary that says more than the content.
  const summary = row.summary.trim() !== '' && !row.content.startsWith(row.summary.trim()) ? [row.summary.trim()] : [];
  const keys = [...new Set([...row.tags_json, ...row.entities_json, ...row.topics_json, ...summary])];
  const observed = Date.parse(row.created_at);
  return {
    value: {
      scope: pythonScope(row.scope_id, defaultScope),
      type: row.memory_type,
      content: row.content,
      ...(keys.length > 0 ? { search_keys: keys } : {}),
      importance,
      confidence: Math.min(1, Math.max(0, row.confidence ?? 0.7)),
      pinned: importance >= PINNED_IMPORTANCE,
      ...(Number.isNaN(observed) ? {} : { observed_at: new Date(observed).toISOString() }),
      source: { session_id: row.source_session_id === '' ? null : row.source_session_id },
      status: row.status,
    },
  };
}

/** Rows of MetaClaw's store as import lines, and the rows that are not brought in (with why). */
export interface PythonImportLines {
  /** One JSONL line a row to import, read by `importLines` (either engine's) as an exported line is. */
  lines: string[];
  /** The row each line came from: its place in the store (from 1) and its memory id. */
  rows: Array<{ line: number; id: string }>;
  skipped: MemoryImportReport['skipped'];
}

/**
 * Rows of MetaClaw's store as import lines; `first` is the number of the first row (from 1), so a
 * caller importing in slices reports each row by its place in the store. The lines go through the
 * same import as a JSONL export, so both engines import them, and skip the same things.
 */
export function pythonImportLines(rows: PythonStore['rows'], defaultScope: string, first = 1, now = Date.now()): PythonImportLines {
  const result: PythonImportLines = { lines: [], rows: [], skipped: [] };
  rows.forEach((entry, index) => {
    const converted = entry.row ? rowValue(entry.row, defaultScope, now) : { reason: entry.problem ?? 'unreadable row' };
    if ('reason' in converted) result.skipped.push({ line: first + index, id: entry.id, reason: converted.reason });
    else {
      result.lines.push(JSON.stringify(converted.value));
      result.rows.push({ line: first + index, id: entry.id });
    }
  });
  return result;
}

/** An import of `pythonImportLines`' lines, reported by the rows they came from, the rows skipped before it included. */
export function pythonImportReport(converted: PythonImportLines, imported: MemoryImportReport): MemoryImportReport {
  const skipped = [
    ...converted.skipped,
    ...imported.skipped.map((item) => {
      const row = converted.rows[item.line - 1];
      return { line: row?.line ?? item.line, ...(row ? { id: row.id } : {}), reason: item.reason };
    }),
  ].sort((a, b) => a.line - b.line);
  return { imported: imported.imported, skipped };
}

const STATE_PREFIX = 'memory.python_import.';

const rememberedSchema = z.object({ path: z.string(), imported_at: z.string(), imported: z.number(), skipped: z.number() });
export type RememberedImport = z.infer<typeof rememberedSchema>;

/** Notes in this install's database that a store with this fingerprint was imported (the store itself is never touched). */
export function rememberPythonImport(db: Db, fingerprint: string, path: string, report: MemoryImportReport): void {
  const remembered: RememberedImport = { path, imported_at: new Date().toISOString(), imported: report.imported, skipped: report.skipped.length };
  new StateStore(db).set(`${STATE_PREFIX}${fingerprint}`, JSON.stringify(remembered));
}

/** When a store with this fingerprint was imported, if it was. */
export function pythonImportOf(db: Db, fingerprint: string): RememberedImport | undefined {
  const value = new StateStore(db).get(`${STATE_PREFIX}${fingerprint}`);
  if (value === undefined) return undefined;
  try {
    return rememberedSchema.parse(JSON.parse(value));
  } catch {
    return undefined;
  }
}

/**
 * Where the Python MetaClaw keeps its memories, as it finds them: `memory.store_path`, else
 * `memory.dir`/memory.db, else memory/memory.db in the home folder both share (relative paths from
 * that folder).
 */
export function pythonStorePath(home: string, values: { 'memory.store_path': string; 'memory.dir': string }): string {
  const folder = resolveConfiguredPath(home, values['memory.dir'], 'memory');
  return resolveConfiguredPath(home, values['memory.store_path'], join(folder, 'memory.db'));
}
