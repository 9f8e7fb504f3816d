import type { KeyDefinition } from './types.js';

/**
 * Converts command-line text (or a quoted YAML string) into a key's typed value, by the key's kind
 * and nothing else: a numeric API key stays a string, `"false"` is false only for a boolean key.
 * Returns `{ error }` with what was expected when the text does not fit.
 */
export function convertText(definition: KeyDefinition, text: string): { value: unknown } | { error: string } {
  const trimmed = text.trim();
  switch (definition.kind) {
    case 'string':
    case 'secret':
    case 'path':
    case 'enum':
      return { value: text };
    case 'integer':
      if (!/^[-+]?\d+$/.test(trimmed)) return { error: `expected ${definition.expected}` };
      return { value: Number(trimmed) };
    case 'number':
      if (trimmed === '' || !Number.isFinite(Number(trimmed))) return { error: `expected ${definition.expected}` };
      return { value: Number(trimmed) };
    case 'boolean': {
      const lowered = trimmed.toLowerCase();
      if (['true', 'yes', 'on', '1'].includes(lowered)) return { value: true };
      if (['false', 'no', 'off', '0'].includes(lowered)) return { value: false };
      return { error: `expected ${definition.expected}` };
    }
    case 'list':
    case 'json':
      try {
        return { value: JSON.parse(text) };
      } catch {
        return { error: `expected ${definition.expected}, written as JSON` };
      }
  }
}

/** Checks a value against the key's schema; returns the parsed value or what was expected. */
export function checkValue(definition: KeyDefinition, value: unknown): { value: unknown } | { error: string } {
  const result = definition.schema.safeParse(value);
  if (result.success) return { value: result.data };
  const issue = result.error.issues[0];
  const where = issue && issue.path.length > 0 ? ` (at ${issue.path.join('.')}: ${issue.message})` : '';
  return { error: `expected ${definition.expected}${where}` };
}

/** Renders a value for messages, masking secrets. */
export function displayValue(definition: KeyDefinition | undefined, value: unknown): string {
  if (definition?.secret && definition.mask) return typeof value === 'string' && value !== '' ? definition.mask(value) : '(not set)';
  if (definition?.secret) return maskSecret(typeof value === 'string' ? value : value === undefined || value === null ? '' : JSON.stringify(value));
  // JSON has no NaN or Infinity: YAML's `.nan` would be shown as `null`, which the file does not say.
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  if (definition?.redact) return JSON.stringify(definition.redact(value));
  return JSON.stringify(value);
}

export function maskSecret(value: string): string {
  if (value === '') return '(not set)';
  if (value.length <= 8) return '****';
  return `${value.slice(0, 3)}… (${value.length} chars)`;
}
