import { hash } from 'node:crypto';
import { isRecord } from './fields.js';
import type { ClientProfile } from './profiles/types.js';
import type { TurnSignals } from './signals.js';
import { userMessageText } from './user-request.js';

/** Fingerprints remembered at most; a forgotten one is looked up in the store again. */
const MAX_FINGERPRINTS = 10_000;

/** The opening request of a conversation, and whether the client got its answer. */
interface Start {
  digest: string;
  answered: boolean;
}

interface Newest {
  sessionId: string;
  /** The fresh start that opened the session in this run of the proxy (none when found in the store). */
  start: Start | undefined;
}

/** Where a turn goes, and what to call once the client has (or has not) its answer. */
export interface Placement {
  signals: TurnSignals;
  settle(answered: boolean): void;
}

const UNTRACKED = (): void => undefined;

/**
 * Sessions of clients that send no session id. Their fingerprint (signals.ts) is the same for every
 * run that opens with the same words (Qwen Code's runs of one prompt send byte-identical requests),
 * so a fresh start whose fingerprint already has an answered session opens a new session,
 * `<fingerprint>-<time>`; later turns of a conversation go to the newest session of their
 * fingerprint. A fresh start that was not answered (an error, or still in flight) is being retried
 * when the very same request comes again: that stays in its session.
 */
export class FingerprintSessions {
  private readonly newest = new Map<string, Newest>();

  constructor(
    /** The newest stored session of a fingerprint: after a restart, or once forgotten here. */
    private readonly newestStored: (fingerprint: string) => string | undefined,
    private readonly now: () => number = Date.now,
    /** A fresh start opened a session (nodes of a team tell each other: see `learn`). */
    private readonly opened?: (fingerprint: string, sessionId: string) => void,
  ) {}

  /**
   * A session another node opened for a fingerprint: this node's next turns of that conversation
   * go there too. Ids of one fingerprint grow (see nextId), so an older one never replaces a newer.
   */
  learn(fingerprint: string, sessionId: string): void {
    const known = this.newest.get(fingerprint);
    if (known && known.sessionId >= sessionId) return;
    this.remember(fingerprint, { sessionId, start: undefined });
  }

  /** `messages` is the conversation the signals were read from; `raw` the request body as received. */
  place(signals: TurnSignals, messages: readonly unknown[], raw: Buffer): Placement {
    if (signals.identitySource !== 'fingerprint') return { signals, settle: UNTRACKED };
    const fingerprint = signals.sessionId;
    let newest = this.newest.get(fingerprint);
    if (!newest) {
      const stored = this.newestStored(fingerprint);
      newest = stored === undefined ? undefined : { sessionId: stored, start: undefined };
    }
    // A client's own side request never opens a session: it belongs to the conversation it serves.
    if (signals.turnType === 'side' || !isFreshStart(messages, signals.profile)) {
      // Remembered also when new, so the store is not asked again for every turn of it.
      newest ??= { sessionId: fingerprint, start: undefined };
      this.remember(fingerprint, newest);
      return { signals: { ...signals, sessionId: newest.sessionId }, settle: UNTRACKED };
    }
    const start: Start = { digest: hash('sha1', raw, 'hex'), answered: false };
    const retried = newest?.start !== undefined && !newest.start.answered && newest.start.digest === start.digest;
    const sessionId = !newest || retried ? (newest?.sessionId ?? fingerprint) : this.nextId(fingerprint, newest.sessionId);
    this.remember(fingerprint, { sessionId, start });
    if (sessionId !== newest?.sessionId) this.opened?.(fingerprint, sessionId);
    return {
      signals: { ...signals, sessionId },
      settle: (answered) => {
        if (answered) start.answered = true;
      },
    };
  }

  private nextId(fingerprint: string, previous: string): string {
    let time = this.now();
    let id = `${fingerprint}-${time.toString(36)}`;
    while (id <= previous && previous.startsWith(`${fingerprint}-`)) id = `${fingerprint}-${(++time).toString(36)}`;
    return id;
  }

  /** Most recently used last, so the least recently used is the first to be forgotten. */
  private remember(fingerprint: string, newest: Newest): void {
    this.newest.delete(fingerprint);
    this.newest.set(fingerprint, newest);
    if (this.newest.size > MAX_FINGERPRINTS) this.newest.delete(this.newest.keys().next().value!);
  }
}

/**
 * The opening request of a conversation: the client's own opening messages (system prompts, Qwen
 * Code's date-and-folder preamble and its "Got it. Thanks for the context!"), then one message with
 * the user's words, and nothing after it; no tool call or tool result anywhere.
 */
function isFreshStart(messages: readonly unknown[], profile: ClientProfile): boolean {
  let userWords = false;
  for (const message of messages) {
    if (!isRecord(message)) continue;
    const role = message['role'];
    if (userWords) {
      if (role === 'system' || role === 'developer') continue;
      return false;
    }
    if (
      role === 'tool' ||
      role === 'function' ||
      (Array.isArray(message['tool_calls']) && message['tool_calls'].length > 0) ||
      isRecord(message['function_call']) ||
      hasToolBlock(message['content'])
    )
      return false;
    if (role === 'user' && userMessageText(message, profile) !== '') userWords = true;
  }
  return userWords;
}

/** Anthropic's tool calls and results are blocks of a message's content. */
function hasToolBlock(content: unknown): boolean {
  return Array.isArray(content) && content.some((part) => isRecord(part) && (part['type'] === 'tool_use' || part['type'] === 'tool_result'));
}
