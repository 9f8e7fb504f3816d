import type pg from 'pg';
import { MemoryStore } from '../../memory/store.js';
import type { Db } from '../database.js';
import { PgMemorySearch, type IndexEntry } from './memory-search.js';

/** Units whose entries are built and written together (each entry is a few hundred tokens). */
const BATCH = 500;

/**
 * After an import has copied memory_units, the team store's keyword index gets an entry for each
 * copied unit, built exactly as the personal store builds its own (so a unit is found by the same
 * words in both), inside the import's transaction: rows and their entries land together or not at all.
 * In a merge, a unit whose sequence the team store already gave to another unit was skipped by the
 * copy, and its entry is skipped too (that sequence's entry belongs to the unit that holds it).
 * Returns how many entries were written.
 */
export async function indexImportedMemories(sqlite: Db, pool: pg.Pool, client: pg.PoolClient): Promise<number> {
  const store = new MemoryStore(sqlite);
  const search = new PgMemorySearch(pool);
  const units = sqlite.prepare<[], { rowid: number; id: string; status: string }>('SELECT rowid, id, status FROM memory_units ORDER BY rowid').all();
  let indexed = 0;
  for (let start = 0; start < units.length; start += BATCH) {
    const batch = units.slice(start, start + BATCH);
    const held = await client.query<{ rowid: string; id: string }>('SELECT rowid, id FROM memory_units WHERE rowid = ANY($1::bigint[])', [
      batch.map((unit) => unit.rowid),
    ]);
    const holder = new Map(held.rows.map((row) => [Number(row.rowid), row.id]));
    const entries: IndexEntry[] = [];
    for (const unit of batch) {
      if (holder.get(unit.rowid) !== unit.id) continue;
      const entry = store.indexEntry(unit.id);
      if (entry) entries.push({ ...entry, id: unit.id, active: unit.status === 'active' });
    }
    await search.index(entries, client);
    indexed += entries.length;
  }
  return indexed;
}
