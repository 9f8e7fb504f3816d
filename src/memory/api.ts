import type { Awaitable } from '../types/index.js';
import type { IngestTurn, MemoryService } from './service.js';
import type { MemoryPatch, ScopeStats } from './store.js';
import { exportMemory, importLines, type MemoryImportReport } from './transfer.js';
import type { MemoryDraft, MemoryHit, MemoryType, MemoryUnit } from './types.js';

/**
 * What can be done with memory from outside the proxy's own learning, the same on both engines:
 * the personal store (a MemoryService, below) or the team store (PgMemoryApi). The HTTP routes and
 * `metaclaw memory` both work through it, so the CLI reaches the store the proxy serves from.
 */
export interface MemoryApi {
  get(id: string): Awaitable<MemoryUnit | undefined>;
  search(request: { scope: string; query: string; limit: number; types?: MemoryType[]; includeSuperseded?: boolean }): Awaitable<MemoryHit[]>;
  add(draft: MemoryDraft): Awaitable<MemoryUnit>;
  forget(id: string): Awaitable<MemoryUnit | undefined>;
  /** Units deleted. */
  forgetScope(scope: string): Awaitable<number>;
  ingest(
    scope: string,
    sessionId: string,
    turns: readonly IngestTurn[],
  ): Awaitable<{ stored: Array<{ id: string; turn_id: string }>; extraction_job: number | null }>;
  update(id: string, patch: MemoryPatch): Awaitable<MemoryUnit | undefined>;
  supersede(id: string, replacement: { content: string } & MemoryPatch): Awaitable<{ old: MemoryUnit; added: MemoryUnit } | undefined>;
  /** The scope's active standing instructions, pinned first, then by importance, then newest. */
  core(scope: string): Awaitable<MemoryUnit[]>;
  stats(scope: string): Awaitable<ScopeStats>;
  /** Every scope's stats, and the units across them. */
  allStats(): Awaitable<{ scopes: ScopeStats[]; total: number }>;
  /** JSONL, one presented unit a line (transfer.ts), of one scope or of all. */
  export(scope?: string): Awaitable<string>;
  import(lines: readonly string[], defaultScope: string, onlyScope?: string): Awaitable<MemoryImportReport>;
}

/** The API over the personal store. */
export function personalMemoryApi(memory: MemoryService): MemoryApi {
  return {
    get: (id) => memory.store.get(id),
    search: (request) => memory.search(request),
    add: (draft) => memory.add(draft),
    forget: (id) => memory.forget(id),
    forgetScope: (scope) => memory.forgetScope(scope),
    ingest: (scope, sessionId, turns) => memory.ingest(scope, sessionId, turns),
    update: (id, patch) => memory.update(id, patch),
    supersede: (id, replacement) => memory.supersede(id, replacement),
    core: (scope) => memory.store.coreUnits(scope),
    stats: (scope) => memory.store.stats(scope),
    allStats: () => ({ scopes: memory.store.scopes().map((name) => memory.store.stats(name)), total: memory.store.totalUnits() }),
    export: (scope) => exportMemory(memory, scope).text,
    import: (lines, defaultScope, onlyScope) => importLines(memory, lines, defaultScope, onlyScope),
  };
}
