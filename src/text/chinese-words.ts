import { shippedGlossaryTable } from './glossary-files.js';
import type { PieceSet } from './line-table.js';

/**
 * Chinese words as the bundled glossary writes them, read from ICU's word pieces. ICU's dictionary
 * cuts many modern words into single characters ("优|化", "文|档", "多伦|多", "起|亚"), so a word was
 * indexed as two common characters, and the same word could be cut differently in a question and in
 * a stored turn. Adjacent pieces whose concatenation is a headword (the longest one) are one word
 * here. ICU also glues a modifier to the word after it ("很喜欢", "也可以", "好主意"): a piece that is
 * no headword, made of such a character and a headword of two or more characters, is two words, so
 * "喜欢" written alone meets "很喜欢". Chinese dev histories, recall@5: dev-zh 78.8 → 82.7 %.
 */

/** Longest headword joined (characters) and most pieces one word may join, as the glossary looks words up. */
const LONGEST = 8;
const MOST_PIECES = 6;
/**
 * Characters ICU glues to the word after them that modify it: degree adverbs (很, 太, 挺, 最, 更,
 * 真), "also", "all", "still", "then", "only", "again" (也, 都, 还, 就, 才, 又, 再), and "good" (好主意).
 */
const MODIFIERS = new Set([...'很太挺最更真好也都还就才又再']);

let prefixes: PieceSet | undefined;

/**
 * The proper prefixes of the shipped Chinese glossary's headwords, read once: a join is extended only
 * while the joined text begins some headword. The headwords themselves are the glossary's own table
 * (glossary-files.ts), not a copy: the prefixes are pieces of its text.
 */
function headwordPrefixes(): PieceSet {
  prefixes ??= shippedGlossaryTable('zh').keyPrefixes();
  return prefixes;
}

/** Reads the headwords and their prefixes now, off the request path (the proxy does at start). */
export function warmChineseWords(): void {
  headwordPrefixes();
}

/**
 * The words of one run of consecutive Chinese pieces (ICU's segments, Han characters only):
 * pieces joined where the glossary holds the joined word (the longest, from each position), a
 * modifier glued to a headword cut off, the other pieces as ICU cut them.
 */
export function chineseWords(pieces: readonly string[]): string[] {
  const headwords = shippedGlossaryTable('zh');
  const starts = headwordPrefixes();
  const words: string[] = [];
  for (let start = 0; start < pieces.length;) {
    const first = pieces[start]!;
    let joined = first;
    let length = 1;
    // Extend only while the joined text begins some headword: most pieces begin none longer.
    if (starts.has(first))
      for (let end = start + 1; end < pieces.length && end - start < MOST_PIECES; end++) {
        joined += pieces[end]!;
        if (joined.length > LONGEST) break;
        if (headwords.has(joined)) length = end - start + 1;
        if (!starts.has(joined)) break;
      }
    if (length > 1) words.push(pieces.slice(start, start + length).join(''));
    else if (first.length >= 3 && MODIFIERS.has(first[0]!) && !headwords.has(first) && headwords.has(first.slice(1))) words.push(first[0]!, first.slice(1));
    else words.push(first);
    start += length;
  }
  return words;
}
