import { cleanUserText, messageText, responsesConversation, type ConversationStore, type TurnRow } from '../../conversation/index.js';

/** What a transcript is read from: the conversation store (or a session's rows read ahead from the team store). */
export type TranscriptSource = Pick<ConversationStore, 'turnsOfSession' | 'receivedBody'>;

export interface SessionTranscript {
  text: string;
  turnsUsed: number;
  lastSeq: number;
  userRequests: string[];
  model: string | undefined;
}

const TOTAL_LIMIT = 24_000;
const ANSWER_LIMIT = 1_500;
const TOOL_LIMIT = 400;

/**
 * What the evolver reads of a session: each main turn's real request, the answer, the tools it
 * called and what they returned, and how it went (a correction that followed, a judge score).
 * Never system prompts or injected context. The newest turns win when the budget runs out.
 */
export function buildTranscript(
  store: TranscriptSource,
  sessionId: string,
  afterSeq: number,
  outcomes: Map<string, { outcome: string | null; judgeScore: number | null }>,
): SessionTranscript | undefined {
  const turns = store.turnsOfSession(sessionId);
  const mainTurns = turns.filter((turn) => turn.turn_type === 'main');
  const main = mainTurns.filter((turn) => turn.outcome === 'ok' && turn.seq > afterSeq);
  if (main.length === 0) return undefined;
  const nextMain = new Map(mainTurns.slice(0, -1).map((turn, index) => [turn.id, mainTurns[index + 1]!]));
  const blocks: string[] = [];
  let used = 0;
  for (let index = main.length - 1; index >= 0; index--) {
    const turn = main[index]!;
    const next = nextMain.get(turn.id);
    const block = renderTurn(turn, next ? toolResultsOf(store, next.id) : [], outcomes.get(turn.id));
    if (used + block.length > TOTAL_LIMIT && blocks.length > 0) break;
    blocks.unshift(block);
    used += block.length;
  }
  return {
    text: blocks.join('\n\n'),
    turnsUsed: blocks.length,
    lastSeq: main.at(-1)!.seq,
    userRequests: main
      .slice(-50)
      .map((turn) => turn.query ?? '')
      .filter(Boolean),
    model: [...turns].reverse().find((turn) => turn.model)?.model ?? undefined,
  };
}

function renderTurn(turn: TurnRow, toolResults: string[], outcome: { outcome: string | null; judgeScore: number | null } | undefined): string {
  const lines = [`[turn ${turn.seq}] user: ${turn.query || '(no text)'}`];
  if (turn.response_text) lines.push(`assistant: ${clip(turn.response_text, ANSWER_LIMIT)}`);
  if (turn.tool_calls) {
    for (const call of JSON.parse(turn.tool_calls) as Array<{ name: string; arguments: string }>)
      lines.push(`tool call: ${call.name}(${clip(call.arguments, TOOL_LIMIT)})`);
  }
  for (const result of toolResults) lines.push(`tool result: ${clip(result, TOOL_LIMIT)}`);
  if (outcome?.outcome === 'corrected') lines.push('(the user corrected this answer in the next turn)');
  if (outcome?.judgeScore !== null && outcome?.judgeScore !== undefined) lines.push(`(judge score: ${outcome.judgeScore})`);
  return lines.join('\n');
}

/** Tool results the client sent back in the turn that followed (they answer this turn's calls). */
function toolResultsOf(store: TranscriptSource, turnId: string): string[] {
  const body = store.receivedBody(turnId) as { messages?: unknown[]; input?: unknown } | null;
  // A Responses API request holds its items in `input`.
  const messages = Array.isArray(body?.messages) ? body.messages : Array.isArray(body?.input) ? responsesConversation(body.input) : [];
  let lastAssistant = -1;
  messages.forEach((message, index) => {
    if ((message as { role?: unknown }).role === 'assistant') lastAssistant = index;
  });
  const results: string[] = [];
  for (const message of messages.slice(lastAssistant + 1)) {
    const { role, content } = message as { role?: unknown; content?: unknown };
    if (role === 'tool') results.push(typeof content === 'string' ? content : messageText(content));
    if (role === 'user' && Array.isArray(content)) {
      for (const block of content as Array<{ type?: unknown; content?: unknown }>) {
        if (block.type === 'tool_result') results.push(typeof block.content === 'string' ? block.content : messageText(block.content));
      }
    }
  }
  return results.map((result) => cleanUserText(result)).filter(Boolean);
}

function clip(text: string, limit: number): string {
  const flat = text.trim();
  return flat.length > limit ? `${flat.slice(0, limit)}…` : flat;
}
