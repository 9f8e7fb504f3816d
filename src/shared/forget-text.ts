/**
 * The rules every scrub of a forgotten memory's text follows, on either engine and in every place
 * that quotes session text (turn summaries, stored bodies, raw turns, the skill evolution log and
 * proposals): which texts are searched for, what they become, and how JSON is scrubbed so it stays
 * JSON.
 */

/** What a forgotten text becomes wherever it was quoted. */
export const FORGOTTEN = '[forgotten]';

/** Shorter texts are not searched for: they would shred unrelated text. */
const MIN_NEEDLE = 3;

/** The texts to search for: trimmed, at least MIN_NEEDLE characters. */
export function forgetNeedles(texts: readonly string[]): string[] {
  return texts.map((text) => text.trim()).filter((text) => text.length >= MIN_NEEDLE);
}

/** `text` with every needle replaced. */
export function scrubNeedles(needles: readonly string[], text: string, replacement = FORGOTTEN): string {
  return needles.reduce((current, needle) => current.split(needle).join(replacement), text);
}

/** Whether `text` holds a needle, as it is or escaped inside a JSON string. */
export function holdsNeedle(needles: readonly string[], text: string | null): boolean {
  return text !== null && needles.some((needle) => text.includes(needle) || text.includes(JSON.stringify(needle).slice(1, -1)));
}

/**
 * The forms a needle takes in JSON text: as it is, escaped as JSON.stringify writes it, and
 * escaped to ASCII as Python's json.dumps writes it by default (MetaClaw's own evolution log).
 */
export function jsonForms(needle: string): string[] {
  const escaped = JSON.stringify(needle).slice(1, -1);
  const ascii = escaped.replace(/[\u0080-\uffff]/g, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return [...new Set([needle, escaped, ascii])];
}

/** A JSON value with `scrub` applied to every string in it (keys stay). */
export function scrubJsonStrings(value: unknown, scrub: (text: string) => string): unknown {
  if (typeof value === 'string') return scrub(value);
  if (Array.isArray(value)) return value.map((item) => scrubJsonStrings(item, scrub));
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, scrubJsonStrings(item, scrub)]));
  return value;
}

/**
 * A JSON text (a log line, a stored list) with the needles scrubbed inside its string values, so
 * it stays valid JSON; returned as it was when it holds none. Text that is not JSON is scrubbed as
 * text (there is no JSON to keep).
 */
export function scrubJsonText(needles: readonly string[], json: string): string {
  if (!needles.some((needle) => jsonForms(needle).some((form) => json.includes(form)))) return json;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return scrubNeedles(needles, json);
  }
  const scrubbed = JSON.stringify(scrubJsonStrings(value, (text) => scrubNeedles(needles, text)));
  // Only an escaped form matched, in a key: nothing to change.
  return scrubbed === JSON.stringify(value) ? json : scrubbed;
}
