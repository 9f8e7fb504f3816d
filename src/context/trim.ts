import { countTextTokens } from '../text/index.js';
import type { RequestFormat } from '../types/index.js';

/** What a chat template adds around each message (role, separators). */
const MESSAGE_TOKENS = 4;
/** An image, audio or file part, whatever its encoding: its base64 is not text the model reads. */
const ATTACHMENT_TOKENS = 1_000;
const ATTACHMENT_KEYS = new Set(['image_url', 'input_audio', 'file', 'source']);

const TEXT_FIELDS = ['tool_calls', 'function_call', 'reasoning_content'];

type Message = Record<string, unknown>;

/**
 * `max_context_tokens`: drops the oldest non-system messages until the prompt, plus the max_tokens
 * the request asks for, fits `limit` tokens. It cuts only just before a user message that is not a
 * tool result, so no tool call loses its result and an Anthropic conversation still starts with the
 * user; the newest such message is always kept, even when it alone is too long. Counting walks from
 * the newest message and stops once the budget is passed, so it costs what the budget holds, not
 * what the conversation holds. Returns undefined when nothing is dropped.
 */
export function trimToContext(
  format: RequestFormat,
  body: Record<string, unknown>,
  limit: number,
): { body: Record<string, unknown>; dropped: number } | undefined {
  const messages = body['messages'];
  if (!Array.isArray(messages) || messages.length < 2) return undefined;
  // OpenAI's system messages are always kept (Anthropic's system prompt is not among the messages).
  const openai = format === 'openai';
  let budget = limit - requestedOutput(format, body) - tokensOf(body['tools']) - tokensOf(body['system']);
  if (openai) for (const message of messages) if (isSystemMessage(message)) budget -= messageTokens(message as Message);

  let used = 0;
  let fits = true;
  let cut = -1; // the oldest turn start whose suffix fits
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index] as Message;
    if (openai && isSystemMessage(message)) continue;
    used += messageTokens(message);
    if (used > budget) {
      fits = false;
      break;
    }
    if (startsTurn(message)) cut = index;
  }
  if (fits) return undefined;
  if (cut === -1) cut = newestTurnStart(messages);
  const remaining = messages.filter((message, index) => index >= cut || (openai && isSystemMessage(message)));
  const dropped = messages.length - remaining.length;
  return dropped === 0 ? undefined : { body: { ...body, messages: remaining }, dropped };
}

function isSystemMessage(message: unknown): boolean {
  const role = (message as Message | null)?.['role'];
  return role === 'system' || role === 'developer';
}

/** A user message that begins an exchange: not an Anthropic tool result (OpenAI's are role `tool`). */
function startsTurn(message: Message): boolean {
  if (message['role'] !== 'user') return false;
  const content = message['content'];
  return !Array.isArray(content) || !content.some((part) => (part as Message | null)?.['type'] === 'tool_result');
}

function newestTurnStart(messages: unknown[]): number {
  for (let index = messages.length - 1; index >= 0; index--) if (startsTurn(messages[index] as Message)) return index;
  return -1;
}

/** The answer's room in the context window, when the request names it. */
function requestedOutput(format: RequestFormat, body: Record<string, unknown>): number {
  const value = format === 'openai' ? (body['max_completion_tokens'] ?? body['max_tokens']) : body['max_tokens'];
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

/** A message's text lives in these fields (walking every key of every message cost four times as much). */
function messageTokens(message: Message): number {
  const content = message['content'];
  let sum = MESSAGE_TOKENS + (typeof content === 'string' ? countTextTokens(content) : tokensOf(content));
  for (const key of TEXT_FIELDS) if (message[key] !== undefined) sum += tokensOf(message[key]);
  return sum;
}

/** Approximate prompt tokens of a request: its messages, system prompt and tool definitions (what `count_tokens` estimates). */
export function promptTokens(body: Record<string, unknown>): number {
  let sum = tokensOf(body['system']) + tokensOf(body['tools']);
  const messages = body['messages'];
  if (Array.isArray(messages)) for (const message of messages) sum += messageTokens(message as Message);
  return sum;
}

/** Approximate tokens of every text in a message, tool call, tool definition or system block. */
function tokensOf(value: unknown): number {
  if (typeof value === 'string') return countTextTokens(value);
  if (Array.isArray(value)) {
    let sum = 0;
    for (const item of value) sum += tokensOf(item);
    return sum;
  }
  if (value === null || typeof value !== 'object') return 0;
  let sum = 0;
  for (const key in value) sum += ATTACHMENT_KEYS.has(key) ? ATTACHMENT_TOKENS : tokensOf((value as Message)[key]);
  return sum;
}
