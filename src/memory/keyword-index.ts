import { createHash } from 'node:crypto';
import {
  blendedIdf,
  glossary,
  glossaryVersion,
  measureTerms,
  MEASURES_VERSION,
  TOKENIZER_VERSION,
  thesaurus,
  thesaurusVersion,
  titleTerms,
  TITLES_VERSION,
} from '../text/index.js';

/**
 * The keyword index of memory units as both engines hold it: what a unit's entry is made of (its
 * tokens: scope-keyed terms, some marked) and how a query's posting lists become ranked keyword
 * candidates. SQLite (MemoryStore, FTS5) and PostgreSQL (store/postgres/memory-search.ts) read
 * posting lists their own way and share everything else, so both rank exactly alike.
 */

/** The columns of a unit its index entry is built from. */
export interface IndexedRow {
  content: string;
  /** Space-separated terms (with those of its search keys). */
  terms: string;
  /** A raw turn's: the terms of the raw turn before it. */
  neighbour_terms: string;
  previous_raw: number | null;
}

/**
 * How many holders of one term a search visits (the newest). Rare terms reach every holder; a term
 * held by more units than this carries little weight (the rare terms of the query do the ranking),
 * and visiting every holder costs ~0.3 µs each: milliseconds per request once a scope holds
 * thousands of similar turns.
 */
export const POSTINGS_PER_TERM = 200;

/** How much a query term found only in the raw turn before or after a unit counts, against one in the unit itself. */
export const NEIGHBOUR_WEIGHT = 0.5;
/**
 * How much a query term a unit holds only in another form counts: as the English gloss of one of
 * its Chinese or Japanese words (a gloss may be another sense than the one meant), or as the start
 * of a longer word when no unit holds the word itself ("physio" of "physiotherapist"). Tuned on the
 * dev histories (0.4–0.8 within a point or two).
 */
export const PARTIAL_WEIGHT = 0.6;
/**
 * How much a query term a unit holds only as a word related to its own counts (a synonym of a
 * word's first senses, or what it is a kind of): tuned on the tuned and dev histories.
 */
export const KINDRED_WEIGHT = 0.6;
/**
 * How many units holding a term only as a related word a search visits (the newest): a common word
 * ("time", "work") is related to hundreds of others, and those holders would double a search's cost
 * for evidence that weighs little.
 */
export const KINDRED_POSTINGS = 50;
/** Related terms indexed per unit at most. */
const MOST_KINDRED_TERMS = 60;
/** Glossed terms indexed per unit at most (a long Chinese answer has hundreds of words). */
const MOST_GLOSS_TERMS = 200;
/** An English query term that may be the short form of a longer word: only these are looked up as a prefix. */
export const SHORTENED = /^[a-z]{4,}$/;
export const CJK = /[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]/;
/**
 * A session is about what its first user turn says ("We found a flat in Benfica!"); the user's later
 * turns answer without naming it ("May 2. The landlord loves cats."), or name a detail the opening
 * lacks. So a query term the opening holds also counts, this much, for the user turns after it,
 * and one a later user turn holds for the opening. Below the neighbours' weight: a session is a
 * looser tie than the next turn. Tuned on the dev histories (0.1–0.2 within a question or two;
 * 0.3 lost questions whose answer is the opening itself, outranked by its own session's turns).
 */
export const SESSION_WEIGHT = 0.15;
/**
 * Terms held by more units than this lend no credit through sessions: each holder costs a look-up
 * of its session, and a common term says little about which session a question means.
 */
export const SESSION_MAX_FREQUENCY = 30;
/** How many of the user turns after a session's opening one it lends its words to (the answers come soon after it). */
export const SESSION_FOLLOWERS = 2;
/** Terms held by more units than this are not looked up through neighbours. */
export const NEIGHBOUR_MAX_FREQUENCY = 60;
/** The neighbour terms taken from each side (the first ones: a long answer's opening says what it is about). */
export const NEIGHBOUR_TERMS = 80;
/**
 * Evidence often sits next to the turn a question matches (the answer to the user's question, the
 * user's reply to a suggestion): a raw turn's entry also holds, marked, the terms of the turn before
 * it (credited to itself) and its own terms again (credited to that turn before it). Both are written
 * once, when the turn is stored: entries are never rewritten on ingestion, which keeps the index
 * compact. The marks are letters before the scope key, so marked terms are other tokens.
 */
export const AFTER_MARK = 'n';
export const BEFORE_MARK = 'b';
/**
 * Chinese and Japanese text is also indexed, marked, under the English terms of its words' glosses
 * (the bundled glossary, every sense): an English question then finds a memory told in Chinese.
 * Translating each stored text once finds far more than translating the question's words into the
 * few Chinese words whose main sense they are (many words share an English sense; the text knows which it used).
 */
export const GLOSS_MARK = 'g';
/**
 * English text is also indexed, marked, under the common words related to its words (synonyms and
 * hypernyms from the bundled thesaurus): a question about "my dog" then finds "my greyhound",
 * one about a "doctor" the "physician". Written once, like the glosses.
 */
export const KINDRED_MARK = 'h';

/**
 * A term's IDF in a scope of `size` units, `documentFrequency` of which hold it, blended with the
 * background statistics: a young memory of a few units still knows a common word from a rare one.
 */
export function idfOf(term: string, documentFrequency: number, size: number): number {
  return blendedIdf(term, documentFrequency, size);
}

const scopePrefixes = new Map<string, string>();

/** A term as indexed: prefixed by its scope's key, so scopes share no tokens. */
export function scopedTerm(scope: string, term: string): string {
  let prefix = scopePrefixes.get(scope);
  if (!prefix) {
    prefix = `s${createHash('sha1').update(scope).digest('hex').slice(0, 11)}`;
    if (scopePrefixes.size > 10_000) scopePrefixes.clear();
    scopePrefixes.set(scope, prefix);
  }
  return `${prefix}${term.replace(/[^\p{L}\p{N}]/gu, '')}`;
}

/** The bundled words an index entry is written with (glosses of Chinese and Japanese words, related English words): their version. */
export function indexWordsVersion(): string {
  return `${glossaryVersion()}+${thesaurusVersion()}+${MEASURES_VERSION}+${TITLES_VERSION}+${TOKENIZER_VERSION}`;
}

/** A unit's index entry (its tokens, as both engines store them): its own terms; for a raw turn after another, that turn's terms and its own again, marked. */
export function indexTokens(scope: string, row: IndexedRow): string[] {
  return withNeighbourTokens(scope, row, ownIndexTokens(scope, row));
}

/**
 * The part of a unit's index entry made from its own text (terms, glosses, related words): nearly all
 * of the work, and independent of the turn before it, so a batch makes it before its write transaction.
 */
export function ownIndexTokens(scope: string, row: Pick<IndexedRow, 'content' | 'terms'>): string[] {
  const own = row.terms.split(' ').filter(Boolean);
  const held = new Set(own);
  const tokens = own.map((term) => scopedTerm(scope, term));
  const glossed = glossTerms(row.content);
  for (const term of glossed) if (!held.has(term)) tokens.push(GLOSS_MARK + scopedTerm(scope, term));
  // The related words of the glosses too: "家庭医生" is glossed "family doctor", and a question may say "physician".
  const glossedSet = new Set(glossed);
  // And the words a question asks about its quantities with ("4.3 kg" is indexed under "weight" and
  // "heavy"), and what its abbreviated titles stand for ("Dr. Reis": doctor).
  const kindred = new Set([...kindredTerms([...own, ...glossed]), ...measureTerms(row.content), ...titleTerms(row.content)]);
  for (const term of kindred) if (!held.has(term) && !glossedSet.has(term)) tokens.push(KINDRED_MARK + scopedTerm(scope, term));
  return tokens;
}

/** A unit's whole entry from its own tokens (`ownIndexTokens` of the same row): a raw turn after another adds the neighbour's terms and its own first ones, marked. */
export function withNeighbourTokens(scope: string, row: IndexedRow, ownTokens: readonly string[]): string[] {
  const tokens = [...ownTokens];
  if (row.previous_raw === null) return tokens;
  const own = row.terms.split(' ').filter(Boolean);
  const held = new Set(own);
  for (const term of row.neighbour_terms.split(' ')) if (term && !held.has(term)) tokens.push(AFTER_MARK + scopedTerm(scope, term));
  for (const term of own.slice(0, NEIGHBOUR_TERMS)) tokens.push(BEFORE_MARK + scopedTerm(scope, term));
  return tokens;
}

/** The English terms of the glosses of a text's Chinese and Japanese words (none for a text without them). */
function glossTerms(content: string): string[] {
  const words = glossary();
  const found = new Set<string>();
  for (const word of words.words(content)) for (const { term } of words.english(word.headword, word.language) ?? []) found.add(term);
  return [...found].slice(0, MOST_GLOSS_TERMS);
}

/** The common words related to a unit's own English terms (their synonyms and hypernyms, the bundled thesaurus). */
function kindredTerms(own: readonly string[]): string[] {
  const words = thesaurus();
  const found = new Set<string>();
  for (const term of own) {
    for (const kindred of words.related(term)) found.add(kindred);
    if (found.size >= MOST_KINDRED_TERMS) break;
  }
  return [...found].slice(0, MOST_KINDRED_TERMS);
}

/** The terms a turn lends the one next to it: the first ones (a long answer's opening says what it is about). */
export function neighbourTerms(terms: string): string {
  return terms.split(' ').slice(0, NEIGHBOUR_TERMS).join(' ');
}

/** A raw turn as the turn after it reads it: its rowid, own terms, text, speaker and the words it was lent. */
export interface LinkedTurn {
  rowid: number;
  terms: string;
  content: string;
  speaker: string | null;
  neighbour_terms: string;
}

/**
 * Longest assistant question (characters) through which the turn after it also borrows the words
 * of the turn before it: a short clarifying question ("Who's your teacher?", "Which one was it?"),
 * not an answer that ends by asking something.
 */
export const CLARIFYING_QUESTION_CHARS = 80;

/**
 * Whether a raw turn is the assistant's short clarifying question: the user's reply to it is about
 * what the user said before it ("Portuguese class tonight" / "Who's your teacher?" / "Marta, at the
 * school near Saldanha"), so the reply borrows those words too, through the question.
 */
export function clarifyingQuestion(turn: Pick<LinkedTurn, 'content' | 'speaker'>): boolean {
  const text = turn.content.trim();
  return turn.speaker === 'assistant' && text.length <= CLARIFYING_QUESTION_CHARS && /[?？]$/.test(text);
}

/**
 * A raw turn's link to the raw turn said before it, as both engines store it: that turn and the
 * words it lends (after a clarifying question, the question's words and those it was lent, the
 * turn before it: at most NEIGHBOUR_TERMS in all), or none. A turn's link therefore depends on the
 * turns before it back through any run of clarifying questions: editing or deleting a turn relinks
 * the turns after it along that run (`MemoryStore.relinkFrom`, and the team store's relink).
 */
export function rawLink(previous: LinkedTurn | undefined): { previous_raw: number | null; neighbour_terms: string } {
  if (!previous) return { previous_raw: null, neighbour_terms: '' };
  const own = neighbourTerms(previous.terms);
  if (!clarifyingQuestion(previous) || previous.neighbour_terms === '') return { previous_raw: previous.rowid, neighbour_terms: own };
  const lent = new Set([...own.split(' '), ...previous.neighbour_terms.split(' ')].filter(Boolean));
  return { previous_raw: previous.rowid, neighbour_terms: [...lent].slice(0, NEIGHBOUR_TERMS).join(' ') };
}

/**
 * The turn a raw turn follows once raw turns are deleted: past every deleted one (`deleted`: each
 * one's own previous turn), the nearest earlier turn that stays, or none. Deleting one turn at a
 * time (SQLite) comes to the same: each deletion hands the follower the deleted turn's previous.
 */
export function survivingPrevious(previous: number | null, deleted: ReadonlyMap<number, number | null>): number | null {
  let current = previous;
  // A chain of deleted turns is at most as long as the batch: the bound only guards a corrupt loop.
  for (let steps = 0; current !== null && deleted.has(current) && steps <= deleted.size; steps++) current = deleted.get(current) ?? null;
  return current !== null && deleted.has(current) ? null : current;
}

/** A query term's posting lists, as an engine read them (rowids newest first). */
export interface TermPostings {
  /** The newest units holding the term itself (at most POSTINGS_PER_TERM). */
  rows: number[];
  /** Units holding it only in another form: its gloss, or (see `needsPrefix`) a longer word it begins. */
  partial: number[];
  /** The newest units holding it only as a related word (at most KINDRED_POSTINGS). */
  kindred: number[];
  /** How many units hold the term itself: `rows.length` unless that list was capped. */
  frequency: number;
}

/** Where ranking reads posting lists: synchronous (SQLite reads them as it goes, PostgreSQL hands over lists read beforehand). */
export interface PostingSource {
  postings(term: string): TermPostings;
  /**
   * Asked only for a term held by 1..NEIGHBOUR_MAX_FREQUENCY units: the units whose entry holds it
   * as said in the raw turn after them (`after`), and those holding it marked for the turn before them (`before`).
   */
  neighbours(term: string): { after: readonly number[]; before: readonly number[] };
  /** The raw turn before each of these units, for those that have one. */
  previousOf(rowids: readonly number[]): ReadonlyArray<{ rowid: number; previous: number }>;
  /**
   * For those of these units that are a user's raw turn in a session, in rowid order: the session's
   * first user turn (`opening`, the unit itself for an opening) and, for an opening, the next
   * SESSION_FOLLOWERS user turns of its session (`followers`, in order; none for the others).
   * Absent for the search of feedback terms (as written): a session's turns would all share in the
   * words of its best turn, which say nothing of them.
   */
  sessions?(rowids: readonly number[]): ReadonlyArray<{ rowid: number; opening: number; followers: readonly number[] }>;
}

/** A unit that matched, with the query terms it matched and how. */
export interface RankedPosting {
  rowid: number;
  weight: number;
  matched: string[];
  related: string[];
  partial: string[];
  kindred: string[];
  /** Query terms found only in another user turn of its session (see SESSION_WEIGHT). */
  session: string[];
}

export interface RankedPostings {
  /** Best first (equal weights: in the order the units were first met). */
  ranked: RankedPosting[];
  idf: Map<string, number>;
  /** Query terms no unit of the scope holds. */
  unknown: Set<string>;
}

/** Whether an English term no unit holds, itself or glossed, is looked up as the start of longer words. */
export function needsPrefix(term: string, rows: readonly number[], partial: readonly number[]): boolean {
  return rows.length === 0 && partial.length === 0 && SHORTENED.test(term);
}

/** Whether a term's gloss and related-word lists are read (they are English; a Chinese or Japanese term has none). */
export function hasEnglishForms(term: string): boolean {
  return !CJK.test(term);
}

/** A term's IDF in a scope of `size` units from its posting lists: units holding it in any form count. */
export function termIdf(term: string, postings: TermPostings, size: number): number {
  return idfOf(term, Math.min(size, postings.frequency + postings.partial.length + postings.kindred.length), size);
}

/**
 * Keyword candidates, term at a time: each query term's posting lists add its IDF (scaled by
 * `translationWeights` for a translation) to the units holding it, a share of it to those holding
 * it in another form or through a neighbouring raw turn. Cheaper than BM25 over every match, and it
 * yields the coverage the relevance threshold needs anyway.
 */
export function rankPostings(source: PostingSource, terms: readonly string[], size: number, translationWeights?: ReadonlyMap<string, number>): RankedPostings {
  const idfs = new Map<string, number>();
  const unknown = new Set<string>();
  const weights = new Map<number, RankedPosting>();
  const entry = (rowid: number) => {
    let found = weights.get(rowid);
    if (!found) weights.set(rowid, (found = { rowid, weight: 0, matched: [], related: [], partial: [], kindred: [], session: [] }));
    return found;
  };
  const credit = (rowid: number, term: string, idf: number) => {
    const found = entry(rowid);
    if (found.matched.includes(term) || found.related.includes(term)) return;
    found.weight += idf * NEIGHBOUR_WEIGHT;
    found.related.push(term);
  };
  /** Units whose entry holds a term as said in the turn after them (before → the unit before it gets the credit). */
  const before = new Map<number, Array<[string, number]>>();
  /** Units holding a term rare enough to be looked up through their sessions. */
  const held = new Map<number, Array<[string, number]>>();
  for (const term of terms) {
    const postings = source.postings(term);
    const { rows, partial, kindred } = postings;
    const idf = termIdf(term, postings, size);
    idfs.set(term, idf);
    const weight = idf * (translationWeights?.get(term) ?? 1);
    for (const rowid of partial) {
      const found = entry(rowid);
      found.weight += weight * PARTIAL_WEIGHT;
      found.partial.push(term);
    }
    for (const rowid of kindred) {
      const found = entry(rowid);
      if (found.partial.includes(term)) continue;
      found.weight += weight * KINDRED_WEIGHT;
      found.kindred.push(term);
    }
    // No unit holds it, so no unit's neighbour does either.
    if (rows.length === 0) {
      if (partial.length === 0 && kindred.length === 0) unknown.add(term);
      continue;
    }
    for (const rowid of rows) {
      const found = entry(rowid);
      found.weight += weight;
      found.matched.push(term);
    }
    // Through neighbours, only terms rare enough to say something: a common one would triple the cost and add noise.
    if (rows.length > NEIGHBOUR_MAX_FREQUENCY) continue;
    if (rows.length <= SESSION_MAX_FREQUENCY)
      for (const rowid of rows) {
        const terms = held.get(rowid);
        if (terms) terms.push([term, idf]);
        else held.set(rowid, [[term, idf]]);
      }
    const neighbours = source.neighbours(term);
    for (const rowid of neighbours.after) credit(rowid, term, idf);
    for (const rowid of neighbours.before) {
      const terms = before.get(rowid);
      if (terms) terms.push([term, idf]);
      else before.set(rowid, [[term, idf]]);
    }
  }
  // A hit in the turn after a unit is the unit's: one lookup finds which unit each of those follows.
  if (before.size > 0)
    for (const { rowid, previous } of source.previousOf([...before.keys()])) for (const [term, idf] of before.get(rowid)!) credit(previous, term, idf);
  // Then through sessions (after the neighbours: a term a unit holds or borrows from the next turn counts that way once).
  if (held.size > 0 && source.sessions) {
    const sessionCredit = (rowid: number, term: string, idf: number) => {
      const found = entry(rowid);
      if (found.matched.includes(term) || found.related.includes(term) || found.session.includes(term)) return;
      found.weight += idf * SESSION_WEIGHT;
      found.session.push(term);
    };
    for (const { rowid, opening, followers } of source.sessions([...held.keys()]))
      for (const [term, idf] of held.get(rowid)!)
        if (opening !== rowid) sessionCredit(opening, term, idf);
        else for (const follower of followers) sessionCredit(follower, term, idf);
  }
  // A stable sort: equal weights keep the order units were met in, the same in both engines.
  const ranked = [...weights.values()].sort((a, b) => b.weight - a.weight);
  return { ranked, idf: idfs, unknown };
}
