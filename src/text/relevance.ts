import { termStatistics } from './term-statistics.js';

/** Evidence (in rare terms, see `rareTermIdf`) at which the evidence half reaches 0.5. */
const EVIDENCE_HALF_POINT = 2;

/**
 * Keyword relevance in 0..1 for thresholds: half the share of the query a document covers
 * (IDF-weighted), half the absolute evidence (matched IDF in rare terms, saturating), so neither a
 * long query full of task-specific names nor a one-word query decides alone. Skills and memory both use it.
 */
export function keywordRelevance(coverage: number, evidence: number): number {
  return 0.5 * coverage + 0.5 * (evidence / (evidence + EVIDENCE_HALF_POINT));
}

/**
 * The background corpus (data/term-statistics.json) counts as this many documents beside a
 * library's own: a library of one skill or one memory gets the background's sense of which words
 * are common, and a library of thousands outweighs it with its own.
 */
export const BACKGROUND_DOCUMENTS = 2_000;

/**
 * Inverse document frequency of a term held by `documentFrequency` of a library's `documents`,
 * blended with the background statistics as `BACKGROUND_DOCUMENTS` pseudo-documents that hold the
 * term in the share the background corpus does.
 */
export function blendedIdf(term: string, documentFrequency: number, documents: number): number {
  return bm25Idf(documentFrequency + BACKGROUND_DOCUMENTS * termStatistics().share(term), documents + BACKGROUND_DOCUMENTS);
}

/**
 * The IDF of a term one document holds and the background never uses: the unit in which evidence
 * is counted, so thresholds mean the same in a library of 1 and of 10,000.
 */
export function rareTermIdf(documents: number): number {
  return bm25Idf(1, documents + BACKGROUND_DOCUMENTS);
}

/** Query terms no document contains weigh this fraction of a rare term: they lower coverage, but less. */
export const UNKNOWN_TERM_WEIGHT = 0.5;

/** BM25's inverse document frequency (always positive): `documents` may include pseudo-documents. */
export function bm25Idf(documentFrequency: number, documents: number): number {
  return Math.log(1 + (documents - documentFrequency + 0.5) / (documentFrequency + 0.5));
}

/** Cosine similarity of unrelated texts sits around 0.1–0.3 for common embedding models; map 0.2..0.7 to 0..1. */
export function calibrateCosine(cosine: number): number {
  return Math.max(0, Math.min(1, (cosine - 0.2) / 0.5));
}

/** How many members two sets share. */
export function sharedCount(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  let shared = 0;
  for (const member of a) if (b.has(member)) shared++;
  return shared;
}

/** Jaccard similarity of two sets (0 when either is empty). */
export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 || b.size === 0) return 0;
  const shared = sharedCount(a, b);
  return shared / (a.size + b.size - shared);
}
