import { z } from 'zod';
import { DATABASE_URL_EXPECTED, databaseUrlSchema, maskDatabaseUrl } from './database-url.js';
import type { KeyDefinition, NoEffect } from './types.js';

/**
 * Constructors for key definitions. Each one fixes the value's kind, so that `config set`
 * converts text by the schema's type and never by guessing.
 */

/** `nonEmpty`: a key whose empty value means nothing (a scope), refused rather than loaded as "". */
type Options = { doc: string; secret?: boolean; noEffect?: NoEffect; nonEmpty?: boolean };

export function stringKey<K extends string>(key: K, defaultValue: string, options: Options): KeyDefinition<string, K> {
  return {
    key,
    kind: options.secret ? 'secret' : 'string',
    default: defaultValue,
    doc: options.doc,
    expected: options.nonEmpty ? 'a non-empty string' : 'a string',
    schema: options.nonEmpty ? z.string().trim().min(1) : z.string(),
    ...(options.secret ? { secret: true } : {}),
    ...marking(options),
  };
}

export function secretKey<K extends string>(key: K, options: Omit<Options, 'secret'>): KeyDefinition<string, K> {
  return stringKey(key, '', { ...options, secret: true });
}

/** The name of an environment variable (or empty); a key pasted here by mistake is refused, not stored. */
export function variableNameKey<K extends string>(key: K, options: Options): KeyDefinition<string, K> {
  const expected = 'the name of an environment variable (letters, digits and _), not the key itself';
  const schema = z.string().regex(/^([A-Za-z_][A-Za-z0-9_]*)?$/, `expected ${expected}`);
  return { key, kind: 'string', default: '', doc: options.doc, expected, schema, ...marking(options) };
}

/** A PostgreSQL URL (or empty): secret, but shown with only its password hidden. */
export function databaseUrlKey<K extends string>(key: K, options: Omit<Options, 'secret'>): KeyDefinition<string, K> {
  return {
    key,
    kind: 'secret',
    default: '',
    doc: options.doc,
    expected: DATABASE_URL_EXPECTED,
    schema: databaseUrlSchema,
    secret: true,
    mask: maskDatabaseUrl,
    ...marking(options),
  };
}

/**
 * A calendar source: a file path, or an http(s)/webcal URL that is usually a secret address (its
 * path holds the token, as in Google's "secret address in iCal format"): secret, but a file path
 * is shown whole and a URL by its scheme and host.
 */
export function calendarSourceKey<K extends string>(key: K, options: Omit<Options, 'secret'>): KeyDefinition<string, K> {
  return { ...stringKey(key, '', { ...options, secret: true }), mask: maskCalendarSource };
}

/** A calendar URL as it may be shown (scheme and host, never user, path or query); anything else as is. */
export function maskCalendarSource(value: string): string {
  if (!/^(https?|webcal):\/\//i.test(value.trim())) return value;
  const url = URL.canParse(value.trim()) ? new URL(value.trim()) : undefined;
  return url ? `${url.protocol}//${url.host}/…` : `${value.trim().split(':')[0]}://…`;
}

export function pathKey<K extends string>(key: K, defaultValue: string, options: Options): KeyDefinition<string, K> {
  return { key, kind: 'path', default: defaultValue, doc: options.doc, expected: 'a file or folder path', schema: z.string(), ...marking(options) };
}

export function urlKey<K extends string>(key: K, defaultValue: string, options: Options): KeyDefinition<string, K> {
  const schema = z.string().refine((value) => value === '' || /^https?:\/\/[^\s]+$/i.test(value), { message: 'expected an http(s) URL' });
  return { key, kind: 'string', default: defaultValue, doc: options.doc, expected: 'an http:// or https:// URL (or empty)', schema, ...marking(options) };
}

export function integerKey<K extends string>(key: K, defaultValue: number, options: Options & { min?: number; max?: number }): KeyDefinition<number, K> {
  let schema = z.number().int();
  if (options.min !== undefined) schema = schema.min(options.min);
  if (options.max !== undefined) schema = schema.max(options.max);
  const range = describeRange(options.min, options.max);
  return { key, kind: 'integer', default: defaultValue, doc: options.doc, expected: `an integer${range}`, schema, ...marking(options) };
}

/** `above`: an exclusive lower bound (a learning rate must be more than 0, where 0 itself means nothing). */
export function numberKey<K extends string>(
  key: K,
  defaultValue: number,
  options: Options & { min?: number; above?: number; max?: number },
): KeyDefinition<number, K> {
  let schema = z.number().finite();
  if (options.min !== undefined) schema = schema.min(options.min);
  if (options.above !== undefined) schema = schema.gt(options.above);
  if (options.max !== undefined) schema = schema.max(options.max);
  const range = options.above === undefined ? describeRange(options.min, options.max) : describeAbove(options.above, options.max);
  return { key, kind: 'number', default: defaultValue, doc: options.doc, expected: `a number${range}`, schema, ...marking(options) };
}

export function booleanKey<K extends string>(key: K, defaultValue: boolean, options: Options): KeyDefinition<boolean, K> {
  return { key, kind: 'boolean', default: defaultValue, doc: options.doc, expected: 'true or false', schema: z.boolean(), ...marking(options) };
}

export function enumKey<const T extends string, K extends string>(key: K, values: readonly T[], defaultValue: T, options: Options): KeyDefinition<T, K> {
  const schema = z.enum(values as unknown as [T, ...T[]]) as unknown as z.ZodType<T>;
  return { key, kind: 'enum', default: defaultValue, doc: options.doc, expected: `one of ${values.join(', ')}`, schema, values, ...marking(options) };
}

export function timeOfDayKey<K extends string>(key: K, defaultValue: string, options: Options): KeyDefinition<string, K> {
  const schema = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'expected HH:MM');
  return { key, kind: 'string', default: defaultValue, doc: options.doc, expected: 'a time of day as HH:MM (24-hour)', schema, ...marking(options) };
}

export function listKey<T, K extends string>(
  key: K,
  item: z.ZodType<T>,
  defaultValue: T[],
  options: Options & { expected: string; redact?: (value: unknown) => unknown },
): KeyDefinition<T[], K> {
  const redact = options.redact ? { redact: options.redact } : {};
  return { key, kind: 'list', default: defaultValue, doc: options.doc, expected: options.expected, schema: z.array(item), ...redact, ...marking(options) };
}

function marking(options: Options): { noEffect?: NoEffect } {
  return options.noEffect ? { noEffect: options.noEffect } : {};
}

function describeAbove(above: number, max: number | undefined): string {
  return max === undefined ? ` above ${above}` : ` above ${above} and at most ${max}`;
}

function describeRange(min: number | undefined, max: number | undefined): string {
  if (min !== undefined && max !== undefined) return ` from ${min} to ${max}`;
  if (min !== undefined) return ` of at least ${min}`;
  if (max !== undefined) return ` of at most ${max}`;
  return '';
}
