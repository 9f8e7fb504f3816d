/**
 * A read-only table of the lines of shipped data files, each `key<TAB>value`, looked up by key.
 * It keeps the files' own text and, per key, one number in a typed-array hash index: a Map of the
 * same lines (a string object per key and per value, and the Map's own table) took 3–4 times the
 * text's size, some 19 MiB of the proxy's heap for the glossaries, the thesaurus and the similar
 * words; and V8 sizes the heap from what is live, so under load it cost more again in RSS.
 */

const EMPTY = -1;
const TAB = 9;
/** Slots per piece: about two thirds full, so a look-up ends within a few slots. */
const SLOTS_PER_PIECE = 1.5;

/** 32-bit FNV-1a of `length` characters of `text` from `start`. */
function hashOf(text: string, start: number, length: number): number {
  let hash = 0x811c9dc5;
  for (let index = start; index < start + length; index++) hash = Math.imul(hash ^ text.charCodeAt(index), 0x01000193);
  return hash >>> 0;
}

/**
 * Open addressing over pieces of one text, each kept as where it starts. A piece's length is kept
 * beside it (`lengths`), or, for the keys of a line table, is where its line's first tab is.
 */
class PieceIndex {
  private starts: Int32Array;
  private lengths: Uint16Array | undefined;
  size = 0;

  constructor(
    private readonly text: string,
    expected: number,
    withLengths: boolean,
  ) {
    const capacity = Math.max(16, Math.ceil(expected * SLOTS_PER_PIECE));
    this.starts = new Int32Array(capacity).fill(EMPTY);
    this.lengths = withLengths ? new Uint16Array(capacity) : undefined;
  }

  /** The slot holding a piece equal to `length` characters of `source` from `from`, or the empty slot where it would go. */
  private slotOf(source: string, from: number, length: number): number {
    const capacity = this.starts.length;
    for (let slot = hashOf(source, from, length) % capacity; ; slot = slot + 1 === capacity ? 0 : slot + 1) {
      const start = this.starts[slot]!;
      if (start === EMPTY || this.equalAt(slot, start, source, from, length)) return slot;
    }
  }

  /** Whether the piece in `slot` (at `start`) is `length` characters of `source` from `from`. */
  private equalAt(slot: number, start: number, source: string, from: number, length: number): boolean {
    // A line's key ends at its tab; another piece has its length beside it.
    if (this.lengths ? this.lengths[slot] !== length : this.text.charCodeAt(start + length) !== TAB) return false;
    if (from === 0 && length === source.length) return this.text.startsWith(source, start);
    for (let index = 0; index < length; index++) if (this.text.charCodeAt(start + index) !== source.charCodeAt(from + index)) return false;
    return true;
  }

  /** Twice the slots, every piece placed again (more pieces came than expected). */
  private grow(): void {
    const { starts, lengths } = this;
    this.starts = new Int32Array(starts.length * 2).fill(EMPTY);
    this.lengths = lengths && new Uint16Array(starts.length * 2);
    for (let old = 0; old < starts.length; old++) {
      const start = starts[old]!;
      if (start === EMPTY) continue;
      const length = lengths ? lengths[old]! : this.text.indexOf('\t', start) - start;
      const slot = this.slotOf(this.text, start, length);
      this.starts[slot] = start;
      if (this.lengths) this.lengths[slot] = length;
    }
  }

  /**
   * Adds the piece of the text at `start`; when an equal piece is there already it now starts at
   * `start` instead (a later line replaces an earlier one). Returns whether the piece is new.
   */
  put(start: number, length: number): boolean {
    if (this.size + 1 > this.starts.length / SLOTS_PER_PIECE) this.grow();
    const slot = this.slotOf(this.text, start, length);
    const added = this.starts[slot] === EMPTY;
    this.starts[slot] = start;
    if (this.lengths) this.lengths[slot] = length;
    if (added) this.size++;
    return added;
  }

  /** Where the piece equal to `key` starts in the text, or EMPTY. */
  find(key: string): number {
    if (key.length === 0 || key.length > MAX_KEY) return EMPTY;
    // A line's key holds no tab or newline: one that does must not match a line that starts with it.
    if (!this.lengths && (key.includes('\t') || key.includes('\n'))) return EMPTY;
    return this.starts[this.slotOf(key, 0, key.length)]!;
  }
}

/** Longest piece (a length is kept in 16 bits); a line with a longer key is no entry. */
const MAX_KEY = 0xffff;

/** What a line table is read as: what a `ReadonlyMap<string, string>` of the same lines offers. */
export interface TermTable extends Iterable<[string, string]> {
  get(key: string): string | undefined;
  has(key: string): boolean;
  keys(): Iterable<string>;
  readonly size: number;
}

export interface LineTableOptions {
  /** Lines that are no entry (comments); empty lines are never one. */
  skip?: (text: string, start: number) => boolean;
  /**
   * A line whose key an earlier line had: by default it replaces that line's value (the key keeps
   * its place in the order, as Map.set does); this may throw instead.
   */
  repeated?: (line: string) => void;
}

/**
 * The lines of `text` (newline-separated) as key → value, split at each line's first tab; lines
 * without a tab (or with an empty key) are no entries. Values are cut from the text on look-up.
 */
export class LineTable implements TermTable {
  private readonly index: PieceIndex;
  /** Where the first line of each key starts, in the order they came. */
  private readonly order: Int32Array;

  constructor(
    private readonly text: string,
    options: LineTableOptions = {},
  ) {
    let lines = 1;
    for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) lines++;
    this.index = new PieceIndex(text, lines, false);
    const order = new Int32Array(lines);
    let count = 0;
    for (let start = 0; start < text.length;) {
      let end = text.indexOf('\n', start);
      if (end < 0) end = text.length;
      const tab = text.indexOf('\t', start);
      if (tab > start && tab < end && tab - start <= MAX_KEY && !options.skip?.(text, start)) {
        if (this.index.put(start, tab - start)) order[count++] = start;
        else options.repeated?.(text.slice(start, end));
      }
      start = end + 1;
    }
    this.order = order.slice(0, count);
  }

  get size(): number {
    return this.index.size;
  }

  has(key: string): boolean {
    return this.index.find(key) !== EMPTY;
  }

  get(key: string): string | undefined {
    const start = this.index.find(key);
    if (start === EMPTY) return undefined;
    const end = this.text.indexOf('\n', start);
    return this.text.slice(start + key.length + 1, end < 0 ? this.text.length : end);
  }

  *keys(): IterableIterator<string> {
    for (const start of this.order) yield this.text.slice(start, this.text.indexOf('\t', start));
  }

  *[Symbol.iterator](): IterableIterator<[string, string]> {
    for (const key of this.keys()) yield [key, this.get(key)!];
  }

  /** The proper prefixes of the keys (for a key "abc": "a" and "ab"), as pieces of this table's text. */
  keyPrefixes(): PieceSet {
    // Keys share most of their prefixes: about one for every two keys.
    const prefixes = new PieceSet(this.text, this.order.length / 2);
    for (const start of this.order) {
      const length = this.text.indexOf('\t', start) - start;
      for (let prefix = 1; prefix < length; prefix++) prefixes.add(start, prefix);
    }
    return prefixes;
  }
}

/**
 * A set of pieces of one text, each given by where it starts and its length (the prefixes of a
 * table's keys): the text is not copied, and a piece costs a few bytes of the index.
 */
export class PieceSet {
  private readonly index: PieceIndex;

  constructor(text: string, expected: number) {
    this.index = new PieceIndex(text, expected, true);
  }

  add(start: number, length: number): void {
    this.index.put(start, length);
  }

  has(key: string): boolean {
    return this.index.find(key) !== EMPTY;
  }

  get size(): number {
    return this.index.size;
  }
}

/** Whether a line of `text` starting at `start` is a `#` comment. */
export function isCommentLine(text: string, start: number): boolean {
  return text.charCodeAt(start) === 0x23;
}
