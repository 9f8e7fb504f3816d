import * as sqliteVec from 'sqlite-vec';
import { vectorToBlob, type EmbeddingClient } from '../embeddings/index.js';
import type { Logger } from '../logging/index.js';
import { StateStore, type Db } from '../store/index.js';
import type { MemoryStore } from './store.js';
import type { MemoryUnit } from './types.js';

const MODEL_KEY = 'memory.vectors.model';

/**
 * Memory embeddings in sqlite-vec (a `vec0` table partitioned by scope, so a KNN never crosses
 * scopes). Created once the first vector tells the dimension; rebuilt if the model changes.
 * Units are embedded in the background; a unit without a vector is still found by keywords.
 */
export class MemoryVectors {
  private readonly state: StateStore;
  private dimensions: number | undefined;
  private readonly statements;
  /** Statements on the vec0 table, prepared once it exists (dropped and made again when the model changes). */
  private vecStatements: ReturnType<MemoryVectors['prepareVecStatements']> | undefined;

  constructor(
    private readonly db: Db,
    private readonly store: MemoryStore,
    private readonly client: EmbeddingClient,
    private readonly logger: Logger,
    private readonly options: {
      /** How long `nearest` waits for the query's vector. */
      queryTimeoutMs?: number;
      /**
       * A process that only searches (the CLI, MCP) beside a running proxy: vectors of another model
       * than this one are left as they are (unused here), never dropped under the proxy that wrote them.
       */
      searchOnly?: boolean;
    } = {},
  ) {
    sqliteVec.load(db);
    this.state = new StateStore(db);
    db.exec('CREATE TABLE IF NOT EXISTS memory_vec_index (rowid INTEGER PRIMARY KEY, scope TEXT NOT NULL)');
    this.statements = {
      pending: db.prepare<[number], { rowid: number; scope: string; content: string }>(
        "SELECT u.rowid AS rowid, u.scope AS scope, u.content AS content FROM memory_units u LEFT JOIN memory_vec_index v ON v.rowid = u.rowid WHERE v.rowid IS NULL AND u.status = 'active' LIMIT ?",
      ),
      contentOf: db.prepare<[number], { content: string }>('SELECT content FROM memory_units WHERE rowid = ?'),
      mark: db.prepare<[number, string]>('INSERT OR REPLACE INTO memory_vec_index (rowid, scope) VALUES (?, ?)'),
    };
    const stored = this.state.get(MODEL_KEY);
    if (stored) {
      const [model, dimensions] = stored.split('|');
      if (model === client.model) this.dimensions = Number(dimensions);
      else if (!options.searchOnly) this.reset();
    }
    store.onDelete((rowid) => this.remove(rowid));
    // An edited (or scrubbed) text is embedded again: the old vector would find it by what it no longer says.
    store.onRewrite((rowid) => this.remove(rowid));
  }

  get ready(): boolean {
    return this.dimensions !== undefined;
  }

  /** Embeds up to `limit` units that have no vector yet; returns how many and the tokens spent. */
  async embedPending(limit: number, signal?: AbortSignal): Promise<{ embedded: number; tokens: number }> {
    const pending = this.statements.pending.all(limit);
    if (pending.length === 0) return { embedded: 0, tokens: 0 };
    const { vectors, tokens } = await this.client.embed(
      pending.map((row) => row.content.slice(0, 4_000)),
      signal,
    );
    const { insert } = this.ensureTable(vectors[0]!.length);
    this.db
      .transaction(() => {
        pending.forEach((row, index) => {
          // Forgotten or edited while we were embedding: the edit queued another round, which embeds the new text.
          if (this.statements.contentOf.get(row.rowid)?.content !== row.content) return;
          insert.run(BigInt(row.rowid), row.scope, vectorToBlob(vectors[index]!));
          this.statements.mark.run(row.rowid, row.scope);
        });
      })
      .immediate();
    return { embedded: pending.length, tokens };
  }

  /** The units of `scope` closest to `query`, with cosine similarity (waits for the query's vector: for searches, not the request path). */
  async nearest(scope: string, query: string, limit: number): Promise<Array<{ unit: MemoryUnit; cosine: number }>> {
    if (!this.dimensions) return [];
    const vector = await this.client.embedQuery(query, AbortSignal.timeout(this.options.queryTimeoutMs ?? 1_500));
    return this.neighbours(scope, vector, limit);
  }

  /** As `nearest` without waiting: undefined while the query's vector is unknown (it is embedded in the background). */
  nearestReady(scope: string, query: string, limit: number, onError: (error: Error) => void): Array<{ unit: MemoryUnit; cosine: number }> | undefined {
    if (!this.dimensions) return undefined;
    const vector = this.client.readyQuery(query, onError);
    return vector ? this.neighbours(scope, vector, limit) : undefined;
  }

  private neighbours(scope: string, vector: Float32Array, limit: number): Array<{ unit: MemoryUnit; cosine: number }> {
    if (!this.dimensions) return []; // the model changed while the query was embedded
    const rows = this.vec().nearest.all(vectorToBlob(vector), limit, scope);
    const results: Array<{ unit: MemoryUnit; cosine: number }> = [];
    for (const row of rows) {
      const unit = this.store.byRowid(row.rowid);
      // vec0's default distance is L2; for unit vectors, cosine = 1 - d²/2.
      if (unit) results.push({ unit, cosine: 1 - (row.distance * row.distance) / 2 });
    }
    return results;
  }

  private ensureTable(dimensions: number): ReturnType<MemoryVectors['prepareVecStatements']> {
    if (this.dimensions === dimensions) return this.vec();
    if (this.dimensions !== undefined) this.reset();
    this.db.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS memory_vec USING vec0(scope text partition key, embedding float[${dimensions}])`);
    this.dimensions = dimensions;
    this.state.set(MODEL_KEY, `${this.client.model}|${dimensions}`);
    return this.vec();
  }

  /** The vec0 statements; only called while the table exists (`dimensions` is set). */
  private vec(): ReturnType<MemoryVectors['prepareVecStatements']> {
    return (this.vecStatements ??= this.prepareVecStatements());
  }

  private prepareVecStatements() {
    return {
      insert: this.db.prepare<[bigint, string, Buffer]>('INSERT INTO memory_vec (rowid, scope, embedding) VALUES (?, ?, ?)'),
      nearest: this.db.prepare<[Buffer, number, string], { rowid: number; distance: number }>(
        'SELECT rowid, distance FROM memory_vec WHERE embedding MATCH ? AND k = ? AND scope = ?',
      ),
    };
  }

  /** A different model (or dimension): old vectors are meaningless, so all units are embedded again. */
  private reset(): void {
    this.logger.info({ model: this.client.model }, 'embedding model changed; memory vectors will be rebuilt');
    this.vecStatements = undefined;
    this.db.exec('DROP TABLE IF EXISTS memory_vec; DELETE FROM memory_vec_index;');
    this.dimensions = undefined;
  }

  /** Whatever model wrote it: a search-only process (another model, no `dimensions`) forgets too. */
  private remove(rowid: number): void {
    eraseVector(this.db, rowid);
  }
}

/**
 * Without embeddings here (keyword retrieval, or a CLI run whose config names none), vectors an
 * earlier mode or another process stored still go with their unit when it is forgotten or its text
 * changes: no vector of a forgotten text stays in the file.
 */
export function eraseStoredVectors(db: Db, store: MemoryStore): void {
  if (!vectorTableExists(db)) return;
  sqliteVec.load(db);
  store.onDelete((rowid) => eraseVector(db, rowid));
  store.onRewrite((rowid) => eraseVector(db, rowid));
}

/** A unit's vector and its mark, gone. Prepared each time: forgets are rare, and the table comes and goes with the model. */
function eraseVector(db: Db, rowid: number): void {
  if (vectorTableExists(db)) db.prepare<[bigint]>('DELETE FROM memory_vec WHERE rowid = ?').run(BigInt(rowid));
  db.prepare<[number]>('DELETE FROM memory_vec_index WHERE rowid = ?').run(rowid);
}

function vectorTableExists(db: Db): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'memory_vec'").get() !== undefined;
}
