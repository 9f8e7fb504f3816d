/**
 * TOML files (ZeroClaw, Codex): top-level keys and whole tables. smol-toml validates and reads the
 * file; edits are made on the text (a top-level statement before the first [table] header, or one
 * table's header and body), so comments, other tables and formatting elsewhere are untouched.
 */
import { parse, TomlError } from 'smol-toml';
import { conflict, isItemSelector, isPlainObject, malformed, readPath } from './document.js';
import type { ConfigDocument, DocumentFormat, JsonValue, KeyPath } from './document.js';
import { flatKey, insertLines, lineEndingOf, nextLineStart, replaceLines, skipSpaces, splice } from './text-edit.js';
import { ClawError } from './types.js';
import { InternalError } from '../errors.js';

interface Statement {
  /** undefined for a dotted key such as `a.b = 1` */
  key: string | undefined;
  start: number;
  valueStart: number;
  valueEnd: number;
  end: number;
}

interface Header {
  path: string[];
  /** [[array of tables]] */
  array: boolean;
  start: number;
  /** start of the line after the header */
  end: number;
}

interface Layout {
  /** statements before the first header */
  statements: Statement[];
  headers: Header[];
}

interface Section {
  start: number;
  end: number;
}

class TomlDocument implements ConfigDocument {
  private text: string;
  private data: Record<string, unknown>;
  private readonly source: string;

  constructor(text: string, data: Record<string, unknown>, source: string) {
    this.text = text;
    this.data = data;
    this.source = source;
  }

  value(): unknown {
    return this.data;
  }

  /** A plain object becomes a whole [table] (replacing the one there); anything else a top-level key. */
  set(path: KeyPath, value: JsonValue): void {
    if (isPlainObject(value)) {
      this.setTable(path, value);
      return;
    }
    const key = flatKey(path, 'TOML');
    const statement = this.statement(key);
    if (statement === undefined) this.insert(`${formatKey(key)} = ${formatValue(value)}`);
    else this.edit(splice(this.text, statement.valueStart, statement.valueEnd, formatValue(value)));
  }

  delete(path: KeyPath): void {
    const section = this.section(path);
    if (section !== undefined) {
      this.edit(withoutSection(this.text, section));
      return;
    }
    if (path.length > 1) {
      if (readPath(this.data, path) !== undefined) throw conflict(this.source, path, 'is not written as a [table] of its own');
      return;
    }
    const statement = this.statement(flatKey(path, 'TOML'));
    if (statement !== undefined) this.edit(withoutLines(this.text, statement.start, statement.end));
  }

  restore(path: KeyPath, original: ConfigDocument): void {
    if (!(original instanceof TomlDocument)) throw new InternalError('a TOML document restores only from a TOML document');
    const table = original.section(path);
    if (table !== undefined) {
      this.putSection(path, wholeLines(original.text.slice(table.start, table.end), lineEndingOf(this.text)));
      return;
    }
    if (path.length > 1) {
      this.delete(path);
      return;
    }
    const key = flatKey(path, 'TOML');
    const before = original.statement(key);
    if (before === undefined) {
      this.delete(path);
      return;
    }
    const raw = original.text.slice(before.start, before.end).replace(/\r?\n$/, '');
    const current = this.statement(key);
    if (current === undefined) this.insert(raw);
    else this.edit(replaceLines(this.text, current.start, current.end, `${raw}${lineEndingOf(this.text)}`));
  }

  render(): string {
    return this.text;
  }

  private statement(key: string): Statement | undefined {
    return scanLayout(this.text).statements.find((statement) => statement.key === key);
  }

  /**
   * The text of the [table] at `path`: its header line through its last non-blank line, with any
   * sub-tables that directly follow it (the comment above the next table stays with that table).
   * A table written inline, split up, or only implied by its sub-tables is a conflict.
   */
  private section(path: KeyPath): Section | undefined {
    const keys = tableKeys(path);
    const { headers } = scanLayout(this.text);
    const inside = headers.map((header) => keys.every((key, index) => header.path[index] === key));
    const first = inside.indexOf(true);
    if (first < 0) return undefined;
    let last = first;
    while (inside[last + 1] === true) last += 1;
    const header = headers[first] as Header;
    if (header.array || header.path.length !== keys.length || inside.lastIndexOf(true) !== last) {
      throw conflict(this.source, path, 'is not written as one [table] MetaClaw can replace');
    }
    const next = headers[last + 1];
    const end = withoutTrailingBlankLines(this.text, header.end, next === undefined ? this.text.length : commentBlockStart(this.text, next.start));
    return { start: header.start, end };
  }

  private setTable(path: KeyPath, value: Record<string, JsonValue>): void {
    const ending = lineEndingOf(this.text);
    const lines = [`[${tableKeys(path).map(formatKey).join('.')}]`, ...Object.entries(value).map(([key, item]) => `${formatKey(key)} = ${formatValue(item)}`)];
    if (this.section(path) === undefined && readPath(this.data, path) !== undefined) {
      throw conflict(this.source, path, 'is not written as a [table] of its own');
    }
    // A [a.b] header cannot extend a table written inline as `a = { … }`.
    const [top] = tableKeys(path);
    if (path.length > 1 && top !== undefined && this.statement(top) !== undefined) {
      throw conflict(
        this.source,
        [top],
        `is written inline (\`${formatKey(top)} = { … }\`), so MetaClaw cannot add its [${tableKeys(path).map(formatKey).join('.')}] table`,
      );
    }
    this.putSection(path, lines.map((line) => `${line}${ending}`).join(''));
  }

  /** Replaces the table at `path` with `block` (whole lines), or appends it after a blank line. */
  private putSection(path: KeyPath, block: string): void {
    const section = this.section(path);
    if (section !== undefined) {
      this.edit(replaceLines(this.text, section.start, section.end, block));
      return;
    }
    const ending = lineEndingOf(this.text);
    const before = this.text === '' || this.text.endsWith('\n') ? this.text : `${this.text}${ending}`;
    this.edit(`${before}${before.trim() === '' ? '' : ending}${block}`);
  }

  /** New top-level lines go after the last top-level statement, else above the first table and its comments. */
  private insert(line: string): void {
    const { statements, headers } = scanLayout(this.text);
    const last = statements[statements.length - 1];
    const firstHeader = headers[0];
    if (last !== undefined) {
      this.edit(insertLines(this.text, last.end, [line]));
    } else if (firstHeader !== undefined) {
      this.edit(insertLines(this.text, commentBlockStart(this.text, firstHeader.start), [line, '']));
    } else {
      this.edit(insertLines(this.text, this.text.length, [line]));
    }
  }

  private edit(text: string): void {
    try {
      this.data = parse(text);
    } catch (error) {
      throw new ClawError('edit_failed', `MetaClaw could not edit ${this.source} without breaking it, so it left the file unchanged. Please report this.`, {
        path: this.source,
        cause: error,
      });
    }
    this.text = text;
  }
}

/** A table's path: plain keys only. */
function tableKeys(path: KeyPath): string[] {
  if (path.length === 0 || path.some(isItemSelector)) throw new InternalError('TOML tables are addressed by plain keys');
  return path as string[];
}

/** `text` ending with a line ending. */
function wholeLines(text: string, ending: string): string {
  return text.endsWith('\n') ? text : `${text}${ending}`;
}

/** `end` moved back over blank lines, never before `floor`. */
function withoutTrailingBlankLines(text: string, floor: number, end: number): number {
  let position = end;
  while (position > floor) {
    const lineStart = text.lastIndexOf('\n', position - 2) + 1;
    if (lineStart < floor || text.slice(lineStart, position).trim() !== '') break;
    position = lineStart;
  }
  return position;
}

/** The text without a table; the blank line `putSection` put above a last table goes with it. */
function withoutSection(text: string, section: Section): string {
  const removed = withoutLines(text, section.start, section.end);
  return section.start >= removed.length && /\r?\n\r?\n$/.test(removed) ? removed.replace(/\r?\n$/, '') : removed;
}

/** The text without lines [start, end); a blank line left doubled (the one `insert` adds above a table) goes too. */
function withoutLines(text: string, start: number, end: number): string {
  const removed = splice(text, start, end, '');
  const blankBefore = start === 0 || /\n\r?\n$/.test(removed.slice(0, start));
  const blankAfter = /^\r?\n/.exec(removed.slice(start))?.[0];
  return blankBefore && blankAfter !== undefined ? splice(removed, start, start + blankAfter.length, '') : removed;
}

/** Start of the comment lines directly above `lineStart` (no blank line between), so a table keeps its comment. */
function commentBlockStart(text: string, lineStart: number): number {
  let start = lineStart;
  while (start > 0) {
    const previous = text.lastIndexOf('\n', start - 2) + 1;
    if (!text.slice(previous, start).trimStart().startsWith('#')) break;
    start = previous;
  }
  return start;
}

function formatKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key);
}

/** JSON string escapes are valid TOML basic-string escapes. */
function formatValue(value: JsonValue): string {
  if (typeof value === 'string' || typeof value === 'boolean') return JSON.stringify(value);
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  throw new InternalError('only strings, numbers and booleans are written to TOML');
}

/** The top-level statements (those before the first header) and every [table] / [[array]] header. */
function scanLayout(text: string): Layout {
  const statements: Statement[] = [];
  const headers: Header[] = [];
  let position = 0;
  while (position < text.length) {
    const start = position;
    position = skipSpaces(text, position);
    const char = text[position];
    if (char === undefined) break;
    if (char === '\n' || char === '\r' || char === '#') {
      position = nextLineStart(text, position);
      continue;
    }
    if (char === '[') {
      const array = text[position + 1] === '[';
      const key = readKey(text, position + (array ? 2 : 1));
      position = nextLineStart(text, key.end);
      headers.push({ path: key.segments, array, start, end: position });
      continue;
    }
    const key = readKey(text, position);
    const valueStart = skipSpaces(text, skipSpaces(text, key.end) + 1);
    const valueEnd = valueEndOf(text, valueStart);
    const end = nextLineStart(text, valueEnd);
    if (headers.length === 0) statements.push({ key: key.segments.length === 1 ? key.segments[0] : undefined, start, valueStart, valueEnd, end });
    position = end;
  }
  return { statements, headers };
}

function readKey(text: string, position: number): { segments: string[]; end: number } {
  const segments: string[] = [];
  let index = position;
  for (;;) {
    index = skipSpaces(text, index);
    const char = text[index];
    if (char === '"' || char === "'") {
      const end = stringEnd(text, index + 1, char, char === '"');
      segments.push(char === '"' ? decodeBasicKey(text.slice(index, end)) : text.slice(index + 1, end - 1));
      index = end;
    } else {
      const bare = /^[A-Za-z0-9_-]+/.exec(text.slice(index))?.[0] ?? '';
      segments.push(bare);
      index += bare.length;
    }
    const after = skipSpaces(text, index);
    if (text[after] !== '.') return { segments, end: index };
    index = after + 1;
  }
}

/** A quoted key's name; escapes only JSON lacks (\\U, \\e) leave it undecoded, which merely never matches our keys. */
function decodeBasicKey(quoted: string): string {
  try {
    return JSON.parse(quoted) as string;
  } catch {
    return quoted;
  }
}

/** End of a value starting at `position` (before any trailing space or comment); the file is known to be valid TOML. */
function valueEndOf(text: string, position: number): number {
  let depth = 0;
  let index = position;
  let end = position;
  while (index < text.length) {
    const char = text[index] as string;
    const triple = text.slice(index, index + 3);
    if (triple === '"""' || triple === "'''") {
      index = multilineStringEnd(text, index + 3, triple);
      end = index;
    } else if (char === '"' || char === "'") {
      index = stringEnd(text, index + 1, char, char === '"');
      end = index;
    } else if (char === '#') {
      const newline = text.indexOf('\n', index);
      index = newline < 0 ? text.length : newline;
    } else if (char === '\n') {
      if (depth === 0) return end;
      index += 1;
    } else {
      if (char === '[' || char === '{') depth += 1;
      else if (char === ']' || char === '}') depth -= 1;
      if (char !== ' ' && char !== '\t' && char !== '\r') end = index + 1;
      index += 1;
    }
  }
  return end;
}

/** Index just past the closing quote of a one-line string whose body starts at `position`. */
function stringEnd(text: string, position: number, quote: string, escapes: boolean): number {
  let index = position;
  while (index < text.length && text[index] !== quote) index += escapes && text[index] === '\\' ? 2 : 1;
  return index + 1;
}

/** Index just past a closing """ or ''' (which may be followed by up to two quotes of content). */
function multilineStringEnd(text: string, position: number, delimiter: string): number {
  let index = position;
  while (index < text.length && text.slice(index, index + 3) !== delimiter) index += delimiter === '"""' && text[index] === '\\' ? 2 : 1;
  index += 3;
  for (let extra = 0; extra < 2 && text[index] === delimiter[0]; extra += 1) index += 1;
  return index;
}

function parseToml(text: string, source: string): ConfigDocument {
  try {
    return new TomlDocument(text, parse(text), source);
  } catch (error) {
    if (error instanceof TomlError) throw malformed('TOML', source, error.message.split('\n')[0] ?? 'syntax error', error);
    throw error;
  }
}

export const tomlFormat: DocumentFormat = {
  name: 'TOML',
  parse: parseToml,
  create: (source) => parseToml('', source),
};
