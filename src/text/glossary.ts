import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { warmChineseWords } from './chinese-words.js';
import { dictionaryForms } from './deinflect.js';
import { GLOSSARY_FILES, shippedGlossaryTable } from './glossary-files.js';
import type { TermTable } from './line-table.js';
import { KINSHIP_VERSION, kinshipForms, kinshipNoun, kinshipNounsOf, kinshipPair, relativeGloss } from './kinship.js';
import { glossTermOf, termOf, tokenize, wordSegments } from './tokenize.js';

/**
 * The bundled bilingual glossaries (`data/glossary/*.tsv.gz`: Chinese and Japanese words with their
 * English glosses, from CC-CEDICT and the EDRDG's EDICT and COMPDIC; see data/glossary/README.md).
 * They let a Chinese or Japanese request find an English skill or memory, and the reverse, with no
 * embedding service and before any learning job has written search keys: a query's words are looked
 * up and their translations searched beside them, weighted below the words the user wrote.
 */
export type GlossaryLanguage = 'zh' | 'ja';

/** Of the languages a user writes, those a glossary translates English into (what recall also searches). */
export function glossaryLanguages(languages: readonly string[]): GlossaryLanguage[] {
  return languages.filter((language): language is GlossaryLanguage => language === 'zh' || language === 'ja');
}

/** A search term and how much it counts next to a term the user wrote (1). */
export interface WeightedTerm {
  term: string;
  weight: number;
  /**
   * The weight of the sense itself, before a word written as several query terms shares it among
   * them ("时间戳" is "时间" + "戳": "timestamp" counts half for each, and is still the word's first sense).
   */
  sense?: number;
}

/** A glossary word found in a text: its headword, and the query terms of the text it covers. */
export interface GlossaryWord {
  headword: string;
  language: GlossaryLanguage;
  sources: readonly string[];
}

/** For a query term, other terms that stand for it (its translations); it counts once, for the best of them. */
export type Alternatives = ReadonlyMap<string, readonly WeightedTerm[]>;

/**
 * A translation of a word counts this much of the word itself: all of it, since relevance asks for
 * evidence in rare terms and a dictionary word's first senses are what it means (tuned on the dev sets).
 */
const WORD_WEIGHT = 1;
/** A single character has many senses: its translations count for less. */
const CHARACTER_WEIGHT = 0.4;
/** Longest headword tried (characters). */
const LONGEST = 8;
/** Most segments one headword may join (ICU splits words the dictionary holds whole: "コン|フリ|ク|ト"). */
const MOST_SEGMENTS = 6;
/** A headword's first gloss is its main sense; the second counts this much of it, later ones `LATER_SENSE`. */
const SECOND_SENSE = 0.6;
const LATER_SENSE = 0.4;
/** Glosses of a single character beyond its first two are other senses, too many to search. */
const CHARACTER_GLOSSES = 2;
/** Translations kept per English word in the reverse direction, per language. */
const REVERSE_PER_WORD = 2;
/** Only this much of a request is looked up (a pasted log adds nothing but time). */
const LONGEST_TEXT = 2_000;

const CJK = /[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]/;
const KANA = /[\u3040-\u30ff]/;
const KATAKANA_WORD = /^[\u30a0-\u30ff]+$/;
const ENDS_IN_HIRAGANA = /[\u3040-\u309f]$/;

export class Glossary {
  /** Per language, headword → its English gloss words, as written in the file (stemmed on first use). */
  private readonly tables: Readonly<Record<GlossaryLanguage, TermTable>>;
  private readonly stems = new Map<string, readonly WeightedTerm[]>();
  private readonly headwordTerms = new Map<string, readonly string[]>();
  /** English stem → headwords per language, built on the first reverse look-up. */
  private reverse: Map<string, Partial<Record<GlossaryLanguage, ReverseEntry[]>>> | undefined;

  constructor(tables: Readonly<Record<GlossaryLanguage, TermTable>>) {
    this.tables = tables;
  }

  get size(): number {
    return this.tables.zh.size + this.tables.ja.size;
  }

  /**
   * English search terms of a headword (the tokenizer's stems of its gloss words), each with its
   * weight as a translation; undefined when it has no entry, or is a word the tokenizer drops (a particle).
   */
  english(headword: string, language: GlossaryLanguage): readonly WeightedTerm[] | undefined {
    const key = `${language}:${headword}`;
    let stems = this.stems.get(key);
    if (stems) return stems.length > 0 ? stems : undefined;
    const gloss = (language === 'zh' && this.tables.zh.has(headword) ? relativeGloss(headword) : undefined) ?? this.tables[language].get(headword);
    if (gloss === undefined) return undefined;
    const base = headword.length === 1 ? CHARACTER_WEIGHT : WORD_WEIGHT;
    let terms = [...new Set(gloss.split(' ').map(glossTermOf))].filter((term): term is string => term !== undefined);
    if (headword.length === 1) terms = terms.slice(0, CHARACTER_GLOSSES);
    stems =
      termOf(headword) === undefined ? [] : terms.map((term, index) => ({ term, weight: base * (index === 0 ? 1 : index === 1 ? SECOND_SENSE : LATER_SENSE) }));
    this.stems.set(key, stems);
    return stems.length > 0 ? stems : undefined;
  }

  /**
   * Alternatives for the Chinese and Japanese words of `text`: each word the glossary holds (longest
   * first, joining the pieces the segmenter cut it into) gives its English terms to the query terms
   * it covers, shared among them so the word counts once.
   */
  toEnglish(text: string): Map<string, WeightedTerm[]> {
    const alternatives = new Map<string, WeightedTerm[]>();
    for (const word of this.words(text)) {
      const english = this.english(word.headword, word.language);
      if (word.sources.length === 0 || !english) continue;
      for (const source of word.sources)
        for (const { term, weight } of english) push(alternatives, source, { term, weight: weight / word.sources.length, sense: weight });
      // A kinship noun is also written glued to a pronoun, or alone ("哥哥" asked, "我哥" told): each form stands for the others.
      const forms = word.language === 'zh' ? kinshipForms(word.headword) : [];
      if (forms.length === 0) continue;
      for (const source of word.sources)
        for (const form of [word.headword, ...forms]) push(alternatives, source, { term: form, weight: WORD_WEIGHT / word.sources.length, sense: WORD_WEIGHT });
    }
    return alternatives;
  }

  /**
   * The glossary's words in the Chinese or Japanese parts of `text` (longest first, joining the
   * pieces the segmenter cut a word into), each with the query terms it covers.
   */
  words(text: string): GlossaryWord[] {
    const words: GlossaryWord[] = [];
    const sample = text.length > LONGEST_TEXT ? text.slice(0, LONGEST_TEXT) : text;
    if (!CJK.test(sample)) return words;
    // Text with kana is Japanese; Han characters alone, Chinese (a character means different things in each).
    const language: GlossaryLanguage = KANA.test(sample) ? 'ja' : 'zh';
    const word = (headword: string, segments: readonly Segment[]) =>
      words.push({ headword, language, sources: [...new Set(segments.flatMap((segment) => segment.terms))] });
    for (const run of cjkRuns(sample)) {
      for (let start = 0; start < run.length;) {
        const span = this.longestAt(run, start, language);
        // "爸|妈" is read as 父母 (text/kinship.ts).
        const pair = language === 'zh' && start + 1 < run.length ? kinshipPair(run[start]!.text, run[start + 1]!.text) : undefined;
        if (pair !== undefined && this.tables.zh.has(pair)) {
          word(pair, run.slice(start, start + 2));
          start += 2;
          continue;
        }
        // "我妈" is looked up as 妈妈 (text/kinship.ts), unless a longer word starts there ("妈|妈" is 妈妈 already).
        const noun = language === 'zh' && (!span || span.segments === 1) ? kinshipNoun(run[start]!.text) : undefined;
        if (noun !== undefined && this.tables.zh.has(noun)) {
          word(noun, [run[start]!]);
          start++;
          continue;
        }
        if (span) {
          word(span.headword, run.slice(start, start + span.segments));
          start += span.segments;
          continue;
        }
        // The segmenter kept together what the dictionary has apart ("乱了"): look inside.
        for (const headword of this.wordsInside(run[start]!, language)) word(headword, [run[start]!]);
        start++;
      }
    }
    return words;
  }

  /** Alternatives in `languages` for the English terms of a query: the words whose main gloss is the term. */
  fromEnglish(terms: readonly string[], languages: readonly GlossaryLanguage[]): Map<string, WeightedTerm[]> {
    const alternatives = new Map<string, WeightedTerm[]>();
    if (languages.length === 0) return alternatives;
    const reverse = this.reverseIndex();
    for (const term of terms) {
      if (CJK.test(term)) continue;
      const entry = reverse.get(term);
      // A kinship word means its everyday noun, whichever of the noun's senses the dictionary lists it as.
      const kin = languages.includes('zh') ? kinshipNounsOf(term).map((headword) => ({ headword, weight: WORD_WEIGHT })) : [];
      if (!entry && kin.length === 0) continue;
      for (const language of languages) {
        for (const { headword, weight } of [...(language === 'zh' ? kin : []), ...(entry?.[language] ?? [])]) {
          const parts = this.termsOf(headword);
          for (const part of parts)
            for (const form of [part, ...kinshipForms(part)]) push(alternatives, term, { term: form, weight: weight / parts.length, sense: weight });
        }
      }
    }
    return alternatives;
  }

  private longestAt(run: readonly Segment[], start: number, language: GlossaryLanguage): { headword: string; segments: number } | undefined {
    let joined = '';
    let best: { headword: string; segments: number } | undefined;
    const table = this.tables[language];
    for (let end = start; end < run.length && end - start < MOST_SEGMENTS; end++) {
      joined += run[end]!.text;
      if (joined.length > LONGEST) break;
      const exact = table.has(joined);
      // An inflected Japanese word is looked up in its dictionary form; a lone kanji or a form ending
      // in kana that the dictionary also holds ("作": work, "使い": errand) is more often a verb's stem.
      const inflected =
        language === 'ja' && (!exact || joined.length === 1 || ENDS_IN_HIRAGANA.test(joined))
          ? this.dictionaryForm(joined, run[end + 1]?.text ?? '')
          : undefined;
      if (inflected !== undefined) best = { headword: inflected, segments: end - start + 1 };
      else if (exact) best = { headword: joined, segments: end - start + 1 };
    }
    return best;
  }

  /** The first of a Japanese word's possible dictionary forms that the glossary holds. */
  private dictionaryForm(word: string, next: string): string | undefined {
    return dictionaryForms(word, next).find((form) => this.tables.ja.has(form));
  }

  /**
   * Dictionary words inside one segment, longest first from each position. A katakana word is a
   * loanword: it is its known parts only when they make all of it ("フレームワーク": frame + work);
   * a part found inside an unknown one is a sound, not a word ("ブランチ" is no "lunch").
   */
  private wordsInside(segment: Segment, language: GlossaryLanguage): string[] {
    const found: string[] = [];
    const text = segment.text;
    let covered = 0;
    for (let start = 0; start < text.length;) {
      let length = Math.min(LONGEST, text.length - start);
      while (length > 0 && !this.tables[language].has(text.slice(start, start + length))) length--;
      if (length === 0) {
        start++;
        continue;
      }
      found.push(text.slice(start, start + length));
      covered += length;
      start += length;
    }
    return covered < text.length && KATAKANA_WORD.test(text) ? [] : found;
  }

  /** The tokenizer's terms of a headword, as a document holding it is indexed. */
  private termsOf(headword: string): readonly string[] {
    let terms = this.headwordTerms.get(headword);
    if (!terms) {
      terms = [...new Set(tokenize(headword))];
      this.headwordTerms.set(headword, terms);
    }
    return terms;
  }

  /**
   * English stem → headwords per language. The files list frequent words first, so the first word
   * whose main sense (first gloss word) is the English word is its everyday translation ("time":
   * 时间, not the alphabetically first 一度); the second kept may have it as its second gloss word
   * ("morning": 上午 beside 早上), and counts as a second sense.
   */
  private reverseIndex(): Map<string, Partial<Record<GlossaryLanguage, ReverseEntry[]>>> {
    if (this.reverse) return this.reverse;
    const reverse = new Map<string, Partial<Record<GlossaryLanguage, ReverseEntry[]>>>();
    // Gloss words repeat across headwords ("file", "data"): each is stemmed once.
    const stems = new Map<string, string | undefined>();
    const stemOf = (word: string) => {
      if (!stems.has(word)) stems.set(word, glossTermOf(word));
      return stems.get(word);
    };
    for (const language of ['zh', 'ja'] as const) {
      /** Per stem: the first headword with it as its main sense, and the first ones with it first or second. */
      const found = new Map<string, { main?: string; near: ReverseEntry[] }>();
      for (const [headword, gloss] of this.tables[language]) {
        // A relative's dictionary gloss is a path through others ("外婆": mother maternal…): it is reached through text/kinship.ts instead.
        if (headword.length < 2 || (language === 'zh' && relativeGloss(headword) !== undefined)) continue;
        for (const position of [0, 1] as const) {
          const word = glossWordAt(gloss, position);
          const stem = word === undefined ? undefined : stemOf(word);
          if (!stem) continue;
          let entry = found.get(stem);
          if (!entry) found.set(stem, (entry = { near: [] }));
          if (position === 0) entry.main ??= headword;
          if (entry.near.length < REVERSE_PER_WORD) entry.near.push({ headword, weight: weightOf(headword) * (position === 0 ? 1 : SECOND_SENSE) });
        }
      }
      for (const [stem, { main, near }] of found) {
        const first = main === undefined ? [] : [{ headword: main, weight: weightOf(main) }];
        let entry = reverse.get(stem);
        if (!entry) reverse.set(stem, (entry = {}));
        entry[language] = [...first, ...near.filter((other) => other.headword !== main)].slice(0, REVERSE_PER_WORD);
      }
    }
    this.reverse = reverse;
    return reverse;
  }
}

interface ReverseEntry {
  headword: string;
  weight: number;
}

interface Segment {
  text: string;
  /** The query terms the tokenizer makes of it (none for a stop word). */
  terms: readonly string[];
}

/** Runs of consecutive Chinese or Japanese word segments, each with its terms. */
function cjkRuns(text: string): Segment[][] {
  const runs: Segment[][] = [];
  let run: Segment[] = [];
  for (const segment of wordSegments(text)) {
    if (segment.isWordLike && CJK.test(segment.segment)) {
      const term = termOf(segment.segment);
      run.push({ text: segment.segment, terms: term === undefined ? [] : [term] });
      continue;
    }
    // Spaces, punctuation and Latin words end a run; a lone particle segment is word-like and stays.
    if (run.length > 0) runs.push(run);
    run = [];
  }
  if (run.length > 0) runs.push(run);
  return runs;
}

/** The first (0) or second (1) word of a gloss, without splitting all of it (tens of thousands are read at start). */
function glossWordAt(gloss: string, position: 0 | 1): string | undefined {
  const first = gloss.indexOf(' ');
  if (position === 0) return first < 0 ? gloss : gloss.slice(0, first);
  if (first < 0) return undefined;
  const second = gloss.indexOf(' ', first + 1);
  return second < 0 ? gloss.slice(first + 1) : gloss.slice(first + 1, second);
}

function weightOf(headword: string): number {
  return headword.length === 1 ? CHARACTER_WEIGHT : WORD_WEIGHT;
}

function push(alternatives: Map<string, WeightedTerm[]>, source: string, alternative: WeightedTerm): void {
  let list = alternatives.get(source);
  if (!list) alternatives.set(source, (list = []));
  const same = list.find((item) => item.term === alternative.term);
  if (same) {
    same.weight = Math.max(same.weight, alternative.weight);
    same.sense = Math.max(same.sense ?? same.weight, alternative.sense ?? alternative.weight);
  } else if (alternative.term !== source) list.push(alternative);
}

let shipped: Glossary | undefined;

/** The shipped glossaries, read once (some 50–100 ms; the proxy reads them at start, off the request path). */
export function glossary(): Glossary {
  shipped ??= new Glossary({ zh: shippedGlossaryTable('zh'), ja: shippedGlossaryTable('ja') });
  return shipped;
}

let shippedVersion: string | undefined;

/**
 * A fingerprint of the shipped glossary files and of the kinship reading (`KINSHIP_VERSION`): what was
 * indexed with their words can tell when an upgrade brought other words (and index again).
 */
export function glossaryVersion(): string {
  shippedVersion ??= createHash('sha256')
    .update(
      Object.values(GLOSSARY_FILES)
        .flat()
        .map((file) => createHash('sha256').update(readFileSync(file)).digest('hex'))
        .concat(KINSHIP_VERSION)
        .join(' '),
    )
    .digest('hex')
    .slice(0, 16);
  return shippedVersion;
}

/**
 * Reads the glossaries and the Chinese words the tokenizer joins pieces into now (and builds the
 * reverse look-up when `reverse` languages will be searched), off the request path.
 */
export function warmGlossary(reverse: readonly GlossaryLanguage[]): void {
  warmChineseWords();
  const words = glossary();
  if (reverse.length > 0) words.fromEnglish(['warm'], reverse);
}
