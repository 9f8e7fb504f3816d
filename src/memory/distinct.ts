import { jaccard } from '../text/index.js';
import type { MemoryUnit } from './types.js';

/**
 * Two texts whose word sets overlap this much (Jaccard), and that hold the same numbers, say the
 * same thing: a question asked again with other punctuation or case, the same reply to it. A number
 * is what tells one fact from the next ("box 3 holds the red folders", "box 5 …"; "the 9:40 train",
 * "the 10:15 train"), however long the sentence around it.
 */
export const NEAR_COPY = 0.8;

/** Lengths of near-copies differ by at most this ratio: most pairs are told apart without reading their words. */
const LENGTH_RATIO = 0.7;

/** What `distinctHits` kept, and whether it left any hit out. */
export interface Distinct<T> {
  kept: T[];
  dropped: number;
}

/**
 * The best `limit` of `hits` (best first) without those that add nothing to what is kept: a raw
 * user turn that only repeats the query (a question asked before holds no answer; the reply after
 * it is still recalled through its neighbour terms), and near-copies of a hit already kept. A member
 * who asks the same question every morning would otherwise get every place filled with her own
 * earlier questions and the identical replies to them, and the memory that answers crowded out.
 * Words here are the text's own, split at punctuation (no segmenter, no stemming): on the request
 * path, and a copy is a copy in any form.
 */
export function distinctHits<T extends { unit: MemoryUnit }>(hits: readonly T[], query: string, limit: number): Distinct<T> {
  const asked = plainWords(query);
  const kept: Array<{ hit: T; words: ReadonlySet<string> | undefined }> = [];
  let dropped = 0;
  for (const hit of hits) {
    if (kept.length >= limit) break;
    const { content } = hit.unit;
    let words: ReadonlySet<string> | undefined;
    const wordsOf = () => (words ??= plainWords(content));
    const repeats = hit.unit.origin === 'raw_turn' && hit.unit.speaker === 'user' && similarLength(content, query) && sameSaying(wordsOf(), asked);
    const copies =
      !repeats &&
      kept.some((other) => similarLength(content, other.hit.unit.content) && sameSaying(wordsOf(), (other.words ??= plainWords(other.hit.unit.content))));
    if (repeats || copies) dropped++;
    else kept.push({ hit, words });
  }
  return { kept: kept.map(({ hit }) => hit), dropped };
}

function sameSaying(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (jaccard(a, b) < NEAR_COPY) return false;
  for (const word of a) if (DIGITS.test(word) && !b.has(word)) return false;
  for (const word of b) if (DIGITS.test(word) && !a.has(word)) return false;
  return true;
}

const DIGITS = /\p{N}/u;

function similarLength(a: string, b: string): boolean {
  return Math.min(a.length, b.length) >= LENGTH_RATIO * Math.max(a.length, b.length);
}

/** Lower-case words split at anything not a letter or digit; Chinese and Japanese, each character (they have no spaces). */
function plainWords(text: string): Set<string> {
  const words = new Set<string>();
  for (const word of text
    .toLowerCase()
    .replace(CJK, ' $& ')
    .match(/[\p{L}\p{N}]+/gu) ?? [])
    words.add(word);
  return words;
}

const CJK = /[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]/g;
