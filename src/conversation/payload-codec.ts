import { hash as digest } from 'node:crypto';
import { listItems, storeList, type ChainEnd } from './list-chains.js';
import type { PartReferences, SegmentSink, SegmentSource } from './segment-table.js';
import type { JsonBody, TurnPayload } from './types.js';

/**
 * How request bodies are stored. An agent resends its whole conversation every turn (an OpenClaw
 * turn is ~60 KB), so a body is stored as the parts the session has not stored yet:
 * - its message list (a Responses request's `input` list) as "the list of an earlier turn + the new
 *   messages" (list-chains.ts);
 * - large values (system prompt, tools) as parts stored once by content hash;
 * - the forwarded body as its differences from the received one (MetaClaw's block appended to the
 *   system prompt, its own keys removed), the appended block itself a part, stored once.
 * A session then costs about the size of its conversation, not turns × size. Hashing and comparing
 * are far cheaper than compressing on every request. Tiny bodies are kept whole.
 */

/** Bodies up to this many characters are kept whole: splitting them would save nothing. */
const INLINE_LIMIT = 1024;
/** Values whose JSON is at least this long are stored as parts (once, however many bodies hold them). */
const PART_MIN = 512;

/**
 * How one value of a stored body (v2) is kept. `=`, `s`, `o` and `a` describe a value by its
 * differences from the base's value at the same place (the forwarded body's base is the received body).
 */
type Entry =
  | { v: unknown } // the value itself
  | { h: string } // a part: the value's JSON, by hash
  | { l: string } // a list of parts, by list node
  | { '=': 1 } // the base's value
  | { s: [number, string | { h: string }, number] } // the base string, its middle replaced: [kept prefix, middle, kept suffix]
  | { o: Array<[string, Entry]> } // an object, key by key
  | { a: Array<[number, number] | { e: Entry; at?: number }> }; // an array: runs [start, end) of the base's items, and items of its own

/** v2: an object entry at the top; `base` says the forwarded body was stored against the received one. */
type DocumentV2 = { v: 2; base?: 'received'; o: Array<[string, Entry]> };

/** v1 (until schema 5): bodies over 16 KB as a skeleton with a hash per message, smaller ones whole. */
interface DocumentV1 {
  v: 1;
  inline?: unknown;
  order?: string[];
  head?: Record<string, unknown>;
  messages?: string[];
  tools?: string;
  system?: string;
}

/** A stored part that is gone shows where it was: a body is never silently incomplete. */
export const MISSING_PART = 'metaclaw_missing_part';
const missingValue = (hash: string) => ({ [MISSING_PART]: hash });
const missingText = (hash: string) => `[${MISSING_PART} ${hash}]`;

export interface EncodeOptions {
  sink: SegmentSink;
  /** The session's remembered lists (list-chains.ts); each list is then stored as an extension of one. */
  chains: ChainEnd[][];
  /** JSON texts already computed for this turn's values. */
  json: JsonTexts;
  /** Stores the body as its differences from this one (the received body, for the forwarded one). */
  base?: unknown;
}

/** JSON texts of objects, computed once per turn: received and forwarded bodies share most of their values. */
export class JsonTexts {
  private readonly texts = new WeakMap<object, string>();

  /** JSON.stringify(value), remembered; an array's text is built from its items', which are remembered too. */
  of(value: unknown): string | undefined {
    if (typeof value !== 'object' || value === null) return JSON.stringify(value);
    let text = this.texts.get(value);
    if (text === undefined) {
      text = Array.isArray(value)
        ? `[${value.map((item) => (typeof item === 'object' && item !== null ? this.of(item) : JSON.stringify(item)) ?? 'null').join(',')}]`
        : JSON.stringify(value);
      this.texts.set(value, text);
    }
    return text;
  }
}

/** A body as JSON text and value (parsed when only the text is at hand; text that is not JSON is kept as a string). */
export function bodyValue(body: JsonBody): { text: string; value: unknown } {
  if (body.object) return { text: body.text ?? JSON.stringify(body.object), value: body.object };
  try {
    return { text: body.text, value: JSON.parse(body.text) as unknown };
  } catch {
    return { text: JSON.stringify(body.text), value: body.text };
  }
}

/**
 * The stored documents of a turn's bodies: the forwarded one as its differences from the received
 * one. Every engine that records turns encodes through here, so their stored bodies are the same.
 */
export function encodeTurnBodies(payload: TurnPayload, sink: SegmentSink, chains: ChainEnd[][]): { received: string; forwarded: string | null } {
  const options = { sink, chains, json: new JsonTexts() };
  const received = bodyValue(payload.received);
  const forwarded = payload.forwarded;
  return {
    received: encodeDocument(received, options),
    forwarded: forwarded === null ? null : encodeDocument(bodyValue(forwarded), { ...options, base: received.value }),
  };
}

/** Encodes a body for storage, counting one use of every part it refers to. */
export function encodeDocument(body: { text: string; value: unknown }, options: EncodeOptions): string {
  const { value } = body;
  const against = isPlainObject(options.base) && isPlainObject(value);
  if (!isPlainObject(value) || (!against && body.text.length <= INLINE_LIMIT)) return `{"v":1,"inline":${body.text}}`;
  const encoder = new Encoder(options);
  const entries = Object.entries(value).flatMap(([key, item]): Array<[string, Entry]> => {
    if (item === undefined) return [];
    // A Responses API request's conversation is its `input`.
    const listed = key === 'messages' || key === 'input';
    const base = options.base as Record<string, unknown>;
    return [[key, against && Object.hasOwn(base, key) ? encoder.diff(item, base[key], listed) : encoder.fresh(item, listed)]];
  });
  const document: DocumentV2 = against ? { v: 2, base: 'received', o: entries } : { v: 2, o: entries };
  return JSON.stringify(document);
}

class Encoder {
  constructor(private readonly options: EncodeOptions) {}

  /** A value stored on its own: inline when small, a part when large, a list of parts for the messages. */
  fresh(value: unknown, listed = false): Entry {
    const json = this.options.json;
    if (listed && Array.isArray(value) && value.length > 0) {
      const texts = value.map((item) => json.of(item) ?? 'null');
      return { l: storeList(texts.map(hashOf), texts, this.options.sink, this.options.chains) };
    }
    const text = json.of(value) ?? 'null';
    return text.length >= PART_MIN ? { h: this.put(text) } : { v: value };
  }

  /** A value stored as its differences from `base` (or on its own when they share little). */
  diff(value: unknown, base: unknown, listed = false): Entry {
    if (value === base) return { '=': 1 };
    if (typeof value === 'string' && typeof base === 'string') return this.splice(value, base) ?? this.fresh(value);
    if (Array.isArray(value) && Array.isArray(base)) return this.diffArray(value, base) ?? this.fresh(value, listed);
    const json = this.options.json;
    if (typeof value !== 'object' || value === null || typeof base !== 'object' || base === null)
      return json.of(value) === json.of(base) ? { '=': 1 } : this.fresh(value);
    if (json.of(value) === json.of(base)) return { '=': 1 };
    if (!isPlainObject(value) || !isPlainObject(base)) return this.fresh(value);
    return {
      o: Object.entries(value).flatMap(([key, item]): Array<[string, Entry]> =>
        item === undefined ? [] : [[key, Object.hasOwn(base, key) ? this.diff(item, base[key]) : this.fresh(item)]],
      ),
    };
  }

  /** Runs of the base's items at both ends, the items between stored on their own (or against the base's). */
  private diffArray(value: unknown[], base: unknown[]): Entry | undefined {
    const json = this.options.json;
    const text = (item: unknown) => json.of(item) ?? 'null';
    const limit = Math.min(value.length, base.length);
    let prefix = 0;
    while (prefix < limit && text(value[prefix]) === text(base[prefix])) prefix++;
    if (prefix === value.length && prefix === base.length) return { '=': 1 };
    let suffix = 0;
    while (suffix < limit - prefix && text(value[value.length - 1 - suffix]) === text(base[base.length - 1 - suffix])) suffix++;
    // Sharing less than half (a translated body), the list is better stored on its own.
    if ((prefix + suffix) * 2 < value.length) return undefined;
    const ops: Array<[number, number] | { e: Entry; at?: number }> = [];
    if (prefix > 0) ops.push([0, prefix]);
    // Items between are stored against the base's items at the same place: the system prompt with
    // MetaClaw's block, also when the oldest messages after it were dropped (max_context_tokens).
    const between = base.length - prefix - suffix;
    value
      .slice(prefix, value.length - suffix)
      .forEach((item, index) => ops.push(index < between ? { e: this.diff(item, base[prefix + index]), at: prefix + index } : { e: this.fresh(item) }));
    if (suffix > 0) ops.push([base.length - suffix, base.length]);
    return { a: ops };
  }

  /** The base string with its middle replaced, when they share most of it (a block appended to the system prompt). */
  private splice(value: string, base: string): Entry | undefined {
    if (value.length < PART_MIN) return undefined;
    const limit = Math.min(value.length, base.length);
    // slice and ===, not startsWith: V8 compares those as memory, several times faster on long strings.
    const prefix = value.slice(0, base.length) === base ? base.length : commonPrefix(value, base, limit);
    const suffix = commonSuffix(value, base, limit - prefix);
    if ((prefix + suffix) * 2 < value.length) return undefined;
    const middle = value.slice(prefix, value.length - suffix);
    const text = JSON.stringify(middle);
    return { s: [prefix, text.length >= PART_MIN ? { h: this.put(text) } : middle, suffix] };
  }

  private put(json: string): string {
    const hash = hashOf(json);
    this.options.sink.put(hash, json);
    return hash;
  }
}

/** The stored body as a value again (the forwarded body needs its base, the decoded received body). A missing part is marked in place. */
export function decodeDocument(stored: string, source: SegmentSource, base?: unknown): unknown {
  const parsed = JSON.parse(stored) as DocumentV1 | DocumentV2;
  if ('inline' in parsed) return parsed.inline;
  if (parsed.v === 1) return decodeV1(parsed, source);
  return decodeEntry({ o: parsed.o }, parsed.base === 'received' ? base : undefined, source);
}

function decodeEntry(entry: Entry, base: unknown, source: SegmentSource): unknown {
  if ('v' in entry) return entry.v;
  if ('=' in entry) return base;
  if ('h' in entry) return loadPart(entry.h, source);
  if ('l' in entry) return listItems(entry.l, source).map((item) => ('missing' in item ? missingValue(item.missing) : loadPart(item.hash, source)));
  if ('s' in entry) {
    const [prefix, middle, suffix] = entry.s;
    const text = typeof base === 'string' ? base : '';
    const inserted = typeof middle === 'string' ? middle : loadPart(middle.h, source);
    return text.slice(0, prefix) + (typeof inserted === 'string' ? inserted : missingText((middle as { h: string }).h)) + text.slice(text.length - suffix);
  }
  if ('o' in entry) {
    const object = isPlainObject(base) ? base : {};
    return Object.fromEntries(entry.o.map(([key, item]) => [key, decodeEntry(item, Object.hasOwn(object, key) ? object[key] : undefined, source)]));
  }
  const items: unknown[] = Array.isArray(base) ? base : [];
  return entry.a.flatMap((op) => (Array.isArray(op) ? items.slice(op[0], op[1]) : [decodeEntry(op.e, op.at === undefined ? undefined : items[op.at], source)]));
}

function decodeV1(parsed: DocumentV1, source: SegmentSource): unknown {
  const result: Record<string, unknown> = {};
  for (const key of parsed.order ?? []) {
    if (key === 'messages' && parsed.messages) result[key] = parsed.messages.map((hash) => loadPart(hash, source));
    else if (key === 'tools' && parsed.tools) result[key] = loadPart(parsed.tools, source);
    else if (key === 'system' && parsed.system) result[key] = loadPart(parsed.system, source);
    else result[key] = parsed.head?.[key];
  }
  return result;
}

function loadPart(hash: string, source: SegmentSource): unknown {
  const json = source.get(hash);
  return json === undefined ? missingValue(hash) : (JSON.parse(json) as unknown);
}

/** The parts and list nodes a stored body refers to itself (each once per occurrence, as they were counted). */
export function documentReferences(stored: string | null): PartReferences {
  const references: PartReferences = { parts: [], lists: [] };
  if (stored === null) return references;
  const parsed = JSON.parse(stored) as DocumentV1 | DocumentV2;
  if ('inline' in parsed) return references;
  if (parsed.v === 1) {
    references.parts.push(...(parsed.messages ?? []), ...(parsed.tools ? [parsed.tools] : []), ...(parsed.system ? [parsed.system] : []));
    return references;
  }
  const visit = (entry: Entry): void => {
    if ('h' in entry) references.parts.push(entry.h);
    else if ('l' in entry) references.lists.push(entry.l);
    else if ('s' in entry && typeof entry.s[1] !== 'string') references.parts.push(entry.s[1].h);
    else if ('o' in entry) for (const [, item] of entry.o) visit(item);
    else if ('a' in entry) for (const op of entry.a) if (!Array.isArray(op)) visit(op.e);
  };
  visit({ o: parsed.o });
  return references;
}

function hashOf(json: string): string {
  return digest('sha256', json, 'base64url');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function commonPrefix(a: string, b: string, limit: number): number {
  let index = 0;
  while (index < limit && a.charCodeAt(index) === b.charCodeAt(index)) index++;
  return index;
}

function commonSuffix(a: string, b: string, limit: number): number {
  let index = 0;
  while (index < limit && a.charCodeAt(a.length - 1 - index) === b.charCodeAt(b.length - 1 - index)) index++;
  return index;
}
