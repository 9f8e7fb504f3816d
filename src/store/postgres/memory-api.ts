import type pg from 'pg';
import { z } from 'zod';
import type { Logger } from '../../logging/index.js';
import type { MemoryRetrievalMode } from '../../memory/retrieval.js';
import { rawContent, type IngestTurn, type MemoryConversation, type MemorySettings } from '../../memory/service.js';
import { countInStats, emptyScopeStats, toUnit, type MemoryPatch, type ScopeStats } from '../../memory/store.js';
import { exportUnits, importLines, importTargets, type MemoryImportReport } from '../../memory/transfer.js';
import type { MemoryDraft, MemoryHit, MemoryType, MemoryUnit } from '../../memory/types.js';
import { MemoryError } from '../../errors.js';
import { forgetPgScope, forgetPgUnit } from './forget-scope.js';
import type { PgJobQueue } from './job-queue.js';
import { SEARCH_KEYS_JOB } from '../../memory/service.js';
import { PgMemorySearch } from './memory-search.js';
import { sqliteRowOf, unitOfRow, unitsById } from './memory-units.js';
import { searchRecall, type PgMemoryVectors } from './memory-vectors.js';
import { lockScope, MemoryWorkspace } from './memory-workspace.js';
import { PgMemoryWriter } from './memory-writer.js';
import { pgRecallStore } from './recall-store.js';
import { ReplayedReads } from './replayed-reads.js';
import { fromPostgresText, toPostgresText } from './text.js';
import { inTransaction } from './transaction.js';
import { inSlices } from '../../shared/event-loop.js';
import type { MemoryUnitReader } from '../ports.js';
import type { MemoryApi } from '../../memory/api.js';

/** Search over HTTP finds what recall finds, down to this relevance (as the personal store's search). */
const SEARCH_MIN_RELEVANCE = 0.15;

/** What the edits need besides the pool: where the jobs they cause go (ingest queues extraction), and memory's settings. */
export interface PgMemoryEdits {
  readonly queue: PgJobQueue;
  readonly settings: MemorySettings;
}

/** An edit over HTTP reads no conversation record and scrubs nothing (forgetting is not done in a workspace). */
const NO_CONVERSATION: MemoryConversation = {
  getTurnSummary: () => undefined,
  lastModelOf: () => undefined,
  latestModel: () => undefined,
  scrubTexts: () => 0,
  scrubInjected: () => 0,
};

/** The units a standing instruction added to these scopes is compared with (MemoryService.addStandingInstruction). */
const RULES_OF_SCOPES = `(core = 1 OR (origin = 'rule' AND status = 'active'))`;

const statsRowSchema = z.object({
  scope: z.string(),
  status: z.string(),
  core: z.coerce.number(),
  type: z.string(),
  origin: z.string(),
  count: z.coerce.number(),
});

/**
 * The memory HTTP routes' reads and writes on a node of a team store: a unit by id, search (the
 * personal store's recall code over the team store's index, as the node's memory section runs
 * it), adding a unit (PgMemoryWriter: row and index entry in one transaction; a standing
 * instruction in a workspace, as below, so it replaces the rule before it), forgetting a unit or
 * a scope (forget-scope.ts), statistics and export (read here, in the personal store's format).
 * Every other write (ingest, edit, supersede, import) runs the personal install's own code in a
 * MemoryWorkspace seeded from the team store, inside a transaction that first takes the lock of
 * the scope it writes, as every memory writer of the team store does; what the workspace changed is
 * written in that transaction. Who may reach which scope is the routes' business
 * (proxy/memory-routes.ts), the same on both engines.
 */
export class PgMemoryApi implements MemoryUnitReader, MemoryApi {
  private readonly search_: PgMemorySearch;
  private readonly writer: PgMemoryWriter;

  constructor(
    private readonly pool: pg.Pool,
    private readonly logger: Logger,
    private readonly edits?: PgMemoryEdits,
    /**
     * The store's memory vectors when this node (or the CLI) uses them: search is hybrid, and added
     * units are queued for embedding; `keywordsOnly` is told why when a search is by keywords alone.
     */
    private readonly vectors?: {
      readonly store: PgMemoryVectors;
      readonly queue: PgJobQueue;
      readonly mode: MemoryRetrievalMode;
      readonly keywordsOnly?: (why: string) => void;
    },
  ) {
    this.search_ = new PgMemorySearch(pool);
    this.writer = new PgMemoryWriter(pool, vectors ? (client) => vectors.store.queueEmbed(vectors.queue, client) : undefined);
  }

  async get(id: string): Promise<MemoryUnit | undefined> {
    const result = await this.pool.query('SELECT * FROM memory_units WHERE id = $1', [id]);
    return result.rows[0] === undefined ? undefined : unitOfRow(result.rows[0]);
  }

  /** The units of these ids that still exist, in the ids' order. */
  units(ids: readonly string[]): Promise<MemoryUnit[]> {
    return unitsById(this.pool, ids);
  }

  async search(request: { scope: string; query: string; limit: number; types?: MemoryType[]; includeSuperseded?: boolean }): Promise<MemoryHit[]> {
    const reads = new ReplayedReads();
    const store = pgRecallStore(reads, this.search_, this.pool);
    return searchRecall(
      {
        reads,
        store,
        vectors: this.vectors?.store,
        mode: this.vectors?.mode ?? 'keyword',
        logger: this.logger,
        ...(this.vectors?.keywordsOnly ? { keywordsOnly: this.vectors.keywordsOnly } : {}),
      },
      {
        scope: request.scope,
        query: request.query,
        limit: request.limit,
        ...(request.types ? { types: request.types } : {}),
        includeInactive: request.includeSuperseded ?? false,
        minRelevance: SEARCH_MIN_RELEVANCE,
        listing: true,
      },
    );
  }

  async add(draft: MemoryDraft): Promise<MemoryUnit> {
    // A standing instruction runs the personal code: it replaces an earlier rule on its subject (MemoryService.add).
    if (draft.core && this.edits)
      return this.inScopes(
        [draft.scope],
        { units: { where: `scope = $1 AND ${RULES_OF_SCOPES}`, params: [toPostgresText(draft.scope)] } },
        async (workspace, write, client) => {
          const added = workspace.service.add(draft);
          await write();
          const unit = await this.getOn(client, added.id);
          if (!unit) throw new MemoryError('the memory could not be stored', 'memory_not_stored');
          return unit;
        },
      );
    const unit = await this.writer.add(draft);
    if (!unit) throw new MemoryError('the memory could not be stored', 'memory_not_stored');
    await this.edits?.queue.enqueue(SEARCH_KEYS_JOB, {}, { dedupeKey: SEARCH_KEYS_JOB, delayMs: 2_000, rerunIfRunning: true });
    return unit;
  }

  /** Forgets a unit for good: row, index entry, vector, and its text in the turns it came from. */
  forget(id: string): Promise<MemoryUnit | undefined> {
    return inTransaction(this.pool, (client) => forgetPgUnit(this.pool, client, id));
  }

  /** Forgets a whole scope (forget-scope.ts); the number of units deleted. */
  async forgetScope(scope: string): Promise<number> {
    return (await inTransaction(this.pool, (client) => forgetPgScope(this.pool, client, scope))).units;
  }

  /** `POST /v1/memory/ingest`: the turns stored as raw units (and the rules they state captured), extraction queued in the team queue. */
  async ingest(
    scope: string,
    sessionId: string,
    turns: readonly IngestTurn[],
  ): Promise<{ stored: Array<{ id: string; turn_id: string }>; extraction_job: number | null }> {
    // What the turns say: the learned units they repeat are read with the rules (the read set of recording a turn).
    // Redacted a slice of the event loop at a time, as the workspace's ingest prepares them.
    const userTexts: string[] = [];
    await inSlices(turns.length, (index) => {
      const turn = turns[index]!;
      if (turn.role === 'user') userTexts.push(rawContent(turn.content));
    });
    const turnText = userTexts.join('\n');
    return this.inScopes([scope], { turnText, sessionId }, async (workspace, write) => {
      const result = await workspace.service.ingest(scope, sessionId, turns);
      const jobs = await write();
      // The workspace's queue numbers nothing: the id is the team queue's, of the job ingest queued last (none when an
      // extraction of the session was already waiting).
      return { stored: result.stored, extraction_job: result.extraction_job === null ? null : (jobs.at(-1) ?? null) };
    });
  }

  /**
   * `PATCH /v1/memory/{id}`: the unit changed as on SQLite (re-indexed, and the raw turns after it
   * when its words change: those after a clarifying question borrow them through it, `rawLink`).
   */
  async update(id: string, patch: MemoryPatch): Promise<MemoryUnit | undefined> {
    const scope = await this.scopeOf(id);
    if (scope === undefined) return undefined;
    // The unit, the turn after it, and the turns after that for as long as the one before is the
    // assistant's (a superset of the clarifying questions through which words pass on, `rawLink`).
    const chain = `WITH RECURSIVE chain(rowid, lends) AS (
        SELECT rowid, true FROM memory_units WHERE id = $1
        UNION ALL
        SELECT unit.rowid, unit.speaker IS NOT DISTINCT FROM 'assistant' FROM memory_units AS unit JOIN chain ON unit.previous_raw = chain.rowid WHERE chain.lends
      ) SELECT rowid FROM chain`;
    const units = { where: `rowid IN (${chain})`, params: [id] };
    return this.inScopes([scope], { units }, async (workspace, write, client) => {
      if (!workspace.service.update(id, patch)) return undefined;
      await write();
      return this.getOn(client, id);
    });
  }

  /** `POST /v1/memory/{id}/supersede`: the new unit and the old one's link to it, written together. */
  async supersede(id: string, replacement: { content: string } & MemoryPatch): Promise<{ old: MemoryUnit; added: MemoryUnit } | undefined> {
    const scope = await this.scopeOf(id);
    if (scope === undefined) return undefined;
    return this.inScopes([scope], { units: { where: 'id = $1', params: [id] } }, async (workspace, write, client) => {
      const result = workspace.service.supersede(id, replacement);
      if (!result) return undefined;
      await write();
      const [old, added] = await Promise.all([this.getOn(client, result.old.id), this.getOn(client, result.added.id)]);
      return old && added ? { old, added } : undefined;
    });
  }

  /** `POST /v1/memory/import`: the personal store's import (same lines, same checks) over the scopes the lines name. */
  async import(lines: readonly string[], defaultScope: string, onlyScope?: string): Promise<MemoryImportReport> {
    const { scopes, contents } = importTargets(lines, defaultScope, onlyScope);
    // Nothing importable: the personal code still reports each line's reason, over an empty workspace.
    // Raw turns too: a raw-turn line is "already in memory" when one holds its words (see importLines).
    const units = {
      where: `scope = ANY($1::text[]) AND (${RULES_OF_SCOPES} OR (status = 'active' AND content = ANY($2::text[])))`,
      params: [scopes.map(toPostgresText), contents.map(toPostgresText)],
    };
    return this.inScopes(scopes, { units }, async (workspace, write) => {
      const report = importLines(workspace.service, lines, defaultScope, onlyScope);
      if (report.imported > 0) await write();
      return report;
    });
  }

  /** The scope's active standing instructions, in the personal store's order (MemoryStore.coreUnits). */
  async core(scope: string): Promise<MemoryUnit[]> {
    const result = await this.pool.query(
      "SELECT * FROM memory_units WHERE scope = $1 AND core = 1 AND status = 'active' ORDER BY pinned DESC, importance DESC, observed_at DESC, rowid",
      [toPostgresText(scope)],
    );
    return result.rows.map(unitOfRow);
  }

  /** Counts of one scope, as the personal store's `stats`. */
  async stats(scope: string): Promise<ScopeStats> {
    return (await this.statsOf(scope)).get(scope) ?? emptyScopeStats(scope);
  }

  /** Counts of every scope, and the units across them. */
  async allStats(): Promise<{ scopes: ScopeStats[]; total: number }> {
    const scopes = [...(await this.statsOf(undefined)).values()].sort((a, b) => (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : 0));
    return { scopes, total: scopes.reduce((sum, stats) => sum + stats.active + stats.superseded, 0) };
  }

  /** Every unit of `scope` (every scope when undefined) as the personal export writes them. */
  async export(scope?: string): Promise<string> {
    const result =
      scope === undefined
        ? await this.pool.query('SELECT * FROM memory_units ORDER BY rowid')
        : await this.pool.query('SELECT * FROM memory_units WHERE scope = $1 ORDER BY rowid', [toPostgresText(scope)]);
    // Text as SQLite holds it (U+0000 back), so an export reads the same from either engine.
    return exportUnits(result.rows.map((raw) => toUnit(sqliteRowOf(raw)))).text;
  }

  close(): void {
    this.writer.close();
  }

  private async scopeOf(id: string): Promise<string | undefined> {
    return (await this.pool.query<{ scope: string }>('SELECT scope FROM memory_units WHERE id = $1', [id])).rows[0]?.scope;
  }

  private async getOn(client: pg.PoolClient, id: string): Promise<MemoryUnit | undefined> {
    const result = await client.query('SELECT * FROM memory_units WHERE id = $1', [id]);
    return result.rows[0] === undefined ? undefined : unitOfRow(result.rows[0]);
  }

  /**
   * Runs `work` in one transaction holding the locks of `scopes` (taken in order, so two imports
   * never wait on each other crosswise), on a workspace seeded under them; `write` writes what the
   * workspace changed, in that transaction.
   */
  private inScopes<T>(
    scopes: readonly string[],
    seed: { units?: { where: string; params: readonly unknown[] }; turnText?: string; sessionId?: string },
    work: (workspace: MemoryWorkspace, write: () => Promise<Array<number | undefined>>, client: pg.PoolClient) => Promise<T>,
  ): Promise<T> {
    const edits = this.edits;
    if (!edits) throw new MemoryError('this view of the team store only reads, adds and forgets memory', 'memory_read_only');
    return inTransaction(this.pool, async (client) => {
      for (const scope of [...new Set(scopes)].sort()) await lockScope(client, scope);
      const workspace = await MemoryWorkspace.open(
        {
          pool: this.pool,
          scope: scopes[0] ?? '',
          sessionId: seed.sessionId ?? '',
          settings: edits.settings,
          logger: this.logger,
          conversation: NO_CONVERSATION,
          ...(seed.units ? { units: seed.units } : {}),
          ...(seed.turnText === undefined ? {} : { turnText: seed.turnText }),
          ...(this.vectors ? { vectors: this.vectors.store } : {}),
        },
        client,
      );
      try {
        return await work(workspace, () => workspace.write(client, edits.queue, this.search_), client);
      } finally {
        workspace.close();
      }
    });
  }

  private async statsOf(scope: string | undefined): Promise<Map<string, ScopeStats>> {
    const result = await this.pool.query(
      `SELECT scope, status, core, type, origin, COUNT(*) AS count FROM memory_units ${scope === undefined ? '' : 'WHERE scope = $1'}
       GROUP BY scope, status, core, type, origin
       ORDER BY scope COLLATE "C", status COLLATE "C", core, type COLLATE "C", origin COLLATE "C"`,
      scope === undefined ? [] : [toPostgresText(scope)],
    );
    // In SQLite's GROUP BY order (byte order), so the counts' keys come in the same order from either engine.
    const byScope = new Map<string, ScopeStats>();
    for (const raw of result.rows) {
      const row = statsRowSchema.parse(raw);
      const name = fromPostgresText(row.scope);
      const stats = byScope.get(name) ?? emptyScopeStats(name);
      byScope.set(name, stats);
      countInStats(stats, row);
    }
    return byScope;
  }
}
