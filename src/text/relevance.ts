/** Matched IDF at which the evidence half reaches 0.5 (about two rare terms). */
const EVIDENCE_HALF_POINT = 6;

/**
 * Keyword relevance in 0..1 for thresholds: half the share of the query a document covers
 * (IDF-weighted), half the absolute evidence (matched IDF, saturating), so neither a long query full
 * of task-specific names nor a one-word query decides alone. Skills and memory both use it.
 */
export function keywordRelevance(coverage: number, matchedWeight: number): number {
  return 0.5 * coverage + 0.5 * (matchedWeight / (matchedWeight + EVIDENCE_HALF_POINT));
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
