import { z } from 'zod';
import { MAX_SESSION_ID_LENGTH } from '../conversation/index.js';
import type { MemoryService } from './service.js';
import { storedContent } from './store.js';
import { MEMORY_TYPES, type MemoryUnit } from './types.js';

/**
 * A unit's content as every writer takes it (the HTTP API, the CLI, an import line): text that is
 * not blank, and not longer than a memory a prompt can carry. One schema, so the CLI cannot store
 * what the API refuses (an empty unit, which its own export then failed to import back).
 */
export const memoryContentSchema = z.string().trim().min(1, 'must not be empty').max(4_000, 'at most 4,000 characters');

/**
 * The most turns one `POST /v1/memory/ingest` takes. Its turns are written in one transaction (all
 * or none), which holds the proxy's event loop: ~0.05 ms a turn once prepared, so 5,000 turns hold
 * every other request for a quarter of a second at most; an unbounded request held it for minutes.
 */
export const MAX_INGEST_TURNS = 5_000;

/** One turn of a conversation to ingest (`POST /v1/memory/ingest`, `metaclaw memory ingest`). */
export const ingestTurnSchema = z.object({
  role: z.enum(['user', 'assistant']),
  content: z.string(),
  name: z.string().optional(),
  // A number is seconds or milliseconds since 1970 (as ingest reads it); one no Date can hold was
  // stored, and then every search and export of its scope failed.
  timestamp: z
    .union([z.string(), z.number().refine((value) => !Number.isNaN(numericTime(value)), 'not a time: seconds or milliseconds since 1970')])
    .optional(),
  id: z.string().min(1).optional(),
});

/** A numeric turn timestamp in milliseconds: below 1e12 it is taken as seconds. NaN when no Date holds it. */
export function numericTime(value: number): number {
  const milliseconds = value < 1e12 ? value * 1000 : value;
  return Number.isNaN(new Date(milliseconds).getTime()) ? Number.NaN : milliseconds;
}

/** One line of an import file: what export writes, with everything but type and content optional. */
const importLineSchema = z.object({
  // As a scope named over HTTP (and the scope headers): at most 256 characters.
  scope: z.string().min(1).max(MAX_SESSION_ID_LENGTH, `at most ${MAX_SESSION_ID_LENGTH} characters`).optional(),
  type: z.enum(MEMORY_TYPES),
  // No length cap here: an export holds raw turns, which may be longer than a unit written by hand.
  content: z.string().trim().min(1),
  search_keys: z.array(z.string()).optional(),
  importance: z.number().min(0).max(1).optional(),
  confidence: z.number().min(0).max(1).optional(),
  core: z.boolean().optional(),
  pinned: z.boolean().optional(),
  observed_at: z.string().optional(),
  source: z.object({ session_id: z.string().nullable().optional(), turn_ids: z.array(z.string()).optional() }).optional(),
  origin: z.string().optional(),
  status: z.string().optional(),
});

export interface MemoryImportReport {
  imported: number;
  /** Lines (rows, for MetaClaw's store) not imported, numbered from 1, with the reason; `id`: the row's memory id. */
  skipped: Array<{ line: number; id?: string; reason: string }>;
}

/** A unit as the API, the CLI's `--json` and export show it. */
export function presentMemory(unit: MemoryUnit) {
  return {
    id: unit.id,
    scope: unit.scope,
    type: unit.type,
    content: unit.content,
    search_keys: unit.searchKeys,
    core: unit.core,
    pinned: unit.pinned,
    status: unit.status,
    superseded_by: unit.supersededBy,
    importance: Math.round(unit.importance * 1000) / 1000,
    confidence: Math.round(unit.confidence * 1000) / 1000,
    origin: unit.origin,
    speaker: unit.speaker,
    observed_at: new Date(unit.observedAt).toISOString(),
    flagged: unit.flagged,
    access_count: unit.accessCount,
    source: { session_id: unit.sourceSession, turn_ids: unit.sourceTurns },
  };
}

/** Every unit of `scope` (of every scope when undefined) as JSONL, one presented unit a line. */
export function exportMemory(memory: MemoryService, scope?: string): { text: string; count: number } {
  return exportUnits(memory.store.iterate(scope));
}

/** Units as JSONL, one presented unit a line: the one export format of both engines. */
export function exportUnits(units: Iterable<MemoryUnit>): { text: string; count: number } {
  const lines: string[] = [];
  for (const unit of units) lines.push(JSON.stringify(presentMemory(unit)));
  return { text: lines.length > 0 ? `${lines.join('\n')}\n` : '', count: lines.length };
}

/**
 * What an import of these lines may read and write, before it runs: the scopes its valid lines
 * land in (only `onlyScope`, when given) and their contents as stored (trimmed, secrets redacted:
 * what `importLines` compares with stored units). The team store locks those scopes and reads those units first.
 */
export function importTargets(lines: readonly string[], defaultScope: string, onlyScope?: string): { scopes: string[]; contents: string[] } {
  const scopes = new Set<string>();
  const contents: string[] = [];
  for (const line of lines) {
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      continue;
    }
    const parsed = importLineSchema.safeParse(value);
    if (!parsed.success) continue;
    const scope = parsed.data.scope ?? defaultScope;
    if (onlyScope !== undefined && scope !== onlyScope) continue;
    scopes.add(scope);
    contents.push(storedContent(parsed.data.content));
  }
  return { scopes: [...scopes].sort(), contents };
}

/** One memory to import, as an import line holds it once checked. */
export type ImportItem = z.infer<typeof importLineSchema>;

/** Checks one value read from an import source (a JSONL line, a row of MetaClaw's store): the item, or why not. */
export function checkImportItem(value: unknown): { item: ImportItem } | { reason: string } {
  const parsed = importLineSchema.safeParse(value);
  if (parsed.success) return { item: parsed.data };
  const issue = parsed.error.issues[0];
  return { reason: `${issue?.path.join('.') || 'line'}: ${issue?.message}` };
}

/**
 * Imports JSONL lines (what export writes); bad lines are reported, never fatal. With `onlyScope`,
 * lines that name another scope are skipped (an HTTP caller without the admin token).
 */
export function importLines(memory: MemoryService, lines: readonly string[], defaultScope: string, onlyScope?: string): MemoryImportReport {
  const report: MemoryImportReport = { imported: 0, skipped: [] };
  lines.forEach((line, index) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      report.skipped.push({ line: index + 1, reason: 'not JSON' });
      return;
    }
    const checked = checkImportItem(value);
    const reason = 'reason' in checked ? checked.reason : importItem(memory, checked.item, defaultScope, onlyScope);
    if (reason === undefined) report.imported++;
    else report.skipped.push({ line: index + 1, reason });
  });
  return report;
}

const SKIPPED_AS_SUPERSEDED = 'superseded: it was replaced by a newer memory, so it is not brought back';
const SKIPPED_AS_PRESENT = 'already in memory';

/**
 * Whether an import skipped a line because it must (it is here already, or was replaced), not
 * because the line is unreadable or not allowed: a backup imported twice skips every line and
 * still succeeded.
 */
export function isExpectedSkip(reason: string): boolean {
  return reason === SKIPPED_AS_PRESENT || reason === SKIPPED_AS_SUPERSEDED;
}

/**
 * Adds one checked item as a live memory, unless it must not be: why it was skipped, or undefined
 * once added. Every import source (JSONL lines, MetaClaw's own store) passes here, so each skips
 * the same things for the same reasons.
 */
export function importItem(memory: MemoryService, item: ImportItem, defaultScope: string, onlyScope?: string): string | undefined {
  const scope = item.scope ?? defaultScope;
  if (onlyScope !== undefined && scope !== onlyScope) return `scope "${scope}" is not this request's scope ("${onlyScope}")`;
  // An export holds what was replaced too (its history); imported, it would come back as a live
  // memory, and a replaced rule must never return.
  if (item.status === 'superseded') return SKIPPED_AS_SUPERSEDED;
  // A rule may say exactly what its raw turn said, so units are matched against raw turns only
  // when the line is a raw turn itself: then an export imported back into its own install (or
  // twice) adds nothing, where every raw turn used to come back as a copy.
  if (memory.store.findSameContent(scope, item.content, { rawTurns: item.origin === 'raw_turn' })) return SKIPPED_AS_PRESENT;
  const observedAt = item.observed_at ? Date.parse(item.observed_at) : Number.NaN;
  memory.add({
    scope,
    type: item.type,
    content: item.content,
    ...(item.search_keys ? { searchKeys: item.search_keys } : {}),
    importance: item.importance ?? 0.6,
    confidence: item.confidence ?? 0.8,
    core: item.core ?? false,
    pinned: item.pinned ?? false,
    origin: 'import',
    ...(Number.isNaN(observedAt) ? {} : { observedAt }),
    sourceSession: item.source?.session_id ?? null,
    sourceTurns: item.source?.turn_ids ?? [],
  });
  return undefined;
}
