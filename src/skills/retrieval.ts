import { setTimeout as sleep } from 'node:timers/promises';
import type { EmbeddingClient } from '../embeddings/index.js';
import type { Logger } from '../logging/index.js';
import { calibrateCosine, crossLingualAlternatives, keywordRelevance, uniqueTerms } from '../text/index.js';
import type { SkillSearchIndex } from './search-index.js';
import type { Skill } from './types.js';
import type { SkillVectors } from './vectors.js';

/**
 * Keyword relevance of the skills with enough evidence, whether translations of the request's words
 * count in it, and the skill's BM25 score (how much of its text, body included, is about the request).
 */
type KeywordScores = Map<string, { relevance: number; translated: boolean; bm25: number }>;

/**
 * Where retrieval looks skills up by name: the folder library (personal install) or a node's
 * mirror of the team store's skills table.
 */
export interface SkillSource {
  get(name: string): Skill | undefined;
  readonly size: number;
}

export type RetrievalMode = 'template' | 'embedding' | 'hybrid';

export interface RetrievalOptions {
  mode: RetrievalMode;
  topK: number;
  minRelevance: number;
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

/**
 * Relevance says how much of the request a skill's name and description cover; it cannot tell two
 * skills apart that share the same few request words there ("convert" and "batch" in an image
 * skill and a spreadsheet converter), while BM25, which also counts how often the skill's whole
 * text uses them, can: the one the request is about uses them throughout its body. Among the
 * skills past the threshold, each is ranked by its relevance times (its BM25 / the best BM25 of
 * them) to this power, its standing, and must be within the relative floor of the best on both
 * relevance and standing: a skill far behind the best in BM25 falls under the floor, while the
 * threshold itself stays on relevance alone. Tuned on the tuned, dev, dev2 and dev3 sets: 0.5 raised
 * precision on all four (0.98 → 1.00, 0.89 → 0.92, 0.86 → 0.89, 0.72 → 0.78) and lost no hit; 0.3
 * gained less, 0.8 and 1 lost hits on dev2 and dev3.
 */
const BM25_SHARE_POWER = 0.5;

/** Below this much evidence (matched IDF in rare terms) a skill is not relevant however short the query is. */
const MIN_EVIDENCE = 1.5;

/**
 * A skill found through one word of a request alone (evidence from the other words under
 * `MIN_SUPPORT`) is a shared word, not a shared topic, when the request says more than a word or
 * two: "the best time to see the pandas awake at the zoo" meets the pandas skill in its name and
 * nowhere else, as "spark plug" meets the Spark skill; a request for the skill meets it in a second
 * word too (a DataFrame, a merge, a column). Tuned on the tuned,
 * dev, dev2 and dev3 sets: 0.35 kept two of four off-topic requests on dev3 and one false injection
 * on dev from injecting anything, and lost no hit there (0.2 kept out one fewer; 0.5 lost a hit on
 * dev). Requests of fewer than `SUPPORTED_TERMS` terms are all topic and need no support.
 */
const MIN_SUPPORT = 0.35;
const SUPPORTED_TERMS = 3;

/**
 * When that one word is an everyday word in the skill's name ("a good hook for my wedding speech",
 * "road tunnels", "photos of the night sky with my phone"), the other words must add this much: a
 * name weighs `NAME_WEIGHT` times a description word because it says what the skill is about, but
 * an everyday word in a request says so only when the request's other words are about it too; a
 * word general language never uses ("playwright", "debian") keeps `MIN_SUPPORT`. Tuned on the
 * tuned, dev, dev2, dev3 and dev4 sets: 0.6–0.8 kept three of five off-topic injections on dev4 out
 * and changed nothing else (0.5 kept out two; 1.0 also kept out one on dev3 but lost hits on all
 * four others).
 */
const MIN_EVERYDAY_NAME_SUPPORT = 0.7;

/**
 * A request term in a skill's name (what the skill is about, in a word or two) counts this many
 * times one in its description: "playwright", "readme" or "debian" in a request say more than a
 * word the description happens to share.
 */
const NAME_WEIGHT = 1.5;

/**
 * A skill found mainly through the glossary's translations of the request's words (a Chinese
 * request, an English skill): a translation weighs less than the word the user wrote, so less
 * evidence suffices; but one specific translation (a word's first or second sense, not a single
 * character's or a later sense: "库" → "warehouse", "报告" → "speech") must give this much of it, so
 * that loose senses of common words alone inject nothing; and the words other than the strongest
 * must add `MIN_TRANSLATED_SUPPORT`, so that one word alone injects nothing either: "租房合同" (a
 * lease contract) finds the contract-writing skill through "合同" → "contract" and nothing else,
 * while a real request for a skill meets it in two words or more ("提交记录" and "日志" for a
 * changelog). Tuned on the tuned, dev and dev2 sets (1.3 and no support rule before dev2; with the
 * rule, 1.1–1.2 and a support of 0.2–0.35 score the same there; 1.0 lets off-topic requests in).
 */
const MIN_TRANSLATED_EVIDENCE = 1.2;
const MIN_SPECIFIC_TRANSLATION = 0.3;
const MIN_TRANSLATED_SUPPORT = 0.3;
/**
 * A skill matched partly through translations must score this close to the best match: a
 * dictionary's senses blur near-ties ("论文" → "paper" also finds the citation skill) that the
 * request's own words would separate.
 */
const TRANSLATED_FLOOR = 0.95;

const BOTH_WAYS = ['zh', 'ja'] as const;

/**
 * Finds the skills relevant to a request: keyword coverage (BM25 candidates from FTS5), cosine
 * similarity when embeddings are configured, or both. A threshold keeps unrelated skills out.
 */
export class SkillRetriever {
  constructor(
    private readonly library: SkillSource,
    private readonly index: SkillSearchIndex,
    private vectors: SkillVectors | undefined,
    private embeddings: EmbeddingClient | undefined,
    private options: RetrievalOptions,
    private readonly logger: Logger,
  ) {}

  /** Another mode or endpoint, decided off the request path (the start-up probe of the provider's embeddings). */
  useEmbeddings(mode: RetrievalMode, vectors: SkillVectors | undefined, embeddings: EmbeddingClient | undefined): void {
    this.vectors = vectors;
    this.embeddings = embeddings;
    this.options = { ...this.options, mode };
  }

  /**
   * As `retrieve`, for a search someone waits on (MCP's skills_search), never the request path: it
   * waits up to `timeoutMs` for the request's vector and for the library's embedding under way.
   * When the vector does not come, keywords answer and `keywordsOnly` hears why.
   */
  async search(request: string, timeoutMs: number, keywordsOnly: (why: string) => void = () => undefined): Promise<RetrievedSkill[]> {
    const { vectors, embeddings } = this;
    if (this.options.mode !== 'template' && vectors && embeddings && request.trim() !== '') {
      const library = Promise.race([vectors.whenIdle(), sleep(timeoutMs, undefined, { ref: false })]);
      try {
        await Promise.all([embeddings.embedQuery(request, AbortSignal.timeout(timeoutMs)), library]);
      } catch (error) {
        keywordsOnly(`the embeddings endpoint did not answer (${(error as Error).message})`);
      }
    }
    return this.retrieve(request);
  }

  /** `request` is the user's real request; `context` the recent turns, weighted far less. */
  retrieve(request: string, context = ''): RetrievedSkill[] {
    if (this.options.topK === 0 || this.library.size === 0 || request.trim() === '') return [];
    const keyword = this.keywordScores(request, context);
    if (this.options.mode === 'template' || !this.vectors || !this.embeddings || this.vectors.count === 0) return this.select(keyword, undefined);
    return this.withSemantics(request, keyword);
  }

  private keywordScores(request: string, context: string): KeywordScores {
    const queryTerms = uniqueTerms(request);
    const contextTerms = context ? uniqueTerms(context).filter((term) => !queryTerms.includes(term)) : [];
    // Translations of the request's words (the glossary), so a Chinese request finds an English skill and the reverse.
    const alternatives = crossLingualAlternatives(request, queryTerms, this.index.holdsCjk ? BOTH_WAYS : []);
    const scores: KeywordScores = new Map();
    for (const hit of this.index.search(queryTerms, contextTerms, { nameWeight: NAME_WEIGHT, translations: alternatives })) {
      const mainlyTranslated = hit.translated.evidence * 2 > hit.evidence;
      const enough = mainlyTranslated
        ? hit.evidence >= MIN_TRANSLATED_EVIDENCE &&
          hit.translated.specific >= MIN_SPECIFIC_TRANSLATION &&
          hit.evidence - hit.strongest >= MIN_TRANSLATED_SUPPORT
        : hit.evidence >= MIN_EVIDENCE &&
          (queryTerms.length < SUPPORTED_TERMS || hit.evidence - hit.strongest >= (hit.everyday ? MIN_EVERYDAY_NAME_SUPPORT : MIN_SUPPORT));
      if (!enough) continue;
      scores.set(hit.name, { relevance: keywordRelevance(hit.coverage, hit.evidence), translated: hit.translated.evidence > 0, bm25: hit.bm25 });
    }
    return scores;
  }

  /** Keywords plus cosine similarity, when the request's vector is known; never waits for it (see `readyQuery`). */
  private withSemantics(request: string, keyword: KeywordScores): RetrievedSkill[] {
    const query = this.embeddings!.readyQuery(request, (error) =>
      this.logger.warn({ err: error.message }, 'query embedding failed; keyword retrieval until the endpoint answers'),
    );
    if (!query) return this.select(keyword, undefined);
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

  private select(keyword: KeywordScores, semantic: Map<string, number> | undefined): RetrievedSkill[] {
    const names = new Set([...keyword.keys(), ...(semantic?.keys() ?? [])]);
    const results: Array<RetrievedSkill & { standing: number }> = [];
    const translated = new Set<string>();
    for (const name of names) {
      const skill = this.library.get(name);
      if (!skill) continue;
      const keywordScore = keyword.get(name)?.relevance ?? 0;
      const semanticScore = semantic?.get(name);
      let relevance: number;
      if (semanticScore === undefined) relevance = keywordScore;
      else if (this.options.mode === 'embedding') relevance = semanticScore;
      else relevance = 0.5 * keywordScore + 0.5 * semanticScore;
      if (relevance < this.options.minRelevance) continue;
      results.push({ skill, relevance, keyword: keywordScore, semantic: semanticScore, standing: relevance });
      if (keyword.get(name)?.translated && semanticScore === undefined) translated.add(name);
    }
    // Keywords alone: BM25 over the whole text separates skills that cover the request alike (see `BM25_SHARE_POWER`).
    if (semantic === undefined) {
      const bestBm25 = Math.max(...results.map((result) => keyword.get(result.skill.name)!.bm25));
      for (const result of results) result.standing = result.relevance * Math.pow(keyword.get(result.skill.name)!.bm25 / bestBm25, BM25_SHARE_POWER);
    }
    results.sort((a, b) => b.standing - a.standing || a.skill.name.localeCompare(b.skill.name));
    // A skill far weaker than the best match is noise next to it: on relevance, and on relevance with BM25's say.
    const bestRelevance = Math.max(0, ...results.map((result) => result.relevance));
    const bestStanding = results[0]?.standing ?? 0;
    return results
      .filter((result) => {
        const floor = translated.has(result.skill.name) ? TRANSLATED_FLOOR : RELATIVE_FLOOR;
        return result.relevance >= bestRelevance * floor && result.standing >= bestStanding * floor;
      })
      .slice(0, this.options.topK)
      .map(({ skill, relevance, keyword: keywordScore, semantic: semanticScore }) => ({ skill, relevance, keyword: keywordScore, semantic: semanticScore }));
  }
}
