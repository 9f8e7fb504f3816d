import type pg from 'pg';
import { z } from 'zod';
import { MemoryStore } from '../../memory/store.js';
import type { MemoryDraft, MemoryUnit } from '../../memory/types.js';
import { openDatabase, type Db } from '../database.js';
import { PgMemorySearch } from './memory-search.js';
import { unitOfRow } from './memory-units.js';
import { lockScope } from './memory-workspace.js';
import { toPostgresText } from './text.js';
import { inTransaction } from './transaction.js';
import type { MemoryUnitWriter } from '../ports.js';

/**
 * Adds memory units to the team store: the row and its keyword index entry in one transaction (the
 * trigger of migration 22 then tells every node). The row and entry are built by the SQLite store
 * itself, in a private in-memory database, so a unit is cleaned (secrets redacted, injections
 * flagged), tokenised and indexed exactly as a personal install would; only its sequence is the
 * team store's.
 *
 * Not here: raw turns are not linked to the raw turn before them (no neighbour credits), and search
 * keys in the team's languages are added later by the memory.search_keys job (PgMemoryApi queues it).
 */
export class PgMemoryWriter implements MemoryUnitWriter {
  private scratch: { db: Db; store: MemoryStore } | undefined;
  private readonly search: PgMemorySearch;

  constructor(
    private readonly pool: pg.Pool,
    /** Run in the transaction that adds a unit (a node queues the unit's embedding there). */
    private readonly added?: (client: pg.PoolClient) => Promise<void>,
  ) {
    this.search = new PgMemorySearch(pool);
  }

  /** Adds one unit; returns it as stored (undefined: a raw turn with this raw key is already there). */
  async add(draft: MemoryDraft, options: { rawKey?: string; id?: string } = {}): Promise<MemoryUnit | undefined> {
    const { db, store } = this.scratchStore();
    const built = store.add(draft, options);
    if (!built) return undefined;
    try {
      const row = z.record(z.string(), z.unknown()).parse(db.prepare('SELECT * FROM memory_units WHERE id = ?').get(built.id));
      const entry = store.indexEntry(built.id)!;
      const columns = Object.keys(row).filter((column) => column !== 'rowid');
      const values = columns.map((column) => (typeof row[column] === 'string' ? toPostgresText(row[column]) : row[column]));
      return await inTransaction(this.pool, async (client) => {
        // After the scope's memory jobs: a rule added here and one a turn states at the same moment are seen by each other.
        await lockScope(client, draft.scope);
        const inserted = await client.query(
          `INSERT INTO memory_units (${columns.join(', ')}) VALUES (${columns.map((_, index) => `$${index + 1}`).join(', ')})
           ON CONFLICT (raw_key) DO NOTHING RETURNING *`,
          values,
        );
        if (inserted.rows.length === 0) return undefined;
        const unit = unitOfRow(inserted.rows[0]);
        await this.search.index([{ ...entry, sequence: unit.sequence, previous: null, id: unit.id, active: true }], client);
        await this.added?.(client);
        return unit;
      });
    } finally {
      // The scratch database only builds rows: it keeps none.
      store.delete(built.id);
    }
  }

  close(): void {
    this.scratch?.db.close();
    this.scratch = undefined;
  }

  private scratchStore(): { db: Db; store: MemoryStore } {
    if (!this.scratch) {
      const db = openDatabase(':memory:');
      this.scratch = { db, store: new MemoryStore(db) };
    }
    return this.scratch;
  }
}

/** One unit into the team store (see PgMemoryWriter). */
export async function addPgMemory(pool: pg.Pool, draft: MemoryDraft, options: { rawKey?: string; id?: string } = {}): Promise<MemoryUnit | undefined> {
  const writer = new PgMemoryWriter(pool);
  try {
    return await writer.add(draft, options);
  } finally {
    writer.close();
  }
}
