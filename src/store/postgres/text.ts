/**
 * PostgreSQL text cannot hold U+0000, and MetaClaw's internal keys use it as a separator
 * (memory_units.raw_key, `memory.extracted:` keys in state, …). In the team store U+0000 is held as
 * U+FFFE, a Unicode noncharacter (reserved for a program's internal use, so not expected in text
 * people write; U+FFFF is kept free, it is the code's upper bound for prefix ranges). Written on
 * the way in, undone on the way out: a key keeps its order, uniqueness and prefixes.
 */
export const NUL_STAND_IN = '\uFFFE';

export function toPostgresText(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', NUL_STAND_IN) : text;
}

export function fromPostgresText(text: string): string {
  return text.includes(NUL_STAND_IN) ? text.replaceAll(NUL_STAND_IN, '\u0000') : text;
}
