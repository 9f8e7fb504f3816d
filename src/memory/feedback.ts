import type { Candidate, KeywordSearch, MemoryStore } from './store.js';
import { idfOf } from './store.js';
import type { MemoryUnit } from './types.js';

/**
 * Pseudo-relevance feedback (RM3-style, over term sets): the units a first keyword pass matches
 * best are taken as relevant, and their discriminative words become a second, lighter query whose
 * matches add to a unit's score. "Which tour is Marek on?" finds "Marek plays bass in the Lumen
 * Quartet", and of two turns that mention a tour, the one about the Lumen Quartet's then ranks first.
 * Local arithmetic over stored terms: no model, no network.
 *
 * Tuned on the tuned and dev histories (bench/memory-recall.ts): recall@5 +3 and +6 points on the
 * two dev ones, @10 +1 and +1, the tuned one unchanged. Feedback from every first-pass unit, or a
 * weight of 0.3 and more, cost points: a question whose best matches are wrong ("primary care
 * physician" matching "the primary replica") drifts further towards them.
 */

/** How many first-pass units lend their words. */
const FEEDBACK_UNITS = 3;
/** A unit lends its words only when it matched at least this share of the query's IDF mass… */
const FEEDBACK_COVERAGE = 0.4;
/** …and at least this share of the best first-pass match. */
const FEEDBACK_NEAR_BEST = 0.7;
/** Expansion terms added (5–30 tried; fewer lost a point on the long dev history). */
const EXPANSION_TERMS = 20;
/** What a unit holding every expansion term gains, as a share of the query's coverage (0.1–0.5 tried). */
export const EXPANSION_WEIGHT = 0.2;

export interface FeedbackUnit {
  /** The unit's own indexed terms. */
  terms: readonly string[];
  /** How strongly the first pass believed in it (its matched IDF). */
  weight: number;
}

/** Expansion terms with their weights (summing to 1), and how much of each weight each feedback unit gave (by unit id). */
export interface Expansion {
  weights: ReadonlyMap<string, number>;
  lent: ReadonlyMap<string, ReadonlyMap<string, number>>;
}

/** The expansion (none when no unit lent a word); the search with its holders merged in. */
export interface Feedback {
  search: KeywordSearch;
  expansion: Expansion;
  /** The search for the expansion's holders alone. */
  holders?: KeywordSearch;
}

const NO_EXPANSION: Expansion = { weights: new Map(), lent: new Map() };

/**
 * The expansion terms and their weights (summing to 1): each feedback unit votes for its terms in
 * proportion to its first-pass weight, and a term's votes are scaled by `rarity`, so words the
 * feedback units hold and most texts do not win over common ones.
 */
export function feedbackTerms(
  units: ReadonlyArray<FeedbackUnit & { id: string }>,
  exclude: ReadonlySet<string>,
  rarity: (term: string) => number,
  count: number,
): Expansion {
  const total = units.reduce((sum, unit) => sum + unit.weight, 0);
  if (total <= 0) return NO_EXPANSION;
  const votes = new Map<string, number>();
  for (const unit of units) for (const term of new Set(unit.terms)) if (!exclude.has(term)) votes.set(term, (votes.get(term) ?? 0) + unit.weight / total);
  const scored = [...votes]
    .map(([term, vote]) => [term, vote * rarity(term)] as const)
    .filter(([, value]) => value > 0)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, count);
  const sum = scored.reduce((acc, [, value]) => acc + value, 0);
  const weights = new Map(scored.map(([term, value]) => [term, value / sum]));
  const lent = new Map<string, Map<string, number>>();
  for (const unit of units) {
    const own = new Map<string, number>();
    for (const term of new Set(unit.terms)) if (weights.has(term)) own.set(term, ((unit.weight / total) * rarity(term)) / sum);
    lent.set(unit.id, own);
  }
  return { weights, lent };
}

/**
 * The first pass's confident units lend their words; the units holding those words (as written,
 * or in the turn next to them: no glosses or related words, which would double the cost) join the
 * candidates, and candidates already found learn which expansion terms they hold.
 */
export function withFeedback(
  store: Pick<MemoryStore, 'search' | 'unitTerms' | 'scopeSize'>,
  scope: string,
  query: { terms: readonly string[]; exclude: ReadonlySet<string> },
  first: KeywordSearch,
  options: {
    depth: number;
    includeInactive: boolean;
    eligible: (unit: MemoryUnit) => boolean;
    /** Inside the time the question names (see `confidentUnits`); absent when it names none. */
    within?: (unit: MemoryUnit) => boolean;
  },
  /** The feedback of a shallower pass over the same query: its best units, so its expansion, are these too. */
  shallower?: Feedback,
): Feedback {
  const none: Feedback = { search: first, expansion: NO_EXPANSION };
  if (shallower) {
    const { expansion, holders } = shallower;
    if (!holders) return none;
    // Read deeper from the ranking already made: no second ranking of the expansion's posting lists.
    const deeper =
      holders.deeper?.(options.depth) ?? store.search(scope, [...expansion.weights.keys()], options.depth, options.includeInactive, undefined, true);
    return merged(first, deeper, expansion);
  }
  const feedback = confidentUnits(first, query.terms, options.eligible, options.within);
  if (feedback.length === 0) return none;
  const stored = store.unitTerms(feedback.map((candidate) => candidate.unit.sequence));
  const size = store.scopeSize(scope);
  const expansion = feedbackTerms(
    feedback.map((candidate) => ({ id: candidate.unit.id, terms: stored.get(candidate.unit.sequence) ?? [], weight: candidate.bm25 })),
    query.exclude,
    // The background's sense of rarity is enough to choose (no posting-list reads); ranking uses the scope's own IDF.
    (term) => idfOf(term, 1, size),
    EXPANSION_TERMS,
  );
  if (expansion.weights.size === 0) return none;
  return merged(first, store.search(scope, [...expansion.weights.keys()], options.depth, options.includeInactive, undefined, true), expansion);
}

/**
 * The first pass's confident units (best first): its best matches that come near the best one and
 * cover enough of the query. When the question names a time, the best matches inside it, if any
 * is confident: ranking favours that time (retrieval.ts), so its words are what the question is
 * about. "Where did I travel last winter?" otherwise took its words from the first pass's best,
 * turns about moving flat in September, and "Greetings from Sapporo!", told a fortnight after "I
 * fly to Sapporo on February 17", gained nothing from it (dev history recall@5 / @10 84 / 91 →
 * 85 / 92; no other dev history moved across 5 or 10). Only a filter over candidates already read.
 */
function confidentUnits(
  first: KeywordSearch,
  terms: readonly string[],
  eligible: (unit: MemoryUnit) => boolean,
  within: ((unit: MemoryUnit) => boolean) | undefined,
): Candidate[] {
  let mass = 0;
  for (const term of terms) mass += first.idf.get(term) ?? 0;
  const confident = (candidates: readonly Candidate[]) => {
    const floor = Math.max(FEEDBACK_NEAR_BEST * (candidates[0]?.bm25 ?? 0), FEEDBACK_COVERAGE * mass);
    return candidates.filter((candidate) => candidate.bm25 > 0 && candidate.bm25 >= floor && eligible(candidate.unit)).slice(0, FEEDBACK_UNITS);
  };
  const inside = within ? confident(first.candidates.filter((candidate) => within(candidate.unit))) : [];
  return inside.length > 0 ? inside : confident(first.candidates);
}

function merged(first: KeywordSearch, second: KeywordSearch, expansion: Expansion): Feedback {
  const byId = new Map(first.candidates.map((candidate) => [candidate.unit.id, candidate]));
  const all = [...first.candidates];
  for (const candidate of second.candidates) {
    const known = byId.get(candidate.unit.id);
    if (known) mergeHeld(known, candidate);
    else all.push(candidate);
  }
  return {
    search: { candidates: all, idf: new Map([...second.idf, ...first.idf]), unknown: new Set([...first.unknown, ...second.unknown]) },
    expansion,
    holders: second,
  };
}

/**
 * The share (0..1) of the expansion's IDF-weighted mass a unit holds (`holds`: how much of each term),
 * leaving out what the unit lent itself: a feedback unit gains only from words the other best
 * matches share with it, or else each would be raised by its own words, the wordiest most.
 */
export function expansionShare(expansion: Expansion, unitId: string, idf: (term: string) => number, holds: (term: string) => number): number {
  const own = expansion.lent.get(unitId);
  let mass = 0;
  let held = 0;
  for (const [term, weight] of expansion.weights) {
    mass += weight * idf(term);
    held += (weight - (own?.get(term) ?? 0)) * idf(term) * holds(term);
  }
  return mass > 0 ? Math.max(0, held / mass) : 0;
}

/** Expansion terms are never query terms, so adding them to a first-pass candidate's sets changes none of its query matches. */
function mergeHeld(into: Candidate, from: Candidate): void {
  for (const term of from.terms) into.terms.add(term);
  for (const term of from.related) into.related.add(term);
}
