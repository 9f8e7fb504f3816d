/**
 * The gloss-word loop the glossary builders share (scripts/build-glossary.ts and
 * scripts/build-glossary-names.ts): each says which English words a sense offers, this keeps them in
 * order, one per stem, so "user" and "users" are one search term.
 */
import { tokenize } from '../src/text/index.js';

/** A dictionary sense without its notes in brackets ("(computing)", "[Zhong1 guo2]"). */
export function withoutNotes(sense: string): string {
  return sense.replace(/\([^)]*\)/g, ' ').replace(/\[[^\]]*\]/g, ' ');
}

/** A gloss word as it is matched: lower case, without a possessive "'s". */
export function plainWord(word: string): string {
  return word.toLowerCase().replace(/'s$/, '');
}

/**
 * The English words of the senses, in order: the words `clean` gives of each sense, a word whose stem
 * an earlier one has (or that the tokenizer makes nothing of) left out, at most `most`.
 */
export function glossWords(senses: readonly string[], clean: (sense: string) => readonly string[], most: number): string[] {
  const words: string[] = [];
  const stems = new Set<string>();
  for (const sense of senses)
    for (const word of clean(sense)) {
      const stem = tokenize(word)[0];
      if (!stem || stems.has(stem)) continue;
      stems.add(stem);
      words.push(word);
      if (words.length === most) return words;
    }
  return words;
}
