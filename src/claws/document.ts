/**
 * One editing model for every config format: a setting is a path plus the value MetaClaw wants there.
 * Each format (JSON/JSON5, YAML, TOML, .env) implements `ConfigDocument` so that it changes only the
 * text it must and keeps comments, ordering and unrelated keys.
 */
import { ClawError } from './types.js';
import { InternalError } from '../errors.js';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** Selects the item of a list whose `key` field equals `equals`, e.g. the `name: metaclaw` provider. */
export interface ItemSelector {
  readonly key: string;
  readonly equals: string;
  /** a new item goes first rather than last (for agents that take the first match of a model id) */
  readonly first?: boolean;
}

export type PathSegment = string | ItemSelector;
export type KeyPath = readonly PathSegment[];

export interface Setting {
  readonly path: KeyPath;
  readonly value: JsonValue;
  /**
   * A single value that merges the user's own with MetaClaw's (Claude Code's header lines), so a
   * user's change to it still holds MetaClaw's part: unwire puts back the original rather than keep it.
   */
  readonly mergesUserValue?: boolean;
}

export interface ConfigDocument {
  /** the data as plain values (objects, arrays, strings, numbers, …) */
  value(): unknown;
  set(path: KeyPath, value: JsonValue): void;
  delete(path: KeyPath): void;
  /** Puts back at `path` what `original` holds there, as close to its original text as the format allows. */
  restore(path: KeyPath, original: ConfigDocument): void;
  /** The edited text; throws a ClawError when the edit cannot be expressed safely. */
  render(): string;
}

export interface DocumentFormat {
  /** e.g. "JSON5", for messages */
  readonly name: string;
  /** Parses `text` (read from `source`); a ClawError (config_malformed) when it is not valid. */
  parse(text: string, source: string): ConfigDocument;
  /** A document for a file that does not exist yet. */
  create(source: string): ConfigDocument;
}

export function isItemSelector(segment: PathSegment): segment is ItemSelector {
  return typeof segment !== 'string';
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

/** e.g. `models.providers.metaclaw` or `custom_providers[name=metaclaw]` */
export function describePath(path: KeyPath): string {
  let text = '';
  for (const segment of path) {
    if (isItemSelector(segment)) text += `[${segment.key}=${segment.equals}]`;
    else text += text === '' ? segment : `.${segment}`;
  }
  return text === '' ? '(top level)' : text;
}

export function findItemIndex(items: readonly unknown[], selector: ItemSelector): number {
  return items.findIndex((item) => isPlainObject(item) && item[selector.key] === selector.equals);
}

/** The plain value at `path`, or undefined when any step is missing or of another kind. */
export function readPath(value: unknown, path: KeyPath): unknown {
  let current = value;
  for (const segment of path) {
    if (isItemSelector(segment)) {
      if (!Array.isArray(current)) return undefined;
      current = current[findItemIndex(current, segment)];
    } else {
      if (!isPlainObject(current) || !Object.hasOwn(current, segment)) return undefined;
      current = current[segment];
    }
  }
  return current;
}

/** The value to put at the first missing step of `path` so that `value` ends up at its end. */
export function nestValue(path: KeyPath, value: JsonValue): JsonValue {
  let nested = value;
  for (let index = path.length - 1; index >= 0; index -= 1) {
    const segment = path[index];
    if (segment === undefined) continue;
    nested = isItemSelector(segment) ? [selectedItem(segment, nested)] : { [segment]: nested };
  }
  return nested;
}

/** `value` as the item `selector` picks: an object whose selector field is set. */
export function selectedItem(selector: ItemSelector, value: JsonValue): JsonValue {
  if (!isPlainObject(value)) throw new InternalError(`an item selected by ${selector.key} must be an object`);
  // A value that already names itself keeps its own key order.
  return value[selector.key] === selector.equals ? value : { [selector.key]: selector.equals, ...value };
}

/** Dates, TOML dates and null-prototype objects become comparable JSON values. */
export function plainValue(value: unknown): unknown {
  if (value === undefined) return undefined;
  return JSON.parse(JSON.stringify(value)) as unknown;
}

export function deepEqual(left: unknown, right: unknown): boolean {
  if (left === right) return true;
  if (left === undefined || right === undefined) return false;
  return JSON.stringify(canonical(left)) === JSON.stringify(canonical(right));
}

function canonical(value: unknown): unknown {
  const plain = plainValue(value);
  return sortKeys(plain);
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (!isPlainObject(value)) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys(value[key])]),
  );
}

export function isEmptyContainer(value: unknown): boolean {
  if (Array.isArray(value)) return value.length === 0;
  return isPlainObject(value) && Object.keys(value).length === 0;
}

export function cloneJson<T>(value: T): T {
  return structuredClone(value);
}

export function malformed(format: string, source: string, detail: string, cause?: unknown): ClawError {
  return new ClawError('config_malformed', `${source} is not valid ${format}: ${detail}. Fix the file (MetaClaw changed nothing) and try again.`, {
    path: source,
    cause,
  });
}

export function conflict(source: string, path: KeyPath, detail: string): ClawError {
  return new ClawError('config_conflict', `${source}: \`${describePath(path)}\` ${detail}; MetaClaw changed nothing. Edit that key by hand and try again.`, {
    path: source,
  });
}
