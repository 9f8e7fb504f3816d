import { mentionsSecretKeyword, redactSecrets, secretRules } from '../text/index.js';
import type { AssembledResponse } from '../types/index.js';
import type { FinishedTurn, JsonBody } from './types.js';

/**
 * What a turn record keeps of a turn when `store.redact_turns` is on: every secret in the user's
 * request, the answer, the error and the stored bodies replaced by `[redacted <rule>]`. Only the
 * record changes; the body already went upstream as the client sent it.
 */
export function redactTurnForStorage(turn: FinishedTurn): FinishedTurn {
  const query = redactSecrets(turn.query);
  const response = turn.response && redactResponse(turn.response);
  const error = turn.error === null ? null : redactSecrets(turn.error);
  const received = redactBody(turn.payload.received);
  const forwarded = turn.payload.forwarded && redactBody(turn.payload.forwarded);
  return { ...turn, query, response, error, payload: { ...turn.payload, received, forwarded } };
}

/** Reads and checks the rules now, so a broken rules file stops start-up instead of failing turn records. */
export function loadRedactionRules(): void {
  secretRules();
}

function redactResponse(response: AssembledResponse): AssembledResponse {
  const text = redactSecrets(response.text);
  const toolCalls = mapSame(response.toolCalls, (call) => {
    const args = redactSecrets(call.arguments);
    return args === call.arguments ? call : { ...call, arguments: args };
  });
  return text === response.text && toolCalls === response.toolCalls ? response : { ...response, text, toolCalls };
}

/**
 * Bodies are redacted string by string in their parsed form, so a marker never breaks the JSON and
 * escapes (`\n` in a key block) are read as the text they stand for. The parsed object is handed on
 * with the text: the writer then need not parse a large body again to split it into parts.
 */
function redactBody(body: JsonBody): JsonBody {
  if (body.object) {
    const redacted = redactValue(body.object) as Record<string, unknown>;
    return redacted === body.object ? body : { object: redacted };
  }
  let object: Record<string, unknown>;
  try {
    object = JSON.parse(body.text) as Record<string, unknown>;
  } catch {
    return { text: redactSecrets(body.text) };
  }
  const redacted = redactValue(object) as Record<string, unknown>;
  return redacted === object ? { object, text: body.text } : { object: redacted };
}

/** The value with every string redacted; the same value (not a copy) when nothing changed. */
function redactValue(value: unknown): unknown {
  if (typeof value === 'string') return cleanTexts.redact(value);
  if (Array.isArray(value)) return mapSame(value, redactValue);
  if (typeof value !== 'object' || value === null) return value;
  let copy: Record<string, unknown> | undefined;
  for (const [key, item] of Object.entries(value)) {
    const redacted = typeof item === 'string' && keyMayNameSecret(key) ? redactWithKey(key, item) : redactValue(item);
    if (redacted === item) continue;
    copy ??= { ...(value as Record<string, unknown>) };
    copy[key] = redacted;
  }
  return copy ?? value;
}

/** `{"aws_secret_access_key": "…"}`: the key is the context that makes the value a secret. */
function redactWithKey(key: string, value: string): string {
  const prefix = `${key}: `;
  const redacted = redactSecrets(prefix + value);
  return redacted.startsWith(prefix) ? redacted.slice(prefix.length) : cleanTexts.redact(value);
}

const secretKeys = new Map<string, boolean>();

/** Whether an object key holds a rule keyword (memoised: bodies use few distinct keys). */
function keyMayNameSecret(key: string): boolean {
  let known = secretKeys.get(key);
  if (known === undefined) {
    known = mentionsSecretKeyword(key);
    if (secretKeys.size > 10_000) secretKeys.clear();
    secretKeys.set(key, known);
  }
  return known;
}

function mapSame<T>(items: readonly T[], map: (item: T) => T): T[] {
  let copy: T[] | undefined;
  items.forEach((item, index) => {
    const mapped = map(item);
    if (mapped === item) return;
    copy ??= [...items];
    copy[index] = mapped;
  });
  return copy ?? (items as T[]);
}

/** Strings at least this long are remembered once found clean; shorter ones are cheap to scan again. */
const REMEMBER_FROM_CHARS = 256;
/** How many characters of clean text are remembered before the memory starts over. */
const REMEMBER_CHARS = 4_000_000;
/** A longer string that starts with a clean one is scanned from this far before the clean part ends (longer than any bounded rule's match). */
const OVERLAP_CHARS = 1_024;
const PREFIX_KEY_CHARS = 128;

/**
 * Agents resend the whole conversation every turn: the same system prompt, tools and history,
 * and the forwarded body repeats the received one with MetaClaw's block appended to the system
 * prompt. Long strings found clean are remembered, and a string that extends a remembered one is
 * scanned only from near where that one ends, so a turn costs about the scan of what is new in it.
 */
class CleanTexts {
  private readonly clean = new Set<string>();
  /** Remembered clean strings by their first characters, to find one that starts a new string. */
  private readonly byStart = new Map<string, string[]>();
  private chars = 0;

  redact(text: string): string {
    if (text.length < REMEMBER_FROM_CHARS) return redactSecrets(text);
    if (this.clean.has(text)) return text;
    const start = this.longestCleanStart(text);
    // Not remembered itself: what extends a prompt (MetaClaw's block, a new turn) is new every time.
    if (start !== undefined) {
      const cut = Math.max(0, start.length - OVERLAP_CHARS);
      const tail = text.slice(cut);
      const redactedTail = redactSecrets(tail);
      return redactedTail === tail ? text : text.slice(0, cut) + redactedTail;
    }
    const redacted = redactSecrets(text);
    if (redacted === text) this.remember(text);
    return redacted;
  }

  private longestCleanStart(text: string): string | undefined {
    let best: string | undefined;
    for (const candidate of this.byStart.get(text.slice(0, PREFIX_KEY_CHARS)) ?? []) {
      // slice and ===, not startsWith: V8 compares those as memory, several times faster on long strings.
      if (candidate.length < text.length && (!best || candidate.length > best.length) && text.slice(0, candidate.length) === candidate) best = candidate;
    }
    return best;
  }

  private remember(text: string): void {
    if (this.chars + text.length > REMEMBER_CHARS) {
      this.clean.clear();
      this.byStart.clear();
      this.chars = 0;
    }
    this.clean.add(text);
    this.chars += text.length;
    const key = text.slice(0, PREFIX_KEY_CHARS);
    // A few per start: a system prompt recurs with a different block appended each turn.
    this.byStart.set(key, [text, ...(this.byStart.get(key) ?? []).slice(0, 3)]);
  }
}

const cleanTexts = new CleanTexts();
