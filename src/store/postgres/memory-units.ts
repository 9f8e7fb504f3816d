import type pg from 'pg';
import { z } from 'zod';
import { toUnit, type Candidate, type UnitRow } from '../../memory/store.js';
import type { MemoryUnit } from '../../memory/types.js';
import { fromPostgresText } from './text.js';

/**
 * Reads of the team store's memory_units that the request path needs, answering as the SQLite
 * store's statements of the same name do (same filters, same order), so recall and the core block
 * see the same units whichever engine holds them. Rows are checked with zod, then mapped by the
 * SQLite store's own `toUnit`: one mapping from row to unit for both engines.
 */

/** BIGINT comes back as a string from `pg`; SQLite's 0/1 flags are INTEGER in both. */
const count = z.coerce.number();
const unitRowSchema = z.object({
  rowid: count,
  id: z.string(),
  scope: z.string(),
  type: z.string(),
  content: z.string(),
  terms: z.string(),
  search_keys: z.string(),
  neighbour_terms: z.string(),
  previous_raw: count.nullable(),
  speaker: z.string().nullable(),
  importance: z.number(),
  confidence: z.number(),
  core: z.number().int(),
  pinned: z.number().int(),
  status: z.string(),
  superseded_by: z.string().nullable(),
  origin: z.string(),
  raw_key: z.string().nullable(),
  observed_at: count,
  valid_from: count,
  source_session: z.string().nullable(),
  source_turns: z.string(),
  flagged: z.string().nullable(),
  access_count: count,
  last_accessed_at: count.nullable(),
  created_at: count,
  updated_at: count,
});
type PgUnitRow = z.infer<typeof unitRowSchema>;

function parseRow(raw: unknown): PgUnitRow {
  return unitRowSchema.parse(raw);
}

/** A memory_units row exactly as SQLite holds it (text with its U+0000 back): what a SQLite workspace is seeded with. */
export function sqliteRowOf(raw: unknown): UnitRow {
  const row: UnitRow = { ...parseRow(raw) };
  for (const column of Object.keys(row) as Array<keyof UnitRow>) {
    const value = row[column];
    if (typeof value === 'string') Object.assign(row, { [column]: fromPostgresText(value) });
  }
  return row;
}

export const unitOfRow = (raw: unknown): MemoryUnit => toUnit(parseRow(raw));

/** A scope's standing instructions and what the provider needs beside them, read together. */
export interface ScopeRules {
  /** Active core units, in the core block's order (SQLite's `coreUnits`). */
  core: MemoryUnit[];
  /** The turns that taught core rules since replaced (SQLite's `replacedRuleTurns`). */
  replacedTurns: Set<string>;
  /** Units in the scope, all statuses: the N of its IDF (the keyword index's counter). */
  size: number;
}

export type Queryable = Pick<pg.Pool, 'query'>;

export async function readScopeRules(db: Queryable, scope: string): Promise<ScopeRules> {
  // One round trip: three reads of one scope, each as SQLite makes it.
  const result = await db.query<{ core: unknown[] | null; replaced: string[] | null; size: number | null }>(
    `SELECT
       (SELECT json_agg(u ORDER BY u.pinned DESC, u.importance DESC, u.observed_at DESC) FROM memory_units u
         WHERE u.scope = $1 AND u.core = 1 AND u.status = 'active') AS core,
       (SELECT array_agg(source_turns) FROM memory_units WHERE scope = $1 AND core = 1 AND status = 'superseded') AS replaced,
       (SELECT units FROM memory_scope_sizes WHERE scope = $1) AS size`,
    [scope],
  );
  const row = result.rows[0];
  return {
    core: (row?.core ?? []).map(unitOfRow),
    replacedTurns: new Set((row?.replaced ?? []).flatMap((turns) => z.array(z.string()).parse(JSON.parse(turns)))),
    size: row?.size ?? 0,
  };
}

/** Units by sequence (rowid), every column: a keyword search's hits become candidates with these. */
export async function unitsBySequence(db: Queryable, sequences: readonly number[]): Promise<Map<number, MemoryUnit>> {
  if (sequences.length === 0) return new Map();
  const result = await db.query('SELECT * FROM memory_units WHERE rowid = ANY($1::bigint[])', [sequences]);
  return new Map(result.rows.map((raw) => unitOfRow(raw)).map((unit) => [unit.sequence, unit]));
}

/** The units of these ids that still exist, in the ids' order, in one query (a dashboard page lists 50). */
export async function unitsById(db: Queryable, ids: readonly string[]): Promise<MemoryUnit[]> {
  if (ids.length === 0) return [];
  const result = await db.query('SELECT * FROM memory_units WHERE id = ANY($1::text[])', [ids]);
  const byId = new Map(result.rows.map((raw) => unitOfRow(raw)).map((unit) => [unit.id, unit]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/** Units' indexed terms by sequence (SQLite's `unitTerms`: what pseudo-relevance feedback reads). */
export async function unitTerms(db: Queryable, sequences: readonly number[]): Promise<Map<number, string[]>> {
  if (sequences.length === 0) return new Map();
  const result = await db.query('SELECT rowid, terms FROM memory_units WHERE rowid = ANY($1::bigint[])', [sequences]);
  const rowSchema = z.object({ rowid: count, terms: z.string() });
  return new Map(result.rows.map((raw) => rowSchema.parse(raw)).map((row) => [row.rowid, row.terms.split(' ').filter(Boolean)]));
}

/** Active units observed in [start, end) (SQLite's `inWindow`): a question naming a time also considers these. */
export async function unitsInWindow(db: Queryable, scope: string, start: number, end: number, limit: number): Promise<Candidate[]> {
  const result = await db.query(
    `SELECT * FROM memory_units WHERE scope = $1 AND status = 'active' AND observed_at >= $2 AND observed_at < $3
     ORDER BY importance DESC, observed_at DESC LIMIT $4`,
    [scope, start, end, limit],
  );
  return result.rows.map((raw) => {
    const row = parseRow(raw);
    return { unit: toUnit(row), terms: new Set(row.terms.split(' ')), related: new Set(row.neighbour_terms.split(' ')), bm25: 0 };
  });
}
