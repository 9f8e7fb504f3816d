import { countTextTokens, keywordRelevance, rareTermIdf, tokenize, uniqueTerms, UNKNOWN_TERM_WEIGHT } from '../text/index.js';
import { coreLine, CORE_FRAME_TOKENS } from './render.js';
import type { MemoryStore } from './store.js';
import type { MemoryUnit } from './types.js';

/** A standing instruction with what choosing it needs: its terms and what its line costs. */
export interface CoreRule {
  unit: MemoryUnit;
  terms: ReadonlySet<string>;
  tokens: number;
}

/** The scope's standing instructions, as the core block weighs them (cached by the provider until the scope changes). */
export function coreRules(units: readonly MemoryUnit[]): { rules: CoreRule[]; tokens: number } {
  const rules = units.map((unit) => ({ unit, terms: new Set(tokenize(unit.content)), tokens: countTextTokens(coreLine(unit)) }));
  return { rules, tokens: CORE_FRAME_TOKENS + rules.reduce((sum, rule) => sum + rule.tokens, 0) };
}

/**
 * The standing instructions to show for one request. All of them when they fit the budget, in their
 * usual order (so the block stays the same from turn to turn). When they do not: pinned first, then
 * the rules relevant to this request (scored as recall scores memories against it), most relevant
 * first, then the others by importance, then the most recent: the rule this task needs is not
 * pushed out by newer ones about something else. The chosen keep their usual order.
 */
export function chooseCore(
  store: Pick<MemoryStore, 'termWeights' | 'scopeSize'>,
  scope: string,
  core: { rules: readonly CoreRule[]; tokens: number },
  request: string,
  budget: { maxTokens: number; minRelevance: number },
): MemoryUnit[] {
  if (core.tokens <= budget.maxTokens) return core.rules.map((rule) => rule.unit);
  const terms = uniqueTerms(request);
  // Only a request that shares a word with some rule needs the IDF lookups.
  const weights = terms.some((term) => core.rules.some((rule) => rule.terms.has(term))) ? store.termWeights(scope, terms) : undefined;
  const rare = weights ? rareTermIdf(store.scopeSize(scope)) : 1;
  const ranked = core.rules
    .map((rule) => {
      const relevance = weights ? relevanceOf(rule.terms, weights, rare) : 0;
      return { rule, relevance: relevance >= budget.minRelevance ? relevance : 0 };
    })
    .sort(
      (a, b) =>
        Number(b.rule.unit.pinned) - Number(a.rule.unit.pinned) ||
        b.relevance - a.relevance ||
        b.rule.unit.importance - a.rule.unit.importance ||
        b.rule.unit.observedAt - a.rule.unit.observedAt,
    );
  const chosen = new Set<CoreRule>();
  let used = CORE_FRAME_TOKENS;
  for (const { rule } of ranked) {
    if (used + rule.tokens > budget.maxTokens) continue;
    chosen.add(rule);
    used += rule.tokens;
  }
  return core.rules.filter((rule) => chosen.has(rule)).map((rule) => rule.unit);
}

/** Keyword relevance of a rule to the request, as recall scores a memory: IDF-weighted coverage of the request and evidence (in rare terms, `rare`). */
function relevanceOf(held: ReadonlySet<string>, weights: ReadonlyMap<string, { idf: number; held: boolean }>, rare: number): number {
  let query = 0;
  let matched = 0;
  for (const [term, { idf, held: known }] of weights) {
    // Words no memory holds lower coverage, but less (as in recall).
    query += known ? idf : idf * UNKNOWN_TERM_WEIGHT;
    if (held.has(term)) matched += idf;
  }
  return query > 0 ? keywordRelevance(matched / query, matched / rare) : 0;
}
