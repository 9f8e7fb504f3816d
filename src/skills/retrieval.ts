import type { EmbeddingClient } from '../embeddings/index.js';
import type { Logger } from '../logging/index.js';
import { calibrateCosine, keywordRelevance, uniqueTerms } from '../text/index.js';
import type { SkillLibrary } from './library.js';
import type { SkillSearchIndex } from './search-index.js';
import type { Skill } from './types.js';
import type { SkillVectors } from './vectors.js';

export type RetrievalMode = 'template' | 'embedding' | 'hybrid';

export interface RetrievalOptions {
  mode: RetrievalMode;
  topK: number;
  minRelevance: number;
  /** A query embedding slower than this is skipped for the request (keywords still apply). */
  embeddingTimeoutMs: number;
}

export interface RetrievedSkill {
  skill: Skill;
  /** 0..1, what the threshold and the order use. */
  relevance: number;
  keyword: number;
  semantic: number | undefined;
}

/** Skills scoring under this fraction of the best match are dropped. */
const RELATIVE_FLOOR = 0.9;

/** Below this much evidence (matched IDF in rare terms) a skill is not relevant however short the query is. */
const MIN_EVIDENCE = 1.5;

/**
 * A request term in a skill's name (what the skill is about, in a word or two) counts this many
 * times one in its description: "playwright", "readme" or "debian" in a request say more than a
 * word the description happens to share.
 */
const NAME_WEIGHT = 1.5;

/**
 * Finds the skills relevant to a request: keyword coverage (BM25 candidates from FTS5), cosine
 * similarity when embeddings are configured, or both. A threshold keeps unrelated skills out.
 */
export class SkillRetriever {
  constructor(
    private readonly library: SkillLibrary,
    private readonly index: SkillSearchIndex,
    private readonly vectors: SkillVectors | undefined,
    private readonly embeddings: EmbeddingClient | undefined,
    private readonly options: RetrievalOptions,
    private readonly logger: Logger,
  ) {}

  /** `request` is the user's real request; `context` the recent turns, weighted far less. */
  retrieve(request: string, context = ''): RetrievedSkill[] | Promise<RetrievedSkill[]> {
    if (this.options.topK === 0 || this.library.size === 0 || request.trim() === '') return [];
    const keyword = this.keywordScores(request, context);
    if (this.options.mode === 'template' || !this.vectors || !this.embeddings || this.vectors.count === 0) return this.select(keyword, undefined);
    return this.withSemantics(request, keyword);
  }

  private keywordScores(request: string, context: string): Map<string, number> {
    const queryTerms = uniqueTerms(request);
    const contextTerms = context ? uniqueTerms(context).filter((term) => !queryTerms.includes(term)) : [];
    const scores = new Map<string, number>();
    for (const hit of this.index.search(queryTerms, contextTerms, { nameWeight: NAME_WEIGHT })) {
      if (hit.evidence >= MIN_EVIDENCE) scores.set(hit.name, keywordRelevance(hit.coverage, hit.evidence));
    }
    return scores;
  }

  private async withSemantics(request: string, keyword: Map<string, number>): Promise<RetrievedSkill[]> {
    let query: Float32Array;
    try {
      query = await this.embeddings!.embedQuery(request, AbortSignal.timeout(this.options.embeddingTimeoutMs));
    } catch (error) {
      this.logger.warn({ err: (error as Error).message }, 'query embedding failed or was slow; using keyword retrieval for this request');
      return this.select(keyword, undefined);
    }
    const semantic = new Map<string, number>();
    for (const { name, cosine } of this.vectors!.nearest(query, 40)) semantic.set(name, calibrateCosine(cosine));
    for (const name of keyword.keys()) {
      if (!semantic.has(name)) {
        const cosine = this.vectors!.cosine(query, name);
        if (cosine !== undefined) semantic.set(name, calibrateCosine(cosine));
      }
    }
    return this.select(keyword, semantic);
  }

  private select(keyword: Map<string, number>, semantic: Map<string, number> | undefined): RetrievedSkill[] {
    const names = new Set([...keyword.keys(), ...(semantic?.keys() ?? [])]);
    const results: RetrievedSkill[] = [];
    for (const name of names) {
      const skill = this.library.get(name);
      if (!skill) continue;
      const keywordScore = keyword.get(name) ?? 0;
      const semanticScore = semantic?.get(name);
      let relevance: number;
      if (semanticScore === undefined) relevance = keywordScore;
      else if (this.options.mode === 'embedding') relevance = semanticScore;
      else relevance = 0.5 * keywordScore + 0.5 * semanticScore;
      if (relevance < this.options.minRelevance) continue;
      results.push({ skill, relevance, keyword: keywordScore, semantic: semanticScore });
    }
    results.sort((a, b) => b.relevance - a.relevance || a.skill.name.localeCompare(b.skill.name));
    // A skill far weaker than the best match is noise next to it.
    const floor = (results[0]?.relevance ?? 0) * RELATIVE_FLOOR;
    return results.filter((result) => result.relevance >= floor).slice(0, this.options.topK);
  }
}
