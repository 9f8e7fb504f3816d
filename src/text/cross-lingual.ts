import { glossary, type Alternatives, type GlossaryLanguage, type WeightedTerm } from './glossary.js';
import { UNKNOWN_TERM_WEIGHT } from './relevance.js';

/**
 * Cross-lingual search without embeddings: the glossary's translations of a query's words, as
 * alternatives of the query terms they stand for, and the relevance sums that count each query term
 * once, for the best of itself and its alternatives. Skills and memory both use them.
 */

const recent = new Map<string, Alternatives>();
const NONE: Alternatives = new Map();

/**
 * The alternatives of a query's terms: English translations of its Chinese and Japanese words, and,
 * for `reverse` languages (what the library or memory is written in besides English), translations
 * of its English words. Agents resend the same request on every step of a tool loop: recent answers
 * are cached.
 */
export function crossLingualAlternatives(text: string, terms: readonly string[], reverse: readonly GlossaryLanguage[] = []): Alternatives {
  const key = reverse.length > 0 ? `${reverse.join(',')}\u0000${text}` : text;
  const cached = recent.get(key);
  if (cached) return cached;
  const words = glossary();
  const alternatives = words.toEnglish(text);
  for (const [term, list] of words.fromEnglish(terms, reverse)) alternatives.set(term, [...(alternatives.get(term) ?? []), ...list]);
  const result = alternatives.size > 0 ? alternatives : NONE;
  if (recent.size >= 512) recent.delete(recent.keys().next().value as string);
  recent.set(key, result);
  return result;
}

/**
 * The alternatives of the terms no document holds: a term the library or memory has is searched as
 * written (it already speaks that language for it); only a term it lacks goes through translation.
 */
export function forUnknownTerms(alternatives: Alternatives, known: (term: string) => boolean): Alternatives {
  if (alternatives.size === 0) return alternatives;
  const kept = new Map<string, readonly WeightedTerm[]>();
  for (const [term, list] of alternatives) if (!known(term)) kept.set(term, list);
  return kept;
}

/** The alternative terms of a query (to look up beside its own terms), each with the largest weight it has; at most `limit`, the heaviest. */
export function alternativeTerms(alternatives: Alternatives, limit = Number.POSITIVE_INFINITY): Map<string, number> {
  const weights = new Map<string, number>();
  for (const list of alternatives.values()) for (const { term, weight } of list) weights.set(term, Math.max(weights.get(term) ?? 0, weight));
  return weights.size <= limit ? weights : new Map([...weights].sort((a, b) => b[1] - a[1]).slice(0, limit));
}

/**
 * The IDF mass a query asks for: each term's IDF when some document holds it, else the best
 * weighted IDF among its alternatives that some document holds, else a share of its own (a word no
 * document has lowers coverage, but less).
 */
export function queryMass(terms: readonly string[], alternatives: Alternatives, idf: (term: string) => number, known: (term: string) => boolean): number {
  let sum = 0;
  for (const term of terms) {
    const own = known(term) ? idf(term) : 0;
    const best = Math.max(
      own,
      bestAlternative(alternatives.get(term), (alternative) => (known(alternative) ? idf(alternative) : 0)),
    );
    sum += best > 0 ? best : idf(term) * UNKNOWN_TERM_WEIGHT;
  }
  return sum;
}

/**
 * The IDF mass of a query a document matches: for each term, the best of the term itself and its
 * weighted alternatives, each scaled by `holds` (0 when the document lacks it; less than 1 for a
 * weaker field; told whether the term is a translation, which a field may weigh differently). `onMatch` is told each matched term's share, the translation it came through
 * (undefined when the term itself matched), and the query term.
 */
export function matchedMass(
  terms: readonly string[],
  alternatives: Alternatives,
  idf: (term: string) => number,
  holds: (term: string, translation: boolean) => number,
  onMatch?: (value: number, translation: WeightedTerm | undefined, term: string) => void,
): number {
  let sum = 0;
  for (const term of terms) {
    const share = holds(term, false);
    let best = share > 0 ? share * idf(term) : 0;
    let translation: WeightedTerm | undefined;
    for (const alternative of alternatives.get(term) ?? []) {
      const found = holds(alternative.term, true);
      const value = found > 0 ? alternative.weight * found * idf(alternative.term) : 0;
      if (value > best) {
        best = value;
        translation = alternative;
      }
    }
    sum += best;
    if (onMatch && best > 0) onMatch(best, translation, term);
  }
  return sum;
}

function bestAlternative(list: readonly WeightedTerm[] | undefined, value: (term: string) => number): number {
  let best = 0;
  for (const { term, weight } of list ?? []) best = Math.max(best, weight * value(term));
  return best;
}
