import type { Logger } from '../logging/index.js';
import {
  alternativeTerms,
  calibrateCosine,
  crossLingualAlternatives,
  forUnknownTerms,
  keywordRelevance,
  matchedMass,
  queryMass,
  uniqueTerms,
  type Alternatives,
  type GlossaryLanguage,
} from '../text/index.js';
import { idfOf, type Candidate, type MemoryStore } from './store.js';
import { timeWindowOf, type TimeWindow } from './time-window.js';
import type { MemoryHit, MemoryType, MemoryUnit } from './types.js';
import type { MemoryVectors } from './vectors.js';

export interface RecallRequest {
  scope: string;
  query: string;
  limit: number;
  /** Raw turns of this session are already in the conversation: not recalled. */
  excludeSession?: string;
  /** Core units are injected apart: not recalled again. */
  excludeCore?: boolean;
  types?: readonly MemoryType[];
  /** For search: also superseded units, and units flagged as injections. */
  includeInactive?: boolean;
  minRelevance: number;
  now?: Date;
}

/**
 * memory.retrieval_mode: keyword never uses vectors; embedding finds and ranks by vectors alone
 * (keywords only while vectors are unavailable); hybrid and auto take the better of keywords and a blend.
 */
export type MemoryRetrievalMode = 'keyword' | 'embedding' | 'hybrid' | 'auto';

const TYPE_BOOST: Record<MemoryType, number> = {
  working_summary: 0.9,
  project_state: 1,
  preference: 1,
  semantic: 0.9,
  procedural_observation: 0.85,
  episodic: 0.6,
};
const RECENCY_DAYS = 30;
/** Each translation searched is one more posting-list look-up: the heaviest few are enough. */
const MOST_TRANSLATIONS = 16;

/**
 * Recall for one scope: BM25 candidates from FTS5 (and vector neighbours when embeddings are
 * configured), scored by relevance, recency, importance and type; a query that names a time
 * ("last week", "昨天") prefers what was said then. Superseded and flagged units are left out.
 */
export class MemoryRetriever {
  constructor(
    private readonly store: MemoryStore,
    private vectors: MemoryVectors | undefined,
    private readonly logger: Logger,
    private mode: MemoryRetrievalMode = 'hybrid',
    /** Languages besides English the memory is written in (the user's): English queries also search their translations. */
    private readonly languages: () => readonly GlossaryLanguage[] = () => [],
  ) {}

  /** Another mode or vector store, decided off the request path (the start-up probe of the provider's embeddings). */
  useEmbeddings(mode: MemoryRetrievalMode, vectors: MemoryVectors | undefined): void {
    this.vectors = vectors;
    this.mode = mode;
  }

  recall(request: RecallRequest): MemoryHit[] | Promise<MemoryHit[]> {
    const terms = uniqueTerms(request.query);
    // Translations of the query's words (the glossary), so a Chinese question finds an English memory and the reverse.
    const translations = crossLingualAlternatives(request.query, terms, this.languages());
    const extra = alternativeTerms(translations, MOST_TRANSLATIONS);
    for (const term of terms) extra.delete(term);
    const window = timeWindowOf(request.query, request.now);
    const candidates = new Map<string, Candidate>();
    const keyword = this.store.search(
      request.scope,
      extra.size > 0 ? [...terms, ...extra.keys()] : terms,
      Math.max(24, request.limit * 4),
      request.includeInactive ?? false,
      extra,
    );
    for (const candidate of keyword.candidates) candidates.set(candidate.unit.id, candidate);
    if (window)
      for (const candidate of this.store.inWindow(request.scope, window.start, window.end, 30))
        if (!candidates.has(candidate.unit.id)) candidates.set(candidate.unit.id, candidate);
    if (!this.vectors?.ready || this.mode === 'keyword') return this.rank(request, terms, translations, keyword.idf, window, candidates, undefined);
    return this.vectors.nearest(request.scope, request.query, 30).then(
      (neighbours) => {
        const semantic = new Map<string, number>();
        for (const { unit, cosine } of neighbours) {
          semantic.set(unit.id, cosine);
          if (!candidates.has(unit.id)) candidates.set(unit.id, { unit, terms: new Set(), bm25: 0 });
        }
        return this.rank(request, terms, translations, keyword.idf, window, candidates, semantic);
      },
      (error: unknown) => {
        this.logger.warn({ err: (error as Error).message }, 'memory vector search failed; using keywords for this request');
        return this.rank(request, terms, translations, keyword.idf, window, candidates, undefined);
      },
    );
  }

  private rank(
    request: RecallRequest,
    terms: readonly string[],
    translations: Alternatives,
    idfs: ReadonlyMap<string, number>,
    window: TimeWindow | undefined,
    candidates: Map<string, Candidate>,
    semantic: Map<string, number> | undefined,
  ): MemoryHit[] {
    const now = (request.now ?? new Date()).getTime();
    // The rarest possible IDF belongs to terms no unit of the scope holds: they lower coverage, but less.
    const unknownIdf = idfOf(0, this.store.scopeSize(request.scope));
    const idf = (term: string) => idfs.get(term) ?? unknownIdf;
    const known = (term: string) => idf(term) < unknownIdf - 1e-9;
    const alternatives = forUnknownTerms(translations, known);
    const queryWeight = queryMass(terms, alternatives, idf, known);
    const hits: MemoryHit[] = [];
    for (const { unit, terms: unitTerms } of candidates.values()) {
      if (!this.eligible(unit, request)) continue;
      const matched = matchedMass(terms, alternatives, idf, (term) => (unitTerms.has(term) ? 1 : 0));
      const keyword = queryWeight > 0 ? keywordRelevance(matched / queryWeight, matched) : 0;
      const relevance = this.relevanceOf(keyword, semantic, unit.id);
      const inWindow = window !== undefined && unit.observedAt >= window.start && unit.observedAt < window.end;
      if (relevance < request.minRelevance && !inWindow) continue;
      const recency = Math.exp(-(now - unit.observedAt) / (RECENCY_DAYS * 86_400_000));
      const score = 0.6 * relevance + 0.15 * recency + 0.15 * unit.importance + 0.1 * TYPE_BOOST[unit.type] + (inWindow ? 0.25 : 0) + (unit.pinned ? 0.05 : 0);
      hits.push({ unit, score, relevance, recency, inWindow });
    }
    hits.sort((a, b) => b.score - a.score);
    return hits.slice(0, request.limit);
  }

  /** `semantic` holds the cosine of the query's nearest units; undefined when vectors are not used for this query. */
  private relevanceOf(keyword: number, semantic: Map<string, number> | undefined, id: string): number {
    if (!semantic) return keyword;
    const cosine = semantic.get(id);
    if (this.mode === 'embedding') return cosine === undefined ? 0 : calibrateCosine(cosine);
    return cosine === undefined ? keyword : Math.max(keyword, 0.5 * keyword + 0.5 * calibrateCosine(cosine));
  }

  private eligible(unit: MemoryUnit, request: RecallRequest): boolean {
    if (request.types && !request.types.includes(unit.type)) return false;
    if (request.includeInactive) return true;
    if (unit.status !== 'active' || unit.flagged) return false;
    if (request.excludeCore && unit.core) return false;
    if (request.excludeSession && unit.origin === 'raw_turn' && unit.sourceSession === request.excludeSession) return false;
    return true;
  }
}
