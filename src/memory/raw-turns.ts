import { redactSecrets } from '../text/index.js';
import { detectRules, type StatedRule } from './rules.js';
import type { MemoryStore, PreparedUnit } from './store.js';
import { numericTime } from './transfer.js';

export interface IngestTurn {
  role: 'user' | 'assistant';
  content: string;
  name?: string;
  timestamp?: string | number;
  id?: string;
}

/** The characters of a message a raw turn keeps. */
const RAW_TURN_CHARS = 8_000;

/**
 * What a raw turn keeps of a message: secrets redacted, at most 8,000 characters. Only twice that
 * is redacted (a 30 MB turn took 0.2 s): a secret begun inside the kept part ends well within it.
 */
export function rawContent(text: string): string {
  return redactSecrets(text.slice(0, 2 * RAW_TURN_CHARS))
    .slice(0, RAW_TURN_CHARS)
    .trim();
}

/** A turn of a batch ready to be written (`MemoryService.writeTurns`): its unit prepared, the rules it states read. */
export interface PreparedTurn {
  readonly turnId: string;
  readonly role: 'user' | 'assistant';
  readonly content: string;
  readonly observedAt: number;
  readonly unit: PreparedUnit;
  readonly rawKey: string;
  /** The rules a user's turn states; undefined when they depend on the session's last reply in the store (read when written). */
  readonly rules: readonly StatedRule[] | undefined;
}

/** The reply before the first turn: the session's last one in the store, read when the turn is written. */
const IN_STORE = Symbol('in store');

/**
 * Prepares a batch's turns, one call per turn in order (a user's turn is read with the reply before
 * it): undefined for a turn with nothing to keep. Reads nothing stored, so it can run in slices.
 */
export function turnPreparer(store: MemoryStore, scope: string, sessionId: string, turns: readonly IngestTurn[]): (index: number) => PreparedTurn | undefined {
  // A correction corrects the answer just before it: in this batch, else the session's last.
  let previousReply: string | undefined | typeof IN_STORE = turns[0]?.role === 'user' ? IN_STORE : undefined;
  return (index) => {
    const turn = turns[index]!;
    const turnId = turn.id ?? `${sessionId}#${index}-${Date.now()}`;
    const content = rawContent(turn.content);
    if (content === '') return undefined;
    const observedAt = toTime(turn.timestamp);
    const unit = store.prepare({
      scope,
      type: 'episodic',
      content,
      speaker: turn.role,
      importance: turn.role === 'user' ? 0.35 : 0.25,
      confidence: 1,
      origin: 'raw_turn',
      observedAt,
      sourceSession: sessionId,
      sourceTurns: [turnId],
      // Who said it, when a transcript names people ("what did Ana say about …"): found by, never shown.
      ...(turn.name ? { searchKeys: [turn.name] } : {}),
    });
    const rules = turn.role !== 'user' ? [] : previousReply === IN_STORE ? undefined : detectRules(content, { previousReply });
    previousReply = turn.role === 'assistant' ? content : undefined;
    return { turnId, role: turn.role, content, observedAt, unit, rawKey: `${scope}\u0000${sessionId}\u0000${turnId}\u0000${turn.role}`, rules };
  };
}

function toTime(value: string | number | undefined): number {
  if (typeof value === 'number') {
    const milliseconds = numericTime(value);
    if (!Number.isNaN(milliseconds)) return milliseconds;
  }
  if (typeof value === 'string') {
    const parsed = Date.parse(value);
    if (!Number.isNaN(parsed)) return parsed;
  }
  return Date.now();
}
