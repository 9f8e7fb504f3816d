import type pg from 'pg';
import type { Logger } from '../../logging/index.js';
import { MemoryRetriever } from '../../memory/retrieval.js';
import type { MemoryDraft, MemoryHit, MemoryType, MemoryUnit } from '../../memory/types.js';
import { MemoryError } from '../../errors.js';
import { SEARCH_KEYS_JOB } from '../../memory/service.js';
import type { PgJobQueue } from './job-queue.js';
import { forgetPgUnit } from './forget-scope.js';
import { PgMemorySearch } from './memory-search.js';
import { unitOfRow } from './memory-units.js';
import { PgMemoryWriter } from './memory-writer.js';
import { pgRecallStore } from './recall-store.js';
import { ReplayedReads } from './replayed-reads.js';
import { inTransaction } from './transaction.js';

/** Search over HTTP finds what recall finds, down to this relevance (as the personal store's search). */
const SEARCH_MIN_RELEVANCE = 0.15;

/**
 * The memory HTTP routes' reads and writes on a node of a team store: a unit by id, search (the
 * personal store's recall code over the team store's index, as the node's memory section runs
 * it), adding a unit (PgMemoryWriter: row and index entry in one transaction) and forgetting one
 * (forget-scope.ts). Who may reach
 * which scope is the routes' business (proxy/memory-routes.ts), the same on both engines.
 */
export class PgMemoryApi {
  private readonly search_: PgMemorySearch;
  private readonly writer: PgMemoryWriter;

  constructor(
    private readonly pool: pg.Pool,
    private readonly logger: Logger,
    /** Where a unit added here queues its search keys in the team's languages (as every change does on SQLite). */
    private readonly queue?: PgJobQueue,
  ) {
    this.search_ = new PgMemorySearch(pool);
    this.writer = new PgMemoryWriter(pool);
  }

  async get(id: string): Promise<MemoryUnit | undefined> {
    const result = await this.pool.query('SELECT * FROM memory_units WHERE id = $1', [id]);
    return result.rows[0] === undefined ? undefined : unitOfRow(result.rows[0]);
  }

  async search(request: { scope: string; query: string; limit: number; types?: MemoryType[]; includeSuperseded?: boolean }): Promise<MemoryHit[]> {
    const reads = new ReplayedReads();
    const retriever = new MemoryRetriever(pgRecallStore(reads, this.search_, this.pool), undefined, this.logger, 'keyword');
    return reads.run(() =>
      retriever.recall({
        scope: request.scope,
        query: request.query,
        limit: request.limit,
        ...(request.types ? { types: request.types } : {}),
        includeInactive: request.includeSuperseded ?? false,
        minRelevance: SEARCH_MIN_RELEVANCE,
      }),
    );
  }

  async add(draft: MemoryDraft): Promise<MemoryUnit> {
    const unit = await this.writer.add(draft);
    if (!unit) throw new MemoryError('the memory could not be stored', 'memory_not_stored');
    await this.queue?.enqueue(SEARCH_KEYS_JOB, {}, { dedupeKey: SEARCH_KEYS_JOB, delayMs: 2_000 });
    return unit;
  }

  /** Forgets a unit for good: row, index entry, vector, and its text in the turns it came from. */
  forget(id: string): Promise<MemoryUnit | undefined> {
    return inTransaction(this.pool, (client) => forgetPgUnit(this.pool, client, id));
  }

  close(): void {
    this.writer.close();
  }
}
