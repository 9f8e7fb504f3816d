import { CONTEXT_CLOSE, CONTEXT_OPEN } from '../context/index.js';
import type { ConversationStore } from '../conversation/index.js';

/**
 * The block the proxy added to a turn, exactly as it was sent upstream. The turn record keeps only
 * what was chosen (the text would double every stored body), so it is cut out of the forwarded
 * body; null once payload retention dropped that body.
 */
export function injectedText(conversation: ConversationStore, turnId: string): string | null {
  return injectedBlock(conversation.getTurn(turnId)?.forwarded);
}

/** The injected block of a forwarded body (null without one), whichever store the body was read from. */
export function injectedBlock(forwarded: unknown): string | null {
  if (forwarded === null || typeof forwarded !== 'object') return null;
  // Where placement.ts puts it (Anthropic `system`, Responses `instructions`, the system message) before the rest,
  // so a user's message quoting such a block is never taken for it.
  const body = forwarded as Record<string, unknown>;
  return findBlock([body['system'], body['instructions'], body['messages'], body]);
}

/** The first `<metaclaw-context>` block in any string of the body (a system prompt, a system message or one of its parts). */
function findBlock(value: unknown): string | null {
  if (typeof value === 'string') {
    const start = value.indexOf(CONTEXT_OPEN);
    if (start === -1) return null;
    const end = value.indexOf(CONTEXT_CLOSE, start);
    return end === -1 ? value.slice(start) : value.slice(start, end + CONTEXT_CLOSE.length);
  }
  if (Array.isArray(value)) {
    for (const item of value) {
      const found = findBlock(item);
      if (found !== null) return found;
    }
    return null;
  }
  if (value !== null && typeof value === 'object') return findBlock(Object.values(value));
  return null;
}
