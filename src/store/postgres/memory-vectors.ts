import type pg from 'pg';
import { z } from 'zod';
import type { EmbeddingClient } from '../../embeddings/index.js';
import type { Logger } from '../../logging/index.js';
import { MemoryRetriever, type MemoryRetrievalMode, type Neighbour, type RecallRequest, type RecallStore, type RecallVectors } from '../../memory/retrieval.js';
import type { MemoryHit } from '../../memory/types.js';
import type { GlossaryLanguage } from '../../text/index.js';
import { EMBED_JOB } from '../../memory/service.js';
import type { PgJobQueue, Queryable } from './job-queue.js';
import { unitsBySequence } from './memory-units.js';
import type { ReplayedReads } from './replayed-reads.js';
import { inTransaction, setState } from './transaction.js';

/**
 * Memory vectors in the team store, with pgvector. Each unit's unit-length vector is a row of
 * memory_vectors (REAL[], the table of version 16); pgvector's part is the nearest-neighbour index,
 * an HNSW index on the expression `embedding::vector(N)`. N is fixed by the first vector stored
 * (recorded with the model under the state key SQLite uses, so an imported store keeps its
 * record), as a personal install makes its vec0 table. The index is also the dimension check: a
 * vector of another length fails its cast, so it cannot be written.
 *
 * HNSW rather than ivfflat: ivfflat picks its list centres from the rows present when it is built,
 * and this index is built when the first vectors arrive, on an almost empty table; HNSW needs no
 * training, takes inserts as they come, and answers with better recall at the same speed.
 *
 * A query the index cannot answer exactly (a small scope among big ones, which the index's
 * candidates may miss) costs recall quality, not correctness: keywords still rank.
 */

/** The state key of the model and dimension vectors were made with (as SQLite's MemoryVectors keeps it): `model|dimensions`. */
export const VECTORS_MODEL_KEY = 'memory.vectors.model';
const INDEX = 'memory_vectors_hnsw';
/** Serialises the embed jobs' writes of the model record and the index ('mcve' in ASCII). */
const VECTORS_LOCK = 0x6d637665;
/** Units embedded per job (the personal install's batch); a job that fills it queues the next. */
export const EMBED_BATCH = 64;
/** The longest a job's recall waits for its query's vector (the personal install's). */
const QUERY_TIMEOUT_MS = 1_500;
/** How often a node re-reads which model the store's vectors are of (another node may have stored the first). */
const MODEL_REFRESH_MS = 30_000;

export interface VectorModel {
  readonly model: string;
  readonly dimensions: number;
}

const stateRow = z.object({ value: z.string() });

/** The model and dimension the store's vectors are of; undefined before the first vector. */
export async function readVectorModel(db: Queryable): Promise<VectorModel | undefined> {
  const row: unknown = (await db.query('SELECT value FROM state WHERE key = $1', [VECTORS_MODEL_KEY])).rows[0];
  if (row === undefined) return undefined;
  const { value } = stateRow.parse(row);
  const cut = value.lastIndexOf('|');
  const dimensions = Number(value.slice(cut + 1));
  return cut > 0 && Number.isInteger(dimensions) && dimensions > 0 ? { model: value.slice(0, cut), dimensions } : undefined;
}

/** `embedding::vector(N)`: the indexed expression; a query must spell it the same to use the index. */
const asVector = (dimensions: number, column = 'embedding') => `(${column}::vector(${Math.trunc(dimensions)}))`;

/**
 * Records `model` as the vectors' model, in the caller's transaction. A different model (or
 * dimension) than the recorded one drops every vector and the index, as SQLite does: vectors of two
 * models are not comparable. Then makes sure the index exists (an import copies vectors, not it).
 */
async function recordModel(client: pg.PoolClient, wanted: VectorModel): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock($1)', [VECTORS_LOCK]);
  const recorded = await readVectorModel(client);
  if (!recorded || recorded.model !== wanted.model || recorded.dimensions !== wanted.dimensions) {
    if (recorded || (await client.query('SELECT 1 FROM memory_vectors LIMIT 1')).rows.length > 0) {
      await client.query(`DROP INDEX IF EXISTS ${INDEX}`);
      await client.query('DELETE FROM memory_vectors');
    }
    await setState(client, VECTORS_MODEL_KEY, `${wanted.model}|${wanted.dimensions}`);
  }
  await createIndex(client, wanted.dimensions);
}

/** The HNSW index, if missing; under the caller's VECTORS_LOCK (IF NOT EXISTS alone is not safe against a concurrent create). */
async function createIndex(client: pg.PoolClient, dimensions: number): Promise<void> {
  await client.query(`CREATE INDEX IF NOT EXISTS ${INDEX} ON memory_vectors USING hnsw (${asVector(dimensions)} vector_cosine_ops)`);
}

const pendingRow = z.object({ rowid: z.coerce.number(), content: z.string() });

/**
 * The team store's memory vectors as one node uses them: whether they are in use (pgvector
 * installed and an embeddings endpoint configured, decided at the node's start), the embed job's
 * reads and writes, and nearest neighbours for recall.
 */
export class PgMemoryVectors {
  private active = false;
  private recorded: VectorModel | undefined;
  private readAt = 0;
  private reading: Promise<void> | undefined;

  constructor(
    private readonly pool: pg.Pool,
    readonly client: EmbeddingClient,
    private readonly logger: Logger,
    /** The longest a search waits for its query's vector (`metaclaw memory search` waits longer than a node: a person waits, not an agent). */
    private readonly queryTimeoutMs = QUERY_TIMEOUT_MS,
  ) {}

  /**
   * Vectors are written and read from now on (pgvector is installed); reads which model they are of.
   * `makeIndex: false` (the CLI): the index is left to the nodes, which make it at start.
   */
  async enable(options: { makeIndex?: boolean } = {}): Promise<void> {
    this.active = true;
    await this.refresh();
    // Vectors an import brought (with their model record) have no index until one is made here: no embed job may ever run for them.
    const recorded = this.recorded;
    if (recorded?.model === this.client.model && options.makeIndex !== false)
      await inTransaction(this.pool, async (client) => {
        await client.query('SELECT pg_advisory_xact_lock($1)', [VECTORS_LOCK]);
        await createIndex(client, recorded.dimensions);
      });
  }

  /** Whether units are embedded: pgvector is installed and embeddings are configured. */
  get enabled(): boolean {
    return this.active;
  }

  /** Whether recall can use vectors: enabled and the store's vectors are of this node's model. */
  get ready(): boolean {
    if (!this.active) return false;
    // Re-read now and then, in the background: the first vectors may come from another node.
    if (Date.now() - this.readAt > MODEL_REFRESH_MS) void this.refresh().catch(() => undefined);
    return this.recorded?.model === this.client.model;
  }

  /** What /status says: the model and dimension vectors are of, once there are any. */
  get model(): VectorModel | undefined {
    return this.recorded;
  }

  /** Queues the embed job in `db`'s transaction (once: a queued one is enough) when vectors are in use. */
  async queueEmbed(queue: PgJobQueue, db: Queryable, delayMs = 500): Promise<void> {
    if (this.active) await queue.enqueue(EMBED_JOB, {}, { dedupeKey: EMBED_JOB, delayMs, rerunIfRunning: true }, db);
  }

  /** Active units without a vector, oldest first. */
  async pending(limit: number): Promise<Array<z.infer<typeof pendingRow>>> {
    const result = await this.pool.query(
      `SELECT u.rowid, u.content FROM memory_units u
       WHERE u.status = 'active' AND NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.rowid = u.rowid)
       ORDER BY u.rowid LIMIT $1`,
      [limit],
    );
    return result.rows.map((row) => pendingRow.parse(row));
  }

  /**
   * Writes vectors of units (by sequence), in the caller's transaction: records the model first. A
   * unit forgotten or edited while it was embedded is skipped (an edit queues another round); the scope is the unit's own.
   */
  async write(client: pg.PoolClient, vectors: ReadonlyArray<{ sequence: number; content: string; vector: Float32Array }>): Promise<number> {
    if (vectors.length === 0) return 0;
    const dimensions = vectors[0]!.vector.length;
    await recordModel(client, { model: this.client.model, dimensions });
    let written = 0;
    for (const { sequence, content, vector } of vectors) {
      const result = await client.query(
        `INSERT INTO memory_vectors (rowid, scope, embedding) SELECT rowid, scope, $2::real[] FROM memory_units WHERE rowid = $1 AND content = $3
         ON CONFLICT (rowid) DO UPDATE SET scope = excluded.scope, embedding = excluded.embedding`,
        [sequence, Array.from(vector), content],
      );
      written += result.rowCount ?? 0;
    }
    this.recorded = { model: this.client.model, dimensions };
    return written;
  }

  /** The `limit` units of `scope` nearest to `vector` by cosine, nearest first; `db`: the request path's pool, or the node's. */
  async nearest(scope: string, vector: Float32Array, limit: number, db: Queryable = this.pool): Promise<Neighbour[]> {
    const recorded = this.recorded;
    if (!recorded || recorded.dimensions !== vector.length) return [];
    const distance = `${asVector(recorded.dimensions)} <=> ${asVector(recorded.dimensions, '$2::real[]')}`;
    const result = await db.query(`SELECT rowid, 1 - (${distance}) AS cosine FROM memory_vectors WHERE scope = $1 ORDER BY ${distance} LIMIT $3`, [
      scope,
      Array.from(vector),
      limit,
    ]);
    const rows = result.rows.map((row) => z.object({ rowid: z.coerce.number(), cosine: z.coerce.number() }).parse(row));
    const units = await unitsBySequence(
      db,
      rows.map((row) => row.rowid),
    );
    return rows.flatMap((row) => {
      const unit = units.get(row.rowid);
      return unit ? [{ unit, cosine: row.cosine }] : [];
    });
  }

  /**
   * The vectors as one recall sees them, over its ReplayedReads. On the request path the query's
   * vector is only used when it is already known (the embeddings client embeds an unknown one in the
   * background for the next request), exactly as the personal install does: the request never waits
   * on the embeddings endpoint, only on the database, within the recall's own deadline.
   */
  forRecall(reads: ReplayedReads, db: Queryable = this.pool): RecallVectors {
    return {
      ready: this.ready,
      nearestReady: (scope, query, limit, onError) => {
        const vector = this.client.readyQuery(query, onError);
        if (!vector) return undefined;
        return reads.read(JSON.stringify(['nearest', scope, query, limit]), () => this.nearest(scope, vector, limit, db));
      },
      nearest: async (scope, query, limit) => this.nearest(scope, await this.client.embedQuery(query, AbortSignal.timeout(this.queryTimeoutMs)), limit, db),
    };
  }

  /**
   * Embeds `query` into the client's cache (for a job's recall, off the request path); a failure
   * leaves keywords to answer, and is returned as why, on one line (undefined: the vector is known,
   * or not needed).
   */
  async warm(query: string): Promise<string | undefined> {
    if (!this.ready || query === '') return undefined;
    return this.client.embedQuery(query, AbortSignal.timeout(this.queryTimeoutMs)).then(
      () => undefined,
      (error: unknown) => {
        this.logger.warn({ err: (error as Error).message }, 'memory query embedding failed; recalling by keywords');
        return `the query could not be embedded by ${this.client.model} at ${this.client.endpoint.apiBase} (${this.failureText(error)})`;
      },
    );
  }

  /**
   * Why recall here is by keywords although vectors are in use: the store's vectors are of another
   * model than this process embeds with. Undefined when they are of its model, or there are none yet.
   */
  get otherModel(): string | undefined {
    const recorded = this.recorded;
    if (!this.active || !recorded || recorded.model === this.client.model) return undefined;
    return `the store's vectors are of ${recorded.model}, and memory.embedding.model here is ${this.client.model} (every node and the CLI should use one model)`;
  }

  /** An embeddings failure on one line: a timeout named, and the cause that makes "fetch failed" mean something. */
  private failureText(error: unknown): string {
    if (!(error instanceof Error)) return String(error).slice(0, 300);
    if (error.name === 'TimeoutError') return `no answer within ${this.queryTimeoutMs / 1000} s`;
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return `${error.message}${cause}`.replace(/\s+/g, ' ').trim().slice(0, 300);
  }

  private refresh(): Promise<void> {
    this.reading ??= readVectorModel(this.pool)
      .then((recorded) => {
        this.recorded = recorded;
        this.readAt = Date.now();
      })
      .finally(() => {
        this.reading = undefined;
      });
    return this.reading;
  }
}

export interface SearchRecall {
  readonly reads: ReplayedReads;
  readonly store: RecallStore;
  readonly vectors: PgMemoryVectors | undefined;
  readonly mode: MemoryRetrievalMode;
  readonly logger: Logger;
  readonly languages?: () => readonly GlossaryLanguage[];
  /** Told why, when vectors are in use but this recall is by keywords alone (the CLI prints it). */
  readonly keywordsOnly?: (why: string) => void;
}

/**
 * Recall off the request path (a job's, the search route's, `metaclaw memory search`'s), over one
 * ReplayedReads. With vectors, the query is embedded first, waiting briefly as a personal install's
 * search does (a failure leaves keywords, and `keywordsOnly` is told why, as when the store's
 * vectors are of another model), so recall finds the query's
 * vector known and reads its neighbours as one more replayed read; without, keyword recall.
 */
export async function searchRecall(recall: SearchRecall, request: RecallRequest): Promise<MemoryHit[]> {
  const { reads, store, vectors, logger, languages } = recall;
  const byKeywords = () => {
    const retriever = new MemoryRetriever(store, undefined, logger, 'keyword', languages);
    return reads.run(() => retriever.recall(request));
  };
  if (!vectors?.ready) {
    const other = vectors?.otherModel;
    if (other) recall.keywordsOnly?.(other);
    return byKeywords();
  }
  // Without the query's vector, recall would only start embedding it again in the background: keywords answer now.
  const failure = await vectors.warm(request.query);
  if (failure) {
    recall.keywordsOnly?.(failure);
    return byKeywords();
  }
  const retriever = new MemoryRetriever(store, vectors.forRecall(reads), logger, recall.mode, languages);
  return reads.run(() => retriever.recall({ ...request, onRequestPath: true }));
}
