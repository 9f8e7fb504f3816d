import { z } from 'zod';
import { NotFoundError } from '../errors.js';
import { MEMORY_TYPES, presentMemory, type MemoryHit, type MemoryType, type MemoryUnit } from '../memory/index.js';
import { parse, wholeNumberParam } from '../proxy/route-body.js';
import type { DashboardSources } from './types.js';

/** Results a page shows at once: newest units, or the best hits of a search. */
export const MEMORY_PAGE_LIMIT = 50;
/** A search shows more hits on request, up to this many (ranked lists do not page: each longer list is ranked anew). */
const MEMORY_SEARCH_MAX = 500;
/** Source turns and replaced units a detail lists (a rule restated often collects many). */
const DETAIL_LINKS_LIMIT = 20;

type Maybe<T> = T | Promise<T>;

/**
 * What the memory pages read, from either store: SQLite answers at once (the personal install's
 * own MemoryService and database), the team store by queries.
 */
export interface MemoryPageReads {
  /** every scope with its counts */
  scopes(): Maybe<Array<{ scope: string; active: number; superseded: number }>>;
  search(request: { scope: string; query: string; limit: number; types?: MemoryType[]; includeSuperseded: boolean }): Maybe<MemoryHit[]>;
  get(id: string): Maybe<MemoryUnit | undefined>;
  /** the units of these ids that still exist, in the ids' order (one read for a page of them) */
  units(ids: readonly string[]): Maybe<MemoryUnit[]>;
  /** rows of MEMORY_SQL's newest queries */
  query<T>(sql: string, params: unknown[]): Maybe<T[]>;
}

/** The memory pages' queries, with `?` parameters (the same tables in both stores). */
export const MEMORY_SQL = {
  newestFilters: `scope = ? AND (CAST(? AS TEXT) IS NULL OR type = ?) AND (? = 1 OR status = 'active')`,
  newestOrder: `ORDER BY observed_at DESC, id DESC LIMIT ${MEMORY_PAGE_LIMIT + 1}`,
  replaced: 'SELECT id FROM memory_units WHERE superseded_by = ? ORDER BY rowid DESC LIMIT ?',
  sessionRecorded: 'SELECT 1 AS found FROM sessions WHERE id = ?',
  turn: 'SELECT id, session_id, seq, started_at, query FROM turns WHERE id = ?',
};

/** The personal install's memory, read at once. */
export function sqliteMemoryReads(sources: DashboardSources): MemoryPageReads {
  const store = sources.memory.store;
  return {
    scopes: () => store.scopes().map((name) => store.stats(name)),
    search: (request) => sources.memory.search(request),
    get: (id) => store.get(id),
    units: (ids) => ids.flatMap((id) => store.get(id) ?? []),
    query: <T>(sql: string, params: unknown[]) => sources.db.prepare(sql).all(...params) as T[],
  };
}

/** The memory page's address query (`#/memory?scope=&q=&type=&superseded=1`), as its data route takes it. */
export const memoryQuerySchema = z.object({
  scope: z.string().min(1).max(500).optional(),
  q: z.string().max(1_000).optional(),
  type: z.enum(MEMORY_TYPES).optional(),
  superseded: z.enum(['0', '1']).optional(),
  /** The cursor a previous page of the newest units handed out (`<observed_at>:<id>`), to page back in time. */
  before: z
    .string()
    .regex(/^\d{1,16}:.{1,200}$/, 'must be the cursor a previous page gave')
    .optional(),
  /** How many hits a search shows (more on request). */
  limit: wholeNumberParam(1, MEMORY_SEARCH_MAX).optional(),
});

export type MemoryQuery = z.infer<typeof memoryQuerySchema>;

/** A unit as the pages show it: what the API presents, plus when it was written and last changed. */
function shown(unit: MemoryUnit) {
  return { ...presentMemory(unit), created_at: new Date(unit.createdAt).toISOString(), updated_at: new Date(unit.updatedAt).toISOString() };
}

/**
 * The memory page: every scope with its counts (the owner's view, behind the proxy key), and the
 * chosen scope's units: the memory service's own search for a query, else the newest units.
 */
export async function memoryData(reads: MemoryPageReads, rawQuery: Record<string, string>) {
  const query = parse(memoryQuerySchema, rawQuery);
  const scopes = (await reads.scopes())
    .map((stats) => ({ scope: stats.scope, active: stats.active, superseded: stats.superseded }))
    .sort((a, b) => b.active + b.superseded - (a.active + a.superseded) || a.scope.localeCompare(b.scope));
  // Without a choice, the scope holding the most memories (usually the configured one).
  const scope = query.scope ?? scopes[0]?.scope ?? null;
  const text = query.q?.trim() ?? '';
  const includeSuperseded = query.superseded === '1';
  let results: Array<ReturnType<typeof shown> & { score: number | null }> = [];
  let next: string | null = null;
  let limit = MEMORY_PAGE_LIMIT;
  let more = false;
  if (scope !== null) {
    if (text !== '') {
      limit = query.limit ?? MEMORY_PAGE_LIMIT;
      const hits = await reads.search({
        scope,
        query: text,
        limit: limit + 1,
        ...(query.type ? { types: [query.type] } : {}),
        includeSuperseded,
      });
      more = hits.length > limit && limit < MEMORY_SEARCH_MAX;
      results = hits.slice(0, limit).map((hit) => ({ ...shown(hit.unit), score: Math.round(hit.score * 1000) / 1000 }));
    } else {
      const rows = await newestUnits(reads, scope, query.type, includeSuperseded, cursorOf(query.before));
      const units = await reads.units(rows.slice(0, MEMORY_PAGE_LIMIT).map((row) => row.id));
      results = units.map((unit) => ({ ...shown(unit), score: null }));
      const last = rows[MEMORY_PAGE_LIMIT - 1];
      if (rows.length > MEMORY_PAGE_LIMIT && last) next = `${last.observed_at}:${last.id}`;
    }
  }
  return {
    scopes,
    scope,
    q: text,
    type: query.type ?? null,
    superseded: includeSuperseded,
    types: MEMORY_TYPES,
    limit,
    /** a search: whether asking for more would show more */
    more,
    /** the newest units: the cursor of the next (older) page, null on the last */
    next,
    before: query.before ?? null,
    results,
  };
}

function cursorOf(before: string | undefined): { at: number; id: string } | undefined {
  if (before === undefined) return undefined;
  const colon = before.indexOf(':');
  return { at: Number(before.slice(0, colon)), id: before.slice(colon + 1) };
}

/**
 * The scope's most recently observed units, one more than a page (to know whether another follows),
 * older than the cursor when given: a range on the (scope, observed_at) index, so a deep page costs
 * what the first does.
 */
function newestUnits(
  reads: MemoryPageReads,
  scope: string,
  type: string | undefined,
  includeSuperseded: boolean,
  before: { at: number; id: string } | undefined,
) {
  const common = [scope, type ?? null, type ?? null, includeSuperseded ? 1 : 0];
  type Row = { id: string; observed_at: number };
  if (before === undefined)
    return reads.query<Row>(`SELECT id, observed_at FROM memory_units WHERE ${MEMORY_SQL.newestFilters} ${MEMORY_SQL.newestOrder}`, common);
  return reads.query<Row>(
    `SELECT id, observed_at FROM memory_units WHERE ${MEMORY_SQL.newestFilters} AND observed_at <= ? AND (observed_at < ? OR id < ?) ${MEMORY_SQL.newestOrder}`,
    [...common, before.at, before.at, before.id],
  );
}

interface SourceTurn {
  id: string;
  session_id: string | null;
  seq: number | null;
  started_at: string | null;
  query: string | null;
  /** false when the turn record is gone (retention) or the id came from `POST /v1/memory/ingest` */
  recorded: boolean;
}

/** One memory with where it came from (its session and turns) and what it replaced or was replaced by. */
export async function memoryDetail(reads: MemoryPageReads, id: string) {
  const unit = await reads.get(id);
  if (!unit) throw new NotFoundError(`No memory with id ${id}.`, 'memory_not_found');
  const brief = (other: MemoryUnit) => ({
    id: other.id,
    type: other.type,
    status: other.status,
    content: other.content,
    created_at: new Date(other.createdAt).toISOString(),
  });
  const replacement = unit.supersededBy ? await reads.get(unit.supersededBy) : undefined;
  const replacedIds = (await reads.query<{ id: string }>(MEMORY_SQL.replaced, [unit.id, DETAIL_LINKS_LIMIT])).map((row) => row.id);
  const recorded = unit.sourceSession !== null && (await reads.query(MEMORY_SQL.sessionRecorded, [unit.sourceSession])).length > 0;
  return {
    memory: shown(unit),
    types: MEMORY_TYPES,
    superseded_by: unit.supersededBy ? { id: unit.supersededBy, unit: replacement ? brief(replacement) : null } : null,
    supersedes: (await reads.units(replacedIds)).map(brief),
    source: {
      session_id: unit.sourceSession,
      session_recorded: recorded,
      turns: await sourceTurns(reads, unit.sourceTurns.slice(0, DETAIL_LINKS_LIMIT)),
      more_turns: Math.max(0, unit.sourceTurns.length - DETAIL_LINKS_LIMIT),
    },
  };
}

function sourceTurns(reads: MemoryPageReads, ids: readonly string[]): Promise<SourceTurn[]> {
  type Row = { id: string; session_id: string; seq: number; started_at: number; query: string | null };
  return Promise.all(
    ids.map(async (turnId) => {
      const row = (await reads.query<Row>(MEMORY_SQL.turn, [turnId]))[0];
      return row
        ? { id: row.id, session_id: row.session_id, seq: row.seq, started_at: new Date(row.started_at).toISOString(), query: row.query, recorded: true }
        : { id: turnId, session_id: null, seq: null, started_at: null, query: null, recorded: false };
    }),
  );
}

export type MemoryListView = Awaited<ReturnType<typeof memoryData>>;
export type MemoryDetailView = Awaited<ReturnType<typeof memoryDetail>>;
