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
