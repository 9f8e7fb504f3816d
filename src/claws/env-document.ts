/**
 * .env files (IronClaw, NanoClaw). Values are replaced in place, so comments, ordering, `export`
 * prefixes and trailing comments stay; new keys are appended. A key that appears more than once is
 * set everywhere, because loaders disagree on whether the first or the last one wins.
 */
import { malformed } from './document.js';
import type { ConfigDocument, DocumentFormat, JsonValue, KeyPath } from './document.js';
import { flatKey, insertLines, lineEndingOf, nextLineStart, replaceLines, splice } from './text-edit.js';
import { InternalError } from '../errors.js';

interface Entry {
  key: string;
  /** the raw value text, quotes included */
  raw: string;
  start: number;
  valueStart: number;
  valueEnd: number;
  end: number;
}

const ASSIGNMENT = /^([ \t]*(?:export[ \t]+)?)([A-Za-z_][A-Za-z0-9_.]*)([ \t]*=[ \t]*)/;
const QUOTES = new Set(['"', "'", '`']);
const ESCAPES = new Map([
  ['n', '\n'],
  ['r', '\r'],
  ['t', '\t'],
]);

class EnvDocument implements ConfigDocument {
  private text: string;
  private readonly source: string;

  constructor(text: string, source: string) {
    this.text = text;
    this.source = source;
  }

  value(): unknown {
    const values: Record<string, string> = Object.create(null) as Record<string, string>;
    for (const entry of this.entries()) values[entry.key] = decode(entry.raw);
    return values;
  }

  set(path: KeyPath, value: JsonValue): void {
    const key = flatKey(path, '.env');
    const encoded = encode(typeof value === 'string' ? value : JSON.stringify(value));
    const occurrences = this.entries(key);
    if (occurrences.length === 0) {
      this.text = insertLines(this.text, this.text.length, [`${key}=${encoded}`]);
      return;
    }
    for (const entry of occurrences.reverse()) this.text = splice(this.text, entry.valueStart, entry.valueEnd, encoded);
  }

  delete(path: KeyPath): void {
    for (const entry of this.entries(flatKey(path, '.env')).reverse()) this.text = splice(this.text, entry.start, entry.end, '');
  }

  restore(path: KeyPath, original: ConfigDocument): void {
    if (!(original instanceof EnvDocument)) throw new InternalError('a .env document restores only from a .env document');
    const key = flatKey(path, '.env');
    const before = original.entries(key).map((entry) => original.text.slice(entry.start, entry.end).replace(/\r?\n$/, ''));
    const current = this.entries(key);
    const first = current[0];
    if (before.length === 0) {
      this.delete(path);
    } else if (first === undefined) {
      this.text = insertLines(this.text, this.text.length, before);
    } else if (before.length === current.length) {
      const ending = lineEndingOf(this.text);
      for (let index = current.length - 1; index >= 0; index -= 1) {
        const entry = current[index] as Entry;
        this.text = replaceLines(this.text, entry.start, entry.end, `${before[index] ?? ''}${ending}`);
      }
    } else {
      this.delete(path);
      this.text = insertLines(this.text, Math.min(first.start, this.text.length), before);
    }
  }

  render(): string {
    return this.text;
  }

  private entries(key?: string): Entry[] {
    const all = scanEntries(this.text, this.source);
    return key === undefined ? all : all.filter((entry) => entry.key === key);
  }
}

function scanEntries(text: string, source: string): Entry[] {
  const entries: Entry[] = [];
  let position = 0;
  while (position < text.length) {
    const lineEnd = nextLineStart(text, position);
    const match = ASSIGNMENT.exec(text.slice(position, lineEnd));
    if (match === null) {
      position = lineEnd;
      continue;
    }
    const key = match[2] as string;
    const valueStart = position + match[0].length;
    const valueEnd = valueEndOf(text, valueStart, lineEnd, key, source);
    const end = nextLineStart(text, valueEnd);
    entries.push({ key, raw: text.slice(valueStart, valueEnd), start: position, valueStart, valueEnd, end });
    position = end;
  }
  return entries;
}

function valueEndOf(text: string, valueStart: number, lineEnd: number, key: string, source: string): number {
  const quote = text[valueStart];
  if (quote !== undefined && QUOTES.has(quote)) {
    let index = valueStart + 1;
    while (index < text.length && text[index] !== quote) index += quote === '"' && text[index] === '\\' ? 2 : 1;
    if (index >= text.length) throw malformed('.env', source, `the value of ${key} opens a ${quote} quote that is never closed`);
    return index + 1;
  }
  const rest = text.slice(valueStart, lineEnd).replace(/\r?\n$/, '');
  const comment = rest.search(/[ \t]#/);
  return valueStart + (comment < 0 ? rest : rest.slice(0, comment)).trimEnd().length;
}

function decode(raw: string): string {
  const quote = raw[0];
  if (quote === undefined || !QUOTES.has(quote)) return raw;
  const body = raw.slice(1, -1);
  if (quote !== '"') return body;
  return body.replace(/\\(.)/g, (_, escaped: string) => ESCAPES.get(escaped) ?? escaped);
}

function encode(value: string): string {
  if (/^[A-Za-z0-9_./:@+,=%~-]*$/.test(value)) return value;
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n').replace(/\r/g, '\\r')}"`;
}

export const envFormat: DocumentFormat = {
  name: '.env',
  parse: (text, source) => {
    scanEntries(text, source);
    return new EnvDocument(text, source);
  },
  create: (source) => new EnvDocument('', source),
};
