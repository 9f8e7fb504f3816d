import type { TurnJournal } from '../../src/conversation/turn-journal.js';
import type { JournalHeader } from '../../src/proxy/turn-journal-entry.js';

export interface JournaledAnswer {
  header: JournalHeader;
  request: Buffer;
  answer: Buffer;
}

/**
 * Appends one answered non-streamed OpenAI chat turn to `journal`, as the proxy does just before the
 * client gets the end of its answer; `padding` spaces make the request body as large as a test needs.
 */
export function appendAnsweredTurn(
  journal: TurnJournal,
  turn: Pick<JournalHeader, 'id' | 'sessionId' | 'turnType' | 'sideRequest' | 'query' | 'startedAt'> & { reply: string; padding?: number },
): JournaledAnswer {
  const header: JournalHeader = {
    v: 1,
    id: turn.id,
    sessionId: turn.sessionId,
    identitySource: 'header',
    lineage: turn.sessionId,
    scope: 'user:alice',
    turnType: turn.turnType,
    clientProfile: 'generic',
    sideRequest: turn.sideRequest,
    clientFormat: 'openai',
    model: 'm',
    stream: false,
    query: turn.query,
    startedAt: turn.startedAt,
    startsNewConversation: false,
    endsSession: false,
    learning: false,
    receivedHeaders: {},
    strippedKeys: [],
    injected: null,
    status: 200,
    durationMs: 5,
  };
  const request = Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: turn.query + ' '.repeat(turn.padding ?? 0) }] }));
  const answer = Buffer.from(
    JSON.stringify({
      id: turn.id,
      object: 'chat.completion',
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: turn.reply }, finish_reason: 'stop' }],
    }),
  );
  journal.append(turn.id, header, request, [answer]);
  return { header, request, answer };
}

/** A journal header as the proxy writes it for a finished turn (conversation/turn-journal.ts), with `fields` over it. */
export function journalHeader(fields: Record<string, unknown>): Record<string, unknown> {
  return {
    v: 1,
    id: 'req_0190000000000000000000aa',
    sessionId: 'codex-session',
    identitySource: 'header',
    lineage: 'default|responses|m',
    scope: 'default',
    turnType: 'main',
    clientFormat: 'responses',
    model: 'm',
    stream: true,
    query: 'hello',
    startedAt: 1_700_000_000_000,
    durationMs: 5,
    status: 200,
    startsNewConversation: false,
    endsSession: false,
    learning: true,
    receivedHeaders: {},
    strippedKeys: [],
    injected: null,
    ...fields,
  };
}
