/** Small text helpers for the line-based formats (TOML top level, .env). */
import { isItemSelector } from './document.js';
import type { KeyPath } from './document.js';
import { InternalError } from '../errors.js';

/** The file's line ending: CRLF when it uses one anywhere, else LF. */
export function lineEndingOf(text: string): string {
  return text.includes('\r\n') ? '\r\n' : '\n';
}

/** The position of the first character at or after `position` that is not a space or tab. */
export function skipSpaces(text: string, position: number): number {
  let index = position;
  while (text[index] === ' ' || text[index] === '\t') index += 1;
  return index;
}

export function splice(text: string, start: number, end: number, replacement: string): string {
  return `${text.slice(0, start)}${replacement}${text.slice(end)}`;
}

/** Index just past the line ending of the line holding `position` (or the end of the text). */
export function nextLineStart(text: string, position: number): number {
  const newline = text.indexOf('\n', position);
  return newline < 0 ? text.length : newline + 1;
}

/**
 * Inserts `lines` (each without its ending) as whole lines at `position`, which must be a line start
 * or the end of the text.
 */
export function insertLines(text: string, position: number, lines: readonly string[]): string {
  const ending = lineEndingOf(text);
  const before = position > 0 && !text.slice(0, position).endsWith('\n') ? ending : '';
  return splice(text, position, position, `${before}${lines.map((line) => `${line}${ending}`).join('')}`);
}

/** Replaces the whole lines [start, end) with `raw`, keeping a line break before what follows. */
export function replaceLines(text: string, start: number, end: number, raw: string): string {
  const needsEnding = end < text.length && !raw.endsWith('\n');
  return splice(text, start, end, needsEnding ? `${raw}${lineEndingOf(text)}` : raw);
}

/** The single top-level key a flat format (TOML top level, .env) supports. */
export function flatKey(path: KeyPath, format: string): string {
  const [key, ...rest] = path;
  if (key === undefined || isItemSelector(key) || rest.length > 0) throw new InternalError(`${format} settings must be single top-level keys`);
  return key;
}
