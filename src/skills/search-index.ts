import {
  blendedIdf,
  forUnknownTerms,
  matchedMass,
  queryMass,
  rareTermIdf,
  termStatistics,
  tokenize,
  type Alternatives,
  type WeightedTerm,
} from '../text/index.js';
import { englishKey, katakanaKey } from '../text/loanwords.js';
import { termOf } from '../text/tokenize.js';
import { ScoreBoard } from './score-board.js';
import { DEFAULT_CATEGORY } from './skill-file.js';
import type { Skill } from './types.js';

/** Field weights (BM25F): a hit in the name counts most, then the description and search keys, then the body. */
const FIELD_WEIGHTS = { name: 4.0, description: 2.5, keys: 2.5, body: 1.0 } as const;
const K1 = 1.2;
const B = 0.75;
/** A query term found only in a skill's body counts for less than one in its name or description. */
const BODY_ONLY_WEIGHT = 0.6;
/**
 * ... and for less again when the body is long and says it rarely: a word said once in a 900-term
 * body (a full published skill: checklists, examples, "merge", "password", "email" in a git guide)
 * is there by chance more than by topic. A body-only word counts in full when the body says it at
 * least once per `BODY_TERMS_PER_MENTION` terms, in proportion below that: bodies of up to that many
 * terms (most skills) are as before. Tuned on the dev7 set (full bodies, median 708 terms; the
 * other sets' bodies were cut to 60 lines, median 150–260): 300 took dev7 from precision 0.48 /
 * recall 0.44 with 6 of 13 off-topic requests injected to 0.74 / 0.42 with 3, dev4 from 0.70 / 0.71
 * to 0.76 / 0.74 (off-topic 2 → 1), and left the other sets within a hit; 250 cost dev3 a hit,
 * 500 gained little on dev7 (0.63 / 0.43, 4 off-topic); the share's square root, less (dev7 0.54 / 0.41, 4).
 */
const BODY_TERMS_PER_MENTION = 300;
/**
 * A glossary translation of a query word found only in a skill's body counts for less again: a
 * dictionary gives several senses per word, and a long body meets one of them by chance far more
 * often than it meets the word the user wrote ("生成" → "generate", "记录" → "record" are in half the
 * bodies of a bank). Tuned on the tuned, dev and dev2 sets (0.6, the weight of the user's own words,
 * before dev2): 0.45 removed a third of the false injections on Chinese and Japanese requests and
 * one off-topic injection for one lost hit; 0.3 lost more hits for no further gain.
 */
const TRANSLATED_BODY_ONLY_WEIGHT = 0.45;
const CANDIDATES = 40;
/** A description with fewer terms than this beyond the skill's name is a title, not a summary. */
const TITLE_ONLY_TERMS = 4;
/** How much of the top of the body stands in for a title-only description (tuned on the dev2 set: 30–100 differ little). */
const LEAD_TERMS = 60;
/** A translation weighing this much is a word's first or second sense (a character's, or a later sense, weighs less: see text/glossary.ts). */
const SPECIFIC_TRANSLATION = 0.6;
/**
 * The Porter stemmer leaves some forms of one word apart: "coverage" → "coverag" but "cover",
 * "auditor" but "audit", "automation" → "autom" but "automatically" → "automat", "replica" but
 * "replication" → "replic", British "summarise" → "summaris" but "summarize" → "summar". A request
 * term a skill lacks counts, at `OTHER_FORM_WEIGHT` of the field it is found in, when the skill holds
 * a term that is the same stem with one of these endings added or removed. Only endings, and only
 * after `FORM_PREFIX` shared letters: a compound's second word ("checkout" → "check") or a short
 * root ("test" → "testament") is another word, not another form. "li" is left out ("nightly" →
 * "night" cost a false injection on the tuned set). Tuned on the tuned, dev, dev2 and dev3 sets:
 * 0.5 finds 3 more relevant skills on dev3 and changes nothing elsewhere; 0.7 and 1 find no more
 * and cost precision on dev and dev3.
 */
const OTHER_FORM_WEIGHT = 0.5;
const FORM_PREFIX = 5;
const FORM_ENDINGS = new Set(['a', 'e', 'i', 'er', 'or', 'ag', 'at', 'is', 'iz']);
const LATIN_TERM = /^[a-z]+$/;
/**
 * A katakana word of the request that neither the library nor the glossary knows (ポストモーテム,
 * インシデント, メトリクス) is looked up by its sound among the English words of the library (see
 * text/loanwords.ts) and counts as a translation of this weight: a sound is less sure than a
 * dictionary, so as much as a word's second sense. Tuned on the tuned, dev, dev2 and dev3 sets:
 * 0.6 found the postmortem skill for a Japanese request on dev and changed nothing else; 0.8 and 1
 * also let "インシデント" inject a neighbour (an incident-commander skill) that a security-incident
 * request on dev2 labels as wrong. Keys of fewer consonants than `LOANWORD_KEY` match too many
 * words ("sb" is "server", and also "sub" and "sob").
 */
const LOANWORD_WEIGHT = 0.6;
const LOANWORD_KEY = 3;
const LATIN_WORDS = /[a-z]{3,}/g;
const NO_ALTERNATIVES: Alternatives = new Map();
const NO_FORMS: ReadonlyMap<string, readonly string[]> = new Map();
const CJK = /[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]/;

export interface KeywordHit {
  name: string;
  /** BM25F score (higher is better); ranks candidates. */
  bm25: number;
  /** 0..1: the IDF-weighted share of the query's terms this skill contains. */
  coverage: number;
  /** The IDF mass of the matched terms in rare terms (absolute evidence, whatever the query's or the library's size). */
  evidence: number;
  /**
   * Of that evidence, what came through glossary translations, and the most one query word gave
   * through a specific translation (a word's first or second sense, not a single character's).
   */
  translated: { evidence: number; specific: number };
  /** The most evidence one word of the request gave (itself, or a glossary word through one translation). */
  strongest: number;
  /**
   * Whether that word is the request's own, in the skill's name, and a word of everyday language
   * (the background corpus of general sentences uses it: "hook", "tunnel", "photo", "game"; not
   * "playwright", "debian", "youtube").
   */
  everyday: boolean;
}

interface Posting {
  /** the skill's slot (see `ScoreBoard`) */
  slot: number;
  /** the term's weighted frequency in the skill */
  frequency: number;
  /** the skill's weighted length */
  length: number;
}

interface IndexedSkill {
  slot: number;
  /** Field-weighted term frequencies. */
  frequencies: Map<string, number>;
  /** Terms in the name or description. */
  head: Set<string>;
  /** Terms in the name. */
  named: Set<string>;
  /** Field-weighted length, for BM25's length normalisation. */
  length: number;
  /** Terms in the body (see `BODY_TERMS_PER_MENTION`). */
  bodyTerms: number;
}

/**
 * Keyword search over the skill library, in memory: a BM25F inverted index for ranking, and an
 * IDF-weighted coverage score in 0..1 for the relevance threshold (BM25 alone has no scale to
 * threshold on). Text is segmented and stemmed first, so Chinese and Japanese match as words.
 *
 * Why not SQLite FTS5: the library is small (up to ~10 k skills) and already in memory; a query here
 * takes microseconds, while an FTS5 query measured ~50 µs warm and ~250 µs on the proxy's request
 * path, a quarter of the whole latency budget. Memory units, which grow without such a bound, do use FTS5.
 */
export class SkillSearchIndex {
  private readonly skills = new Map<string, IndexedSkill>();
  /** term → the skills holding it, each with how often (weighted by field): scoring reads both from one place. */
  private readonly postings = new Map<string, Map<string, Posting>>();
  private totalLength = 0;
  /** The library's Latin terms by their first `FORM_PREFIX` letters, to find other forms of a request term. */
  private readonly forms = new Map<string, Set<string>>();
  /** Sound key → the library's English terms spelt so (see `LOANWORD_WEIGHT`); a removed skill's terms may stay: they match nothing then. */
  private readonly sounds = new Map<string, Set<string>>();
  /** Skills described in Chinese or Japanese: English queries then also search for their translations. */
  private readonly cjkSkills = new Set<string>();
  /** Skill names by slot (see `ScoreBoard`); a removed skill's slot goes to the next skill added. */
  private readonly slotNames: Array<string | undefined> = [];
  private readonly freeSlots: number[] = [];
  private readonly board = new ScoreBoard();

  /** `searchKeys`: text indexed with a skill beside its own (the keys a learning job wrote in the user's languages). */
  constructor(private readonly searchKeys: (skill: Skill) => string = () => '') {}

  get size(): number {
    return this.skills.size;
  }

  /** Whether some skill is described in Chinese or Japanese (not merely keyworded in them, as the starter bank is). */
  get holdsCjk(): boolean {
    return this.cjkSkills.size > 0;
  }

  /** Replaces the index with the whole library (at start). */
  sync(skills: readonly Skill[]): void {
    this.skills.clear();
    this.postings.clear();
    this.forms.clear();
    this.sounds.clear();
    this.slotNames.length = 0;
    this.freeSlots.length = 0;
    this.totalLength = 0;
    this.update(skills, []);
  }

  /** Re-indexes changed skills (a hand edit, an evolution) and drops removed ones. */
  update(changed: readonly Skill[], removed: readonly string[]): void {
    for (const name of removed) this.forget(name);
    for (const skill of changed) {
      this.forget(skill.name);
      this.remember(skill);
    }
  }

  /**
   * Skills matching `queryTerms`, best first, with their coverage of the query. `contextTerms`
   * (from earlier turns) can add a little coverage but never find a skill on their own. A term in a
   * skill's name counts `nameWeight` times one in its description. `translations` of query terms the
   * library lacks find skills too, at their weight; a query term counts once, for the best of itself
   * and its translations.
   */
  search(
    queryTerms: readonly string[],
    contextTerms: readonly string[] = [],
    { nameWeight = 1, translations = NO_ALTERNATIVES }: { nameWeight?: number; translations?: Alternatives } = {},
  ): KeywordHit[] {
    if (queryTerms.length === 0 || this.skills.size === 0) return [];
    const alternatives = this.withLoanwords(
      queryTerms,
      forUnknownTerms(translations, (term) => this.postings.has(term)),
    );
    const averageLength = this.totalLength / this.skills.size;
    const idfs = new Map<string, number>();
    for (const term of [...queryTerms, ...contextTerms]) if (!idfs.has(term)) idfs.set(term, this.idf(term));
    const board = this.board;
    board.reset(this.slotNames.length);
    // Per skill, the BM25 length normalisation for this library's average length.
    const lengthFactor = K1 * (1 - B);
    const lengthScale = (K1 * B) / averageLength;
    const add = (posting: Posting, idf: number) => {
      const normalised = posting.frequency / (posting.frequency + lengthFactor + lengthScale * posting.length);
      board.add(posting.slot, idf * normalised * (K1 + 1));
    };
    // Rarest terms first. A term held by most of the library cannot make a skill relevant on its
    // own (its weight is small), so it only scores the candidates rarer terms found: walking its
    // posting list would visit nearly every skill (most of the cost in a 10,000-skill library).
    const present = this.presentTerms(queryTerms, alternatives).sort((a, b) => this.postings.get(a[0])!.size - this.postings.get(b[0])!.size);
    for (const [term, weight] of present) {
      const documents = this.postings.get(term)!;
      const idf = (idfs.get(term) ?? this.idf(term)) * weight;
      const scored = board.scored;
      if (scored.length > 0 && documents.size > this.skills.size / 2) {
        // Only adds to skills already scored: the list does not grow meanwhile.
        for (let at = 0, count = scored.length; at < count; at++) {
          const posting = documents.get(this.slotNames[scored[at]!]!);
          if (posting) add(posting, idf);
        }
      } else for (const posting of documents.values()) add(posting, idf);
    }
    if (board.scored.length === 0) return [];
    const ranked = board.top(CANDIDATES).map(([slot, bm25]) => [this.slotNames[slot]!, bm25] as const);
    const idf = (term: string) => idfs.get(term) ?? this.idf(term);
    const total = this.idfTotal(queryTerms, alternatives, idf);
    const contextTotal = contextTerms.length > 0 ? this.idfTotal(contextTerms, NO_ALTERNATIVES, idf) : 0;
    const rare = rareTermIdf(this.skills.size);
    const forms = this.otherForms(queryTerms);
    // Which request words general language uses (see `KeywordHit.everyday`): looked up once per request, not per candidate.
    const statistics = termStatistics();
    const everydayTerms = new Set(queryTerms.filter((term) => statistics.share(term) > 0));
    return ranked.map(([name, bm25]) => {
      const skill = this.skills.get(name)!;
      const translated = { evidence: 0, specific: 0 };
      // A glossary word the segmenter cut in pieces ("优化" → 优|化) shares its translation among
      // them, so one piece carries a fraction of the word's weight: sum the pieces per translation
      // to judge the word's sense, not the piece's share of it.
      // (The glossary also gives a word's sense weight apart from a piece's share: the larger decides.)
      const byTranslation = new Map<string, { weight: number; sense: number; value: number }>();
      let strongest = 0;
      let everyday = false;
      const matched = this.matched(queryTerms, alternatives, skill, idf, nameWeight, forms, (value, translation, term) => {
        if (!translation) {
          if (value / rare > strongest) everyday = skill.named.has(term) && everydayTerms.has(term);
          strongest = Math.max(strongest, value / rare);
          return;
        }
        translated.evidence += value / rare;
        const sum = byTranslation.get(translation.term) ?? { weight: 0, sense: 0, value: 0 };
        byTranslation.set(translation.term, {
          weight: sum.weight + translation.weight,
          sense: Math.max(sum.sense, translation.sense ?? 0),
          value: sum.value + value,
        });
      });
      for (const { weight, sense, value } of byTranslation.values()) {
        if (value / rare > strongest) everyday = false;
        strongest = Math.max(strongest, value / rare);
        if (Math.max(weight, sense) >= SPECIFIC_TRANSLATION) translated.specific = Math.max(translated.specific, value / rare);
      }
      let coverage = total > 0 ? Math.min(1, matched / total) : 0;
      if (contextTotal > 0)
        coverage = Math.min(1, coverage + 0.25 * (this.matched(contextTerms, NO_ALTERNATIVES, skill, idf, nameWeight) / contextTotal) * coverage);
      return { name, bm25, coverage, evidence: matched / rare, translated, strongest, everyday };
    });
  }

  /** Inverse document frequency of a term over the library, blended with the background statistics. */
  idf(term: string): number {
    return blendedIdf(term, this.postings.get(term)?.size ?? 0, this.skills.size);
  }

  /** `alternatives` plus, for katakana terms nothing else stands for, the library's English terms that sound like them. */
  private withLoanwords(queryTerms: readonly string[], alternatives: Alternatives): Alternatives {
    let added: Map<string, readonly WeightedTerm[]> | undefined;
    const add = (term: string, english: readonly string[], pieces: number) => {
      added ??= new Map(alternatives);
      const weight = LOANWORD_WEIGHT / pieces;
      added.set(term, [...(added.get(term) ?? []), ...english.map((word) => ({ term: word, weight, sense: LOANWORD_WEIGHT }))]);
    };
    for (const term of queryTerms) {
      if (this.postings.has(term) || alternatives.get(term)?.some(({ term: other }) => this.postings.has(other))) continue;
      const english = this.soundsLike(term);
      if (english.length > 0) add(term, english, 1);
    }
    // The segmenter cuts a loanword it does not know in pieces ("ランブック" → ラン|ブック, "run" and
    // "book" to the glossary): katakana terms next to each other are also looked up whole, and the
    // word's weight is shared among its pieces, as the glossary shares a word's.
    for (let start = 0; start < queryTerms.length - 1; start++) {
      if (katakanaKey(queryTerms[start]!) === undefined) continue;
      let end = start + 1;
      while (end < queryTerms.length && katakanaKey(queryTerms[end]!) !== undefined) end++;
      const pieces = queryTerms.slice(start, end);
      const english = pieces.length > 1 ? this.soundsLike(pieces.join('')) : [];
      if (english.length > 0) for (const piece of pieces) add(piece, english, pieces.length);
      start = end - 1;
    }
    return added ?? alternatives;
  }

  /** The library's English terms that sound like a katakana word (see `LOANWORD_WEIGHT`). */
  private soundsLike(word: string): string[] {
    const key = katakanaKey(word);
    if (key === undefined || key.length < LOANWORD_KEY) return [];
    const found = new Set([...(this.sounds.get(key) ?? []), ...(this.sounds.get(key.endsWith('s') ? key.slice(0, -1) : `${key}s`) ?? [])]);
    return [...found].filter((english) => this.postings.has(english));
  }

  /** Query terms and alternatives some skill holds, each with its weight (a term written twice keeps the larger). */
  private presentTerms(queryTerms: readonly string[], alternatives: Alternatives): Array<[string, number]> {
    const present = new Map<string, number>();
    for (const term of queryTerms) if (this.postings.has(term)) present.set(term, 1);
    for (const list of alternatives.values())
      for (const { term, weight } of list) if (this.postings.has(term) && (present.get(term) ?? 0) < weight) present.set(term, weight);
    return [...present];
  }

  private idfTotal(terms: readonly string[], alternatives: Alternatives, idf: (term: string) => number): number {
    return queryMass(terms, alternatives, idf, (term) => this.postings.has(term));
  }

  private matched(
    terms: readonly string[],
    alternatives: Alternatives,
    skill: IndexedSkill,
    idf: (term: string) => number,
    nameWeight: number,
    forms: ReadonlyMap<string, readonly string[]> = NO_FORMS,
    onMatch?: (value: number, translation: WeightedTerm | undefined, term: string) => void,
  ): number {
    return matchedMass(
      terms,
      alternatives,
      idf,
      (term, translation) =>
        skill.named.has(term)
          ? nameWeight
          : skill.head.has(term)
            ? 1
            : skill.frequencies.has(term)
              ? (translation ? TRANSLATED_BODY_ONLY_WEIGHT : BODY_ONLY_WEIGHT) * bodyMentionShare(skill, term)
              : translation
                ? 0
                : OTHER_FORM_WEIGHT * otherFormWeight(forms.get(term), skill, nameWeight),
      onMatch,
    );
  }

  /** The library's terms that are another form of a request term (see `OTHER_FORM_WEIGHT`), by request term. */
  private otherForms(queryTerms: readonly string[]): Map<string, string[]> {
    const found = new Map<string, string[]>();
    for (const term of queryTerms) {
      if (term.length < FORM_PREFIX || !LATIN_TERM.test(term)) continue;
      const others = [...(this.forms.get(term.slice(0, FORM_PREFIX)) ?? [])].filter((other) => {
        const [short, long] = other.length < term.length ? [other, term] : [term, other];
        return long.startsWith(short) && FORM_ENDINGS.has(long.slice(short.length));
      });
      if (others.length > 0) found.set(term, others);
    }
    return found;
  }

  private remember(skill: Skill): void {
    const fields = {
      name: tokenize(skill.name.replaceAll('-', ' ')),
      description: tokenize(skill.description),
      keys: tokenize(this.searchKeys(skill)),
      body: tokenize(`${skill.category} ${skill.body}`),
    };
    const frequencies = new Map<string, number>();
    let length = 0;
    for (const field of ['name', 'description', 'keys', 'body'] as const) {
      const weight = FIELD_WEIGHTS[field];
      for (const term of fields[field]) frequencies.set(term, (frequencies.get(term) ?? 0) + weight);
      length += fields[field].length * weight;
    }
    // A description that only repeats the title ("Runbook Generator") says nothing of what the skill
    // does; its author put that at the top of the body, which then stands in for the description.
    const described = fields.description.filter((term) => !fields.name.includes(term)).length >= TITLE_ONLY_TERMS;
    const lead = described ? [] : fields.body.slice(0, LEAD_TERMS);
    // A category its author chose ("research") says what the skill is about as a description does;
    // the default one says nothing ("general" would also stem like "generate").
    const categorised = skill.category === DEFAULT_CATEGORY ? [] : tokenize(skill.category);
    const slot = this.freeSlots.pop() ?? this.slotNames.length;
    this.slotNames[slot] = skill.name;
    this.skills.set(skill.name, {
      slot,
      frequencies,
      head: new Set([...fields.name, ...fields.description, ...fields.keys, ...lead, ...categorised]),
      named: new Set(fields.name),
      length,
      bodyTerms: fields.body.length,
    });
    if (CJK.test(skill.description)) this.cjkSkills.add(skill.name);
    this.rememberSounds(`${skill.name.replaceAll('-', ' ')} ${skill.description} ${this.searchKeys(skill)} ${skill.body}`);
    this.totalLength += length;
    for (const [term, frequency] of frequencies) {
      let documents = this.postings.get(term);
      if (!documents) {
        this.postings.set(term, (documents = new Map<string, Posting>()));
        if (term.length >= FORM_PREFIX && LATIN_TERM.test(term)) {
          const prefix = term.slice(0, FORM_PREFIX);
          const terms = this.forms.get(prefix);
          if (terms) terms.add(term);
          else this.forms.set(prefix, new Set([term]));
        }
      }
      documents.set(skill.name, { slot, frequency, length });
    }
  }

  /** The sound keys of a skill's English words (see `LOANWORD_WEIGHT`). */
  private rememberSounds(text: string): void {
    for (const word of new Set(text.toLowerCase().match(LATIN_WORDS))) {
      const sound = soundOf(word);
      if (!sound) continue;
      const terms = this.sounds.get(sound.key);
      if (terms) terms.add(sound.term);
      else this.sounds.set(sound.key, new Set([sound.term]));
    }
  }

  private forget(name: string): void {
    const skill = this.skills.get(name);
    if (!skill) return;
    this.skills.delete(name);
    this.cjkSkills.delete(name);
    this.slotNames[skill.slot] = undefined;
    this.freeSlots.push(skill.slot);
    this.totalLength -= skill.length;
    for (const term of skill.frequencies.keys()) {
      const documents = this.postings.get(term);
      documents?.delete(name);
      if (documents?.size === 0) {
        this.postings.delete(term);
        this.forms.get(term.slice(0, FORM_PREFIX))?.delete(term);
      }
    }
  }
}

const soundCache = new Map<string, { key: string; term: string } | null>();

/** An English word's sound key and search term, or null for a stop word or a key too short to tell words apart. */
function soundOf(word: string): { key: string; term: string } | null {
  let sound = soundCache.get(word);
  if (sound === undefined) {
    const term = termOf(word);
    const key = englishKey(word);
    sound = term === undefined || key.length < LOANWORD_KEY ? null : { key, term };
    if (soundCache.size < 200_000) soundCache.set(word, sound);
  }
  return sound;
}

/** The field weight of the best of a request term's other forms the skill holds, 0 when it holds none. */
function otherFormWeight(others: readonly string[] | undefined, skill: IndexedSkill, nameWeight: number): number {
  let best = 0;
  for (const other of others ?? []) {
    const weight = skill.named.has(other) ? nameWeight : skill.head.has(other) ? 1 : skill.frequencies.has(other) ? BODY_ONLY_WEIGHT : 0;
    best = Math.max(best, weight);
  }
  return best;
}

/** 0..1: how fully a word the body alone holds counts, by how often the body says it for its length (see `BODY_TERMS_PER_MENTION`). */
function bodyMentionShare(skill: IndexedSkill, term: string): number {
  // A body-only term's field-weighted frequency is its count in the body times the body's weight.
  const mentions = (skill.frequencies.get(term) ?? 0) / FIELD_WEIGHTS.body;
  return Math.min(1, (mentions * BODY_TERMS_PER_MENTION) / Math.max(1, skill.bodyTerms));
}
