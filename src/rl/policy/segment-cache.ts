import type { TokenizerJson } from './tokenizer-files.js';

/**
 * Encoding by segments, remembered. A tokenizer cuts the text at its added tokens (`<|im_start|>`,
 * `<tool_call>`, …) before anything else, so the text between two of them is encoded on its own;
 * an agent's prompt repeats the same system prompt, tools and earlier messages every turn, and
 * encoding a 26k-token prompt takes 150–220 ms of the proxy's only thread. Only the new segments
 * are encoded; the ids are those of encoding the whole text, by construction of the tokenizer.
 *
 * That holds when every added token is matched as written: not normalized first, no whitespace
 * stripped around it, not only as a single word. A tokenizer with any other added token is
 * encoded whole, every time.
 */

/** Segments shorter than this are cheap to encode and not worth remembering. */
const MIN_CACHED_CHARS = 64;

export class SegmentEncoder {
  private readonly splitter: RegExp | undefined;
  private readonly addedIds = new Map<string, number>();
  private readonly cache = new Map<string, number[]>();
  private cachedChars = 0;

  constructor(
    tokenizer: TokenizerJson,
    private readonly encodeWhole: (text: string) => number[],
    /** Total characters of remembered segments; the least recently used go first. */
    private readonly maxCachedChars = 4_000_000,
  ) {
    const added = tokenizer.added_tokens;
    const exact = added.every((token) => token.normalized !== true && token.lstrip !== true && token.rstrip !== true && token.single_word !== true);
    if (!exact || added.length === 0) return;
    for (const token of added) this.addedIds.set(token.content, token.id);
    // Longest first, so a token that begins another never wins over it.
    const alternatives = [...this.addedIds.keys()].sort((left, right) => right.length - left.length).map(escapeRegExp);
    this.splitter = new RegExp(`(${alternatives.join('|')})`);
  }

  encode(text: string): number[] {
    if (this.splitter === undefined) return this.encodeWhole(text);
    const ids: number[] = [];
    for (const piece of text.split(this.splitter)) {
      if (piece === '') continue;
      const added = this.addedIds.get(piece);
      if (added !== undefined) ids.push(added);
      else for (const id of this.segment(piece)) ids.push(id);
    }
    return ids;
  }

  private segment(text: string): number[] {
    if (text.length < MIN_CACHED_CHARS) return this.encodeWhole(text);
    const known = this.cache.get(text);
    if (known !== undefined) {
      // Re-inserted: a Map iterates oldest first, so eviction takes the least recently used.
      this.cache.delete(text);
      this.cache.set(text, known);
      return known;
    }
    const ids = this.encodeWhole(text);
    if (text.length <= this.maxCachedChars) {
      this.cache.set(text, ids);
      this.cachedChars += text.length;
      for (const oldest of this.cache.keys()) {
        if (this.cachedChars <= this.maxCachedChars) break;
        this.cache.delete(oldest);
        this.cachedChars -= oldest.length;
      }
    }
    return ids;
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
