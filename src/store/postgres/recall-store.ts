import type pg from 'pg';
import type { RecallStore } from '../../memory/retrieval.js';
import type { Candidate, KeywordSearch, MemoryStore } from '../../memory/store.js';
import type { MemoryUnit } from '../../memory/types.js';
import type { PgMemorySearch, UnitLookup } from './memory-search.js';
import { unitsBySequence, unitsInWindow, unitTerms } from './memory-units.js';
import type { ReplayedReads } from './replayed-reads.js';

/** What recall and the core block read from a store. */
export type PgRecallStore = RecallStore & Pick<MemoryStore, 'termWeights'>;

const key = (...parts: unknown[]) => JSON.stringify(parts);

/** A scope's size the caller already holds (the provider keeps it with the scope's rules): no read for it. */
export function knownScopeSize(reads: ReplayedReads, scope: string, size: number): void {
  reads.learn(key('size', scope), size);
}

/**
 * The questions recall and the core block ask MemoryStore, answered from the team store: each is a
 * read of one request's ReplayedReads, so the SQLite path's code runs unchanged over PostgreSQL.
 * Answers are those of the SQLite store's methods of the same name (see memory-units.ts and
 * memory-search.ts for how each is kept identical).
 */
export function pgRecallStore(reads: ReplayedReads, search: PgMemorySearch, pool: pg.Pool): PgRecallStore {
  return {
    search: (scope, terms, limit, includeInactive = false, translationWeights, asWritten = false) =>
      reads.read(key('search', scope, terms, limit, includeInactive, translationWeights ? [...translationWeights] : null, asWritten), async () => {
        // The units themselves are read where the search would read their ids and statuses: one round trip, not two.
        const units = new Map<number, MemoryUnit>();
        const lookup: UnitLookup = async (sequences, client) => {
          for (const [sequence, unit] of await unitsBySequence(client, sequences)) units.set(sequence, unit);
          return new Map([...units].map(([sequence, unit]) => [sequence, { id: unit.id, active: unit.status === 'active' }]));
        };
        const found = await search.search(scope, terms, limit, { includeInactive, translationWeights, asWritten, units: lookup });
        reads.learn(key('size', scope), found.size);
        const candidates = found.hits.map((hit): Candidate => ({
          unit: units.get(hit.sequence)!,
          terms: new Set(hit.matched),
          related: new Set(hit.related),
          partial: new Set(hit.partial),
          kindred: new Set(hit.kindred),
          session: new Set(hit.session),
          bm25: hit.weight,
        }));
        return { candidates, idf: found.idf, unknown: found.unknown } satisfies KeywordSearch;
      }),
    scopeSize: (scope) => reads.read(key('size', scope), () => search.scopeSize(scope)),
    unitTerms: (rowids) => reads.read(key('terms', rowids), () => unitTerms(pool, rowids)),
    inWindow: (scope, start, end, limit) => reads.read(key('window', scope, start, end, limit), () => unitsInWindow(pool, scope, start, end, limit)),
    termWeights: (scope, terms) => reads.read(key('weights', scope, terms), () => search.termWeights(scope, terms)),
  };
}
