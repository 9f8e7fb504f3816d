import type { Logger } from '../logging/index.js';
import {
  adverbRootAlternatives,
  alternativeTerms,
  calibrateCosine,
  crossLingualAlternatives,
  inflectionAlternatives,
  mergeAlternatives,
  keywordRelevance,
  matchedMass,
  queryMass,
  rareTermIdf,
  similarWordAlternatives,
  uniqueTerms,
  type Alternatives,
  type GlossaryLanguage,
  type WeightedTerm,
} from '../text/index.js';
import { KINDRED_WEIGHT, NEIGHBOUR_WEIGHT, PARTIAL_WEIGHT, SESSION_WEIGHT, type Candidate, type KeywordSearch, type MemoryStore } from './store.js';
import { distinctHits } from './distinct.js';
import { EXPANSION_WEIGHT, expansionShare, withFeedback, type Expansion, type Feedback } from './feedback.js';
import { timeWindowOf, type TimeWindow } from './time-window.js';
import { countedInTerms, expectedAnswer, holdsAnswer } from './answer-type.js';
import type { MemoryHit, MemoryType, MemoryUnit } from './types.js';

/** What recall reads from a store: MemoryStore, or the team store's reads of PostgreSQL (store/postgres/memory-provider.ts). */
export type RecallStore = Pick<MemoryStore, 'search' | 'unitTerms' | 'scopeSize' | 'inWindow'>;

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
  /** Injection into a model request: vectors only if the query's is already known, never a wait on the network. */
  onRequestPath?: boolean;
  /**
   * A person's search (CLI, HTTP, dashboard): every match is listed, copies too, since a copy may be
   * what they came to edit or forget. Otherwise copies are left out (see `distinctHits`).
   */
  listing?: boolean;
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
/**
 * Weight of recency in the score (relevance has 0.6): a tie-breaker. At 0.15 a turn from last week
 * that shares one common word with a question outranked the months-old turn that answers it
 * (recall@10 at 0.05: tuned and 13-month dev histories +2 points, the 8-month one unchanged).
 */
const RECENCY_WEIGHT = 0.05;
/**
 * A translation of a query word the memory also holds as written counts this much of one of a word
 * it lacks: a memory kept in two languages may hold the answer in the other one ("膝盖" in a Chinese
 * aside, the knee injury told in English), but the word as written is the likelier match.
 */
const HELD_WORD_TRANSLATION = 0.5;
/** Each translation searched is one more posting-list look-up: the heaviest few are enough. */
const MOST_TRANSLATIONS = 16;
/**
 * A query word's similar words (similar-words.ts) count only when the memory holds the word rarely
 * (at most about one unit in 150, the background corpus counted in: IDF 5) or not at all: a word many
 * units hold already finds them, and its similar words only add units that share a topic with it.
 * Tuned on the dev histories (branch `memglove37`): IDF 4 lost a question @10 on one, 6 found one fewer.
 */
const SIMILAR_WORDS_BELOW_IDF = 5;
/** A wide window ("last spring") holds many turns: the keyword search looks this much deeper for ones inside it. */
const WIDE_WINDOW_DAYS = 10;
/** How much deeper the keyword search looks when copies filled its candidates (see `distinctHits`). */
const CROWDED_DEPTH = 4;
/** Score for the speaker a question is about: the assistant for "what did you suggest", the user otherwise. */
const SPEAKER_BONUS = 0.04;
/**
 * Taken from the assistant's turns when the question does not ask what the assistant said. What the
 * user asks about their life was said by the user ("we bought the Niro"); the assistant's replies
 * echo the same words around it ("the Niro is a good choice for…") and took places in the first ten
 * that the user's own statements needed. An assistant turn still ranks above a user's turn when it
 * matches much better: a relevance 0.4 higher (× 0.6 in the score, the 0.2 and the user's
 * SPEAKER_BONUS), other terms equal. Tuned on the dev histories (issue 13): at 0.1 recall@10 rose on four of
 * six; at 0.2 (and 0.3, the same) on five, the sixth unchanged; every one of them rose @5.
 */
const ASSISTANT_PENALTY = 0.2;
/** Score, for a question about the present ("now", "these days"), for the newest of the relevant units. */
const LATEST_BONUS = 0.1;
/**
 * Score for a candidate that holds the kind of text the question asks for (a number for "how much",
 * a name for "who" / "where", a like, habit, plan or limit for "would she enjoy…"; see answer-type.ts):
 * a tie-breaker among units the question's words found. Tuned on the dev histories: 0.04–0.08 gave
 * the same recall@10 (the inference cue: 0.03 moved fewer questions, 0.06 and 0.1 the same).
 */
const ANSWER_TYPE_BONUS = 0.06;

/**
 * A question about what the assistant said ("what did you recommend", "the analogy you gave me",
 * "your estimate", "你建议"). One that also asks about the user ("my 10K time against what you
 * predicted") counts too: the assistant's turns then keep their full score. A word of time or an
 * auxiliary may stand between ("the book you previously recommended", "what you'd suggested",
 * "你上次推荐的", "你之前说的"): missed, the question took ASSISTANT_PENALTY from the very turn it asks for.
 */
const ASKS_ASSISTANT =
  /\b(did|do|would) you ((just|once|ever|first|originally|previously|actually|end up)\s+)?(say|suggest|recommend|tell|mention|advise|explain|propose|think|give|predict|estimate|write|draft|make|pick|choose|come up with|suggesting|recommending)\b|\byou('d|’d|'ve|’ve)?\s+((had|have|just|once|previously|already|also|originally|first|earlier|ever)\s+)?(\w+ed|said|told|gave|given|wrote|written|made|thought|chose|chosen|drew|drawn|showed|shown|taught|sent|came up with|come up with|put together)\b|\byour (advice|suggestions?|recommendations?|answers?|ideas?|predictions?|estimates?|analogy|example|plan|recipe|list|draft|tips?)\b|你(之前|上次|上回|刚才|刚刚|以前|昨天|前天|前面|当时|那天|那次|曾经|早先)?(说|建议|推荐|提到|告诉|讲|给我|预测|估计|写|帮我想)/i;
/**
 * A time clause about what the assistant did ("When you asked about my job, what did I say?", "what
 * did I decide after you mentioned it", "你提到搬家的时候，我说的新地址是哪里？"): it says when, not
 * what the question asks for, and is left out before ASKS_ASSISTANT is read. "the book you
 * previously recommended" and "你上次推荐的" have no such clause. The Chinese clause ends in "的时候",
 * "那时(候)", "那会儿" or "之后" after at least one word, so that "你说的时间" (the time you said) is not one.
 */
const YOUR_TIME_CLAUSE =
  /\b(?:when|whenever|after|before|while|once|until|as soon as)\s+you\b[^,;:?.!]*|(?:在|当)?你[^，,。；;：:？?！!]{1,40}?(?:的时候|那时候?|那会儿?|之后)/gi;
/** A question about the current state of something that changes over time. */
const ASKS_PRESENT = /\b(now|currently|current|these days|nowadays|at the moment|at present|latest|still)\b|现在|目前|如今|眼下/i;

/** A unit near the query, with the cosine of their vectors. */
export interface Neighbour {
  readonly unit: MemoryUnit;
  readonly cosine: number;
}

/**
 * Where recall finds the query's nearest units: sqlite-vec on a personal install (MemoryVectors),
 * pgvector on the team store (PgMemoryVectors).
 */
export interface RecallVectors {
  /** Whether vectors of the configured model exist to search. */
  readonly ready: boolean;
  /** Waits for the query's vector: for searches and jobs, not the request path. */
  nearest(scope: string, query: string, limit: number): Promise<Neighbour[]>;
  /** Without waiting on the network: undefined while the query's vector is unknown (it is embedded in the background). */
  nearestReady(scope: string, query: string, limit: number, onError: (error: Error) => void): Neighbour[] | undefined;
}

/**
 * Recall for one scope: BM25 candidates from FTS5 (and vector neighbours when embeddings are
 * configured), scored by relevance, recency, importance and type; a query that names a time
 * ("last week", "昨天") prefers what was said then. Superseded and flagged units are left out.
 */
export class MemoryRetriever {
  constructor(
    private readonly store: RecallStore,
    private vectors: RecallVectors | undefined,
    private readonly logger: Logger,
    private mode: MemoryRetrievalMode = 'hybrid',
    /** Languages besides English the memory is written in (the user's): English queries also search their translations. */
    private readonly languages: () => readonly GlossaryLanguage[] = () => [],
    /** Told why, when a search off the request path wanted vectors and keywords alone answered. */
    private readonly keywordsOnly: (why: string) => void = () => undefined,
  ) {}

  /** Another mode or vector store, decided off the request path (the start-up probe of the provider's embeddings). */
  useEmbeddings(mode: MemoryRetrievalMode, vectors: RecallVectors | undefined): void {
    this.vectors = vectors;
    this.mode = mode;
  }

  recall(request: RecallRequest): MemoryHit[] | Promise<MemoryHit[]> {
    const window = timeWindowOf(request.query, request.now);
    const wide = window !== undefined && window.end - window.start > WIDE_WINDOW_DAYS * 86_400_000;
    const depth = Math.max(24, request.limit * 4) * (wide ? 4 : 1);
    const first = this.recallAt(request, window, depth);
    // Copies of one text (a question asked every day) can fill the whole candidate pool: once they
    // are left out, places stay empty that a deeper search fills.
    const deeper = (ranked: Ranked): MemoryHit[] | Promise<MemoryHit[]> =>
      ranked.crowded ? resolved(this.recallAt(request, window, depth * CROWDED_DEPTH, ranked.searched), (again) => again.hits) : ranked.hits;
    return first instanceof Promise ? first.then(deeper) : deeper(first);
  }

  /** `shallower`: the searches of a shallower pass over the same query, read deeper rather than made again. */
  private recallAt(request: RecallRequest, window: TimeWindow | undefined, depth: number, shallower?: Searched): Ranked | Promise<Ranked> {
    const terms = queryTerms(request.query, window);
    const candidates = new Map<string, Candidate>();
    // Translations of the query's words (the glossary), so a Chinese question finds an English memory and the reverse,
    // and the roots of its words in -ly ("monthly" finds "a month"): matches of what was said, weighed alike.
    const translations = mergeAlternatives(crossLingualAlternatives(request.query, terms, this.languages()), adverbRootAlternatives(terms));
    // The other forms of its irregular verbs: "what did I buy" finds "we bought".
    const inflections = inflectionAlternatives(terms);
    // Words used like its rarer words ("lender": "mortgage"), a weaker match still (see `SIMILAR_WORDS_BELOW_IDF`).
    const similar = similarWordAlternatives(terms);
    const extra = alternativeTerms(mergeAlternatives(translations, inflections), MOST_TRANSLATIONS);
    // Capped as translations are: a long request (an agent's 4 KB message) has a similar word for dozens of its terms.
    for (const [term, weight] of alternativeTerms(similar, MOST_TRANSLATIONS)) if (!extra.has(term)) extra.set(term, weight);
    for (const term of terms) extra.delete(term);
    const first =
      shallower?.first.deeper?.(depth) ??
      this.store.search(request.scope, extra.size > 0 ? [...terms, ...extra.keys()] : terms, depth, request.includeInactive ?? false, extra);
    const feedback = withFeedback(
      this.store,
      request.scope,
      { terms, exclude: new Set([...terms, ...extra.keys()]) },
      first,
      {
        depth,
        includeInactive: request.includeInactive ?? false,
        eligible: (unit) => this.eligible(unit, request),
        ...(window ? { within: (unit: MemoryUnit) => inside(window, unit) } : {}),
      },
      shallower?.feedback,
    );
    const { search: keyword, expansion } = feedback;
    const searched: Searched = { first, feedback };
    for (const candidate of keyword.candidates) candidates.set(candidate.unit.id, candidate);
    if (window)
      for (const candidate of this.store.inWindow(request.scope, window.start, window.end, 30))
        if (!candidates.has(candidate.unit.id)) candidates.set(candidate.unit.id, candidate);
    // The pool was cut short while its weakest match still counted: a deeper search may find more that count.
    const cut = first.candidates.length >= depth ? weakestEligible(first.candidates, (unit) => this.eligible(unit, request)) : undefined;
    const rank = (semantic?: Map<string, number>) => ({
      ...this.rank(request, terms, { translations, inflections, similar }, keyword, window, candidates, semantic, expansion, cut),
      searched,
    });
    if (!this.vectors?.ready || this.mode === 'keyword') return rank();
    const withNeighbours = (neighbours: readonly Neighbour[]): Ranked => {
      const semantic = new Map<string, number>();
      for (const { unit, cosine } of neighbours) {
        semantic.set(unit.id, cosine);
        if (!candidates.has(unit.id)) candidates.set(unit.id, { unit, terms: new Set(), related: new Set(), bm25: 0 });
      }
      return rank(semantic);
    };
    const failed = (error: unknown): Ranked => {
      this.logger.warn({ err: (error as Error).message }, 'memory vector search failed; using keywords for this request');
      if (!request.onRequestPath) this.keywordsOnly(`the embeddings endpoint did not answer (${(error as Error).message})`);
      return rank();
    };
    if (request.onRequestPath) {
      const neighbours = this.vectors.nearestReady(request.scope, request.query, 30, failed);
      return neighbours ? withNeighbours(neighbours) : rank();
    }
    return this.vectors.nearest(request.scope, request.query, 30).then(withNeighbours, failed);
  }

  private rank(
    request: RecallRequest,
    terms: readonly string[],
    { translations, inflections, similar }: { translations: Alternatives; inflections: Alternatives; similar: Alternatives },
    search: KeywordSearch,
    window: TimeWindow | undefined,
    candidates: Map<string, Candidate>,
    semantic: Map<string, number> | undefined,
    expansion: Expansion,
    /** The weakest eligible keyword candidate when the search returned as many as asked (there may be more). */
    cut: string | undefined,
  ): Omit<Ranked, 'searched'> {
    const now = (request.now ?? new Date()).getTime();
    // Terms no unit of the scope holds lower coverage, but less; translations not looked up count as not held.
    const idf = (term: string) => search.idf.get(term) ?? 0;
    const known = (term: string) => search.idf.has(term) && !search.unknown.has(term);
    const translated = weighTranslations(translations, known);
    const rareSimilar = new Map([...similar].filter(([term]) => !known(term) || idf(term) >= SIMILAR_WORDS_BELOW_IDF));
    const alternatives = mergeAlternatives(mergeAlternatives(translated, inflections), weighTranslations(rareSimilar, known));
    const queryWeight = queryMass(terms, alternatives, idf, known);
    const rare = rareTermIdf(this.store.scopeSize(request.scope));
    const speaker = ASKS_ASSISTANT.test(request.query.replace(YOUR_TIME_CLAUSE, '')) ? 'assistant' : 'user';
    const answer = expectedAnswer(request.query);
    const scored: Array<MemoryHit & { keyword: number }> = [];
    let cutCounts = false;
    for (const { unit, terms: unitTerms, related, partial, kindred, session } of candidates.values()) {
      if (!this.eligible(unit, request)) continue;
      // A term said in the turn next to a unit counts NEIGHBOUR_WEIGHT of one in the unit itself; one held in another form, PARTIAL_WEIGHT.
      const holds = (term: string) =>
        unitTerms.has(term)
          ? 1
          : Math.max(
              partial?.has(term) ? PARTIAL_WEIGHT : 0,
              kindred?.has(term) ? KINDRED_WEIGHT : 0,
              related.has(term) ? NEIGHBOUR_WEIGHT : 0,
              session?.has(term) ? SESSION_WEIGHT : 0,
            );
      // A unit that holds none of the query's words but another form of one of its verbs ("kept" for
      // "keep") shares only how something was done, not what: the match says nothing of the unit.
      const matched = inflections.size > 0 && matchedMass(terms, translated, idf, holds) === 0 ? 0 : matchedMass(terms, alternatives, idf, holds);
      const coverage = queryWeight > 0 ? matched / queryWeight : 0;
      const direct = queryWeight > 0 ? keywordRelevance(coverage, matched / rare) : 0;
      // Words shared with the best matches rank a unit higher, but only the query's own words say it
      // answers the query: the threshold and the relevance shown stay theirs.
      const fed = expansion.weights.size > 0 ? EXPANSION_WEIGHT * expansionShare(expansion, unit.id, idf, holds) : 0;
      const keyword = fed > 0 ? keywordRelevance(Math.min(1, coverage + fed), (matched + fed * queryWeight) / rare) : direct;
      const relevance = this.relevanceOf(direct, semantic, unit.id);
      const inWindow = window !== undefined && inside(window, unit);
      if (unit.id === cut) cutCounts = relevance >= request.minRelevance;
      if (relevance < request.minRelevance && !inWindow) continue;
      const recency = Math.exp(-(now - unit.observedAt) / (RECENCY_DAYS * 86_400_000));
      const score =
        0.6 * (fed > 0 ? this.relevanceOf(keyword, semantic, unit.id) : relevance) +
        RECENCY_WEIGHT * recency +
        0.15 * unit.importance +
        0.1 * TYPE_BOOST[unit.type] +
        (inWindow ? 0.25 : 0) +
        (unit.pinned ? 0.05 : 0) +
        (unit.speaker === speaker ? SPEAKER_BONUS : 0) -
        (speaker === 'user' && unit.speaker === 'assistant' ? ASSISTANT_PENALTY : 0) +
        (answer !== undefined && (direct > 0 || fed > 0) && holdsAnswer(answer, unit.content) ? ANSWER_TYPE_BONUS : 0);
      scored.push({ unit, score, relevance, recency, inWindow, keyword });
    }
    if (ASKS_PRESENT.test(request.query)) preferLatest(scored);
    scored.sort((a, b) => b.score - a.score);
    const { kept, dropped } = request.listing ? { kept: scored.slice(0, request.limit), dropped: 0 } : distinctHits(scored, request.query, request.limit);
    // Crowded: copies took at least as many places as asked (a near-copy or two among the hits is
    // common, and a deeper search would then cost a second search for nothing), and the pool was cut
    // while its weakest match still counted: when it no longer did, the units below it count less
    // still (BM25 order), and a deeper search found nothing but cost a second pass (p99 ×3).
    return { hits: kept.map(({ keyword: _keyword, ...hit }) => hit), crowded: cutCounts && dropped >= request.limit && kept.length < request.limit };
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

/** Ranked hits; `crowded` when many copies left out of a full candidate pool left places empty. */
interface Ranked {
  hits: MemoryHit[];
  crowded: boolean;
  searched: Searched;
}

/** A pass's keyword search and its feedback: a deeper pass reads on from them. */
interface Searched {
  first: KeywordSearch;
  feedback: Feedback;
}

/** The id of the last (lowest BM25) of `candidates` that recall may return. */
function weakestEligible(candidates: readonly Candidate[], eligible: (unit: MemoryUnit) => boolean): string | undefined {
  for (let index = candidates.length - 1; index >= 0; index--) if (eligible(candidates[index]!.unit)) return candidates[index]!.unit.id;
  return undefined;
}

function resolved<T, U>(value: T | Promise<T>, then: (value: T) => U): U | Promise<U> {
  return value instanceof Promise ? value.then(then) : then(value);
}

/** The query's translations, those of the words the memory holds as written weighted `HELD_WORD_TRANSLATION`. */
function weighTranslations(translations: Alternatives, known: (term: string) => boolean): Alternatives {
  if (translations.size === 0) return translations;
  const weighed = new Map<string, readonly WeightedTerm[]>();
  for (const [term, list] of translations)
    weighed.set(term, known(term) ? list.map((alternative) => ({ term: alternative.term, weight: alternative.weight * HELD_WORD_TRANSLATION })) : list);
  return weighed;
}

/** Whether `unit` was observed in `window`. */
function inside(window: TimeWindow, unit: MemoryUnit): boolean {
  return unit.observedAt >= window.start && unit.observedAt < window.end;
}

/** The query's search terms, without the words that only say when, or in which unit of time the answer is counted. */
function queryTerms(query: string, window: TimeWindow | undefined): readonly string[] {
  const left = new Set([...countedInTerms(query), ...(window ? uniqueTerms(window.phrase) : [])]);
  return left.size > 0 ? uniqueTerms(query).filter((term) => !left.has(term)) : uniqueTerms(query);
}

/**
 * For a question about the present, the newest of the units that match it about as well as the best
 * one does gets a bonus that shrinks with age relative to the others: facts change, the last word counts.
 */
function preferLatest(hits: Array<MemoryHit & { keyword: number }>): void {
  const best = Math.max(0, ...hits.map((hit) => hit.keyword));
  const relevant = hits.filter((hit) => hit.keyword >= 0.7 * best && best > 0);
  if (relevant.length < 2) return;
  const times = relevant.map((hit) => hit.unit.observedAt);
  const oldest = Math.min(...times);
  const span = Math.max(...times) - oldest;
  if (span <= 0) return;
  for (const hit of relevant) hit.score += LATEST_BONUS * ((hit.unit.observedAt - oldest) / span);
}
