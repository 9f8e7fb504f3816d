import { createHash } from 'node:crypto';
import type { TurnDetail } from '../../conversation/index.js';
import type { Awaitable, RequestFormat } from '../../types/index.js';
import { translateRequest } from '../../upstream/index.js';

export const EXPORT_FORMATS = ['datum', 'sft', 'dpo', 'kto'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** A chat message as OpenAI-style trainers (TRL, Unsloth) read them. */
export interface ChatMessage {
  role: string;
  content: unknown;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
  [key: string]: unknown;
}

/** What a turn's prompt and answer look like as chat messages. */
export interface ChatTurn {
  prompt: ChatMessage[];
  answer: ChatMessage;
  /** a hash of the prompt: turns with the same one can form preference pairs */
  promptKey: string;
}

/** Where an export reads a turn: ConversationStore, or PgConversationReads on a team. */
export interface TurnSource {
  getTurn(id: string): Awaitable<TurnDetail | undefined>;
}

/**
 * A recorded turn as chat messages: the prompt the model answered (the body sent upstream, so
 * MetaClaw's context block is in its system prompt; the received body when that is all there is),
 * translated to OpenAI chat form whatever the wire format was, and the answer with its tool calls.
 * A turn whose bodies are past retention keeps only the user's request.
 */
export async function chatTurn(conversation: TurnSource, turnId: string): Promise<ChatTurn | undefined> {
  const turn = await conversation.getTurn(turnId);
  if (!turn) return undefined;
  const prompt = promptMessages(turn);
  const calls = turn.tool_calls ? (JSON.parse(turn.tool_calls) as Array<{ id: string; name: string; arguments: string }>) : [];
  const answer: ChatMessage = {
    role: 'assistant',
    content: turn.response_text ?? '',
    ...(calls.length > 0
      ? { tool_calls: calls.map((call) => ({ id: call.id, type: 'function' as const, function: { name: call.name, arguments: call.arguments } })) }
      : {}),
  };
  return { prompt, answer, promptKey: createHash('sha256').update(JSON.stringify(prompt)).digest('hex') };
}

function promptMessages(turn: TurnDetail): ChatMessage[] {
  const forwarded = isObject(turn.forwarded) ? { body: turn.forwarded, format: (turn.upstream_format ?? turn.client_format) as RequestFormat } : undefined;
  const received = isObject(turn.received) ? { body: turn.received, format: turn.client_format as RequestFormat } : undefined;
  const source = forwarded ?? received;
  if (source) {
    try {
      const chat = translateRequest(source.format, 'openai', source.body, { defaultMaxTokens: 1 });
      if (Array.isArray(chat['messages'])) return chat['messages'] as ChatMessage[];
    } catch {
      // a body the translators cannot read: fall back to the request text
    }
  }
  return [{ role: 'user', content: turn.query ?? '' }];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
