import { jaccard } from '../text/index.js';
import type { MemoryStore } from './store.js';

export interface HousekeepingReport {
  consolidated: number;
  decayed: number;
  deleted: number;
  capped: number;
}

export const DAY = 86_400_000;
/** Units of one type whose terms overlap this much say the same thing. */
const NEAR_DUPLICATE = 0.85;
/** Episodic units nobody recalled for this long lose importance. */
export const STALE_DAYS = 30;
/** Units of a scope compared for near-duplicates (its newest learned ones). */
export const CONSOLIDATION_CANDIDATES = 2_000;

export interface HousekeepingOptions {
  retentionDays: number;
  maxUnitsPerScope: number;
  /** memory.auto_consolidate: merge near-duplicates and decay stale episodes. */
  consolidate: boolean;
  now: number;
}

/**
 * Keeps memory useful and bounded: near-duplicates consolidated (superseded, linked, not erased),
 * stale unused episodic units decayed (both only when `consolidate`), raw turns and superseded units
 * past retention deleted, and every scope held under its cap (the least useful episodic units go first).
 */
export function housekeep(store: MemoryStore, options: HousekeepingOptions): HousekeepingReport {
  const report: HousekeepingReport = { consolidated: 0, decayed: 0, deleted: 0, capped: 0 };
  if (options.consolidate) {
    for (const scope of store.scopes()) report.consolidated += consolidate(store, scope);
    report.decayed = store.decayStale(options.now - STALE_DAYS * DAY);
  }
  if (options.retentionDays > 0) {
    const cutoff = options.now - options.retentionDays * DAY;
    report.deleted = store.deleteMany(store.expiredIds(cutoff, cutoff));
  }
  const excess = store.overCap(options.maxUnitsPerScope);
  report.capped = store.deleteMany(excess);
  report.deleted += report.capped;
  return report;
}

function consolidate(store: MemoryStore, scope: string): number {
  let count = 0;
  for (const { loser, winner } of nearDuplicates(store.consolidationCandidates(scope, CONSOLIDATION_CANDIDATES))) if (store.supersede(loser, winner)) count++;
  return count;
}

/** A learned unit as consolidation compares it. */
export interface ConsolidationCandidate {
  unit: { id: string; type: string; core: boolean; importance: number };
  terms: ReadonlySet<string>;
}

/**
 * Near-duplicates among a scope's active learned units (newest first): which one each superseded
 * unit gives way to. The newer one stays unless the older matters more. Both stores supersede
 * these pairs (SQLite here, the team store in store/postgres/memory-housekeeping.ts).
 */
export function nearDuplicates(candidates: readonly ConsolidationCandidate[]): Array<{ loser: string; winner: string }> {
  const superseded = new Set<string>();
  const pairs: Array<{ loser: string; winner: string }> = [];
  for (let index = 0; index < candidates.length; index++) {
    const keep = candidates[index]!;
    if (superseded.has(keep.unit.id)) continue;
    for (let other = index + 1; other < candidates.length; other++) {
      const candidate = candidates[other]!;
      if (superseded.has(candidate.unit.id) || candidate.unit.type !== keep.unit.type || candidate.unit.core !== keep.unit.core) continue;
      if (jaccard(keep.terms, candidate.terms) < NEAR_DUPLICATE) continue;
      const [winner, loser] = candidate.unit.importance > keep.unit.importance ? [candidate, keep] : [keep, candidate];
      superseded.add(loser.unit.id);
      pairs.push({ loser: loser.unit.id, winner: winner.unit.id });
      if (loser === keep) break;
    }
  }
  return pairs;
}
