import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { ConfigError } from '../errors.js';
import { parseDataFile, TERM_ENTRY_CHARACTERS, termLineTable, termListFileSchema } from './data-file.js';
import type { Alternatives, WeightedTerm } from './glossary.js';

/**
 * The bundled similar English words (`data/similar-words/en.json.gz`, from word vectors derived from
 * GloVe; see data/README.md): for a search term, the few terms used in the most similar contexts.
 * They link what WordNet's related words (the thesaurus) do not: "lender" and "mortgage", "nut" and
 * "peanut", "allergic" and "allergy".
 */
const SIMILAR_WORDS_FILE = new URL('../../data/similar-words/en.json.gz', import.meta.url);

/**
 * A similar word of a query word counts this much of the word itself (halved again where the memory
 * holds the word as written; see retrieval.ts). Tuned on the dev histories (issue 13, branch
 * `memglove37`): 0.5 found one question fewer ("nut" → "peanut"), 0.7 lost one on another history.
 */
export const SIMILAR_WORD_WEIGHT = 0.6;

/** A space where no list has one: lines are a term, a tab, its similar terms (space-separated). */
const MISPLACED_SPACE = /(?:^| |\t|\n) | {2}| (?:$|\t|\n)|\t(?:$|\n)/;

export interface SimilarWords {
  /** The similar terms of a term, nearest first; none when it has no entry. */
  similar(term: string): readonly string[];
  readonly size: number;
}

/** Parses and checks a similar-words file; throws an error naming the file and what is wrong. */
export function parseSimilarWords(text: string, source: string): SimilarWords {
  const { entries } = parseDataFile(text, source, termListFileSchema);
  if (!TERM_ENTRY_CHARACTERS.test(entries) || MISPLACED_SPACE.test(entries))
    throw new ConfigError(`${source}: entries: expected lines of a term, a tab, similar terms (search terms, space-separated)`);
  const refused = (line: string) => new ConfigError(`${source}: entry "${line.slice(0, 60)}": expected a new term, a tab, similar terms`);
  for (const line of entries.split('\n')) {
    const tab = line.indexOf('\t');
    if (tab <= 0 || line.indexOf('\t', tab + 1) >= 0) throw refused(line);
  }
  /** Term → its list as written, kept as the file's text (line-table.ts); split on first look-up (most terms are never looked up). */
  const lines = termLineTable(entries, refused);
  const split = new Map<string, readonly string[]>();
  const none: readonly string[] = [];
  return {
    similar(term) {
      let terms = split.get(term);
      if (terms) return terms;
      const line = lines.get(term);
      if (line === undefined) return none;
      terms = line.split(' ').filter((similar) => similar !== term);
      split.set(term, terms);
      return terms;
    },
    size: lines.size,
  };
}

let shipped: SimilarWords | undefined;

/** The shipped similar words, read and checked once (some 10–15 ms; the proxy reads them at start). */
export function similarWords(): SimilarWords {
  shipped ??= parseSimilarWords(gunzipSync(readFileSync(SIMILAR_WORDS_FILE)).toString('utf8'), 'data/similar-words/en.json.gz');
  return shipped;
}

/**
 * The similar words of a query's terms as alternatives, each `SIMILAR_WORD_WEIGHT` of the term:
 * "Which lender is financing our home?" also searches "mortgage". Recall counts them only for the
 * query's rare words (see retrieval.ts).
 */
export function similarWordAlternatives(terms: readonly string[], words: SimilarWords = similarWords()): Alternatives {
  const found = new Map<string, readonly WeightedTerm[]>();
  for (const term of terms) {
    const similar = words.similar(term);
    if (similar.length > 0)
      found.set(
        term,
        similar.map((alternative) => ({ term: alternative, weight: SIMILAR_WORD_WEIGHT })),
      );
  }
  return found;
}
