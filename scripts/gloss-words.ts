/**
 * The gloss-word loop the glossary builders share (scripts/build-glossary.ts and
 * scripts/build-glossary-names.ts): each says which English words a sense offers, this keeps them in
 * order, one per stem, so "user" and "users" are one search term.
 */
import { tokenize } from '../src/text/index.js';
import { glossTermOf } from '../src/text/tokenize.js';

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

/** The first two words stay whatever the senses: a character is looked up by them alone, and the reverse look-up reads them. */
const FIRST_KEPT = 2;

/** Verbs too light to carry a sense alone ("to go online", "to take part"): the word after one is the sense's head. */
const LIGHT_VERBS = new Set(['go', 'get', 'make', 'take', 'put', 'give', 'be', 'have', 'do', 'come', 'become', 'let', 'set']);

/**
 * Like `glossWords`, but every sense has a voice: the head of each sense, its first word that is no
 * light verb ("寄", whose fourth sense is "to send by post; to mail", keeps "send"), is kept before the
 * other words fill the rest of `most`, in order; the words come out in the senses' order. A head met
 * earlier makes that word a head. The first `allHeads` senses (written by hand) are heads in every
 * word. With more heads than `most`, the first `most`.
 */
export function glossWordsBySense(senses: readonly string[], clean: (sense: string) => readonly string[], most: number, allHeads = 0): string[] {
  const all: Array<{ word: string; head: boolean }> = [];
  const byStem = new Map<string, { word: string; head: boolean }>();
  senses.forEach((sense, index) => {
    const words = clean(sense).filter((word) => glossStem(word));
    const headIndex = Math.max(
      0,
      words.findIndex((word) => !LIGHT_VERBS.has(word)),
    );
    words.forEach((word, position) => {
      const stem = glossStem(word)!;
      const head = index < allHeads || position === headIndex;
      const earlier = byStem.get(stem);
      if (earlier) {
        earlier.head ||= head;
        return;
      }
      const entry = { word, head };
      byStem.set(stem, entry);
      all.push(entry);
    });
  });
  const kept = new Set(all.slice(0, Math.min(most, FIRST_KEPT)));
  for (const entry of all) if (entry.head && kept.size < most) kept.add(entry);
  let room = most - kept.size;
  return all.filter((entry) => kept.has(entry) || (!entry.head && room-- > 0)).map((entry) => entry.word);
}

/** A gloss word's search term (a filler verb such as "like" included: `glossTermOf`). */
export function glossStem(word: string): string | undefined {
  return tokenize(word)[0] ?? glossTermOf(word);
}
