import { termOf } from './tokenize.js';

/**
 * What an abbreviated title or occupation stands for: "Dr. Paula Reis" is a doctor, "my GP" one too,
 * "Prof. Lima" a professor. The tokenizer keeps "dr", "gp" and "prof" as written (the thesaurus has
 * no two-letter words, and "gp" is "GPS" to its stemmer), so a question about "my family doctor"
 * shared no word with "My GP, Dr. Paula Reis, says my vitamin D is low". Indexed as related words,
 * like a quantity's dimension (`measures.ts`). Case matters: "dr" and "gp" in lower case are too
 * often something else, and "Dr" must precede a name ("Cromwell Dr" is a drive). (Dev histories,
 * recall@10: dev-xl 71.6 → 72.5, the others unchanged; test/fixtures/dev-recall/README.md.)
 */
const TITLES: ReadonlyArray<{ pattern: RegExp; words: readonly string[] }> = [
  { pattern: /\bDr\.? [A-Z]|\b(?:GP|GPs)\b/, words: ['doctor', 'physician'] },
  { pattern: /\bProf\.? [A-Z]/, words: ['professor'] },
];

const READY = TITLES.map(({ pattern, words }) => ({
  pattern,
  terms: words.map((word) => termOf(word)).filter((term): term is string => term !== undefined),
}));

/** The search terms of what a text's abbreviated titles stand for (none for a text without one). */
export function titleTerms(text: string): string[] {
  const found = new Set<string>();
  for (const { pattern, terms } of READY) if (pattern.test(text)) for (const term of terms) found.add(term);
  return [...found];
}

/** Changes with the table: an index written with another one is rebuilt (see `indexWordsVersion`). */
export const TITLES_VERSION = 'titles-1';
