import { messageText } from './message-text.js';

/** The user's real request in the latest turn, with agent wrappers removed. */
export interface UserRequest {
  text: string;
  /** Index in `messages` of the message it came from, or -1. */
  messageIndex: number;
  /** The agent started a new conversation (`/new`, `/reset`, OpenClaw's bootstrap notice). */
  isReset: boolean;
}

const INTERNAL_CONTEXT = /<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>[\s\S]*?(?:<<<END_OPENCLAW_INTERNAL_CONTEXT>>>|$)/g;
const ENVELOPE_TIMESTAMP = /^\s*\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{4}-\d{2}-\d{2} \d{1,2}:\d{2}(?::\d{2})?(?: [^\]\n]{1,40})?\]\s*/;
const RUNTIME_LINE = /(?:^|\n)Runtime: [^\n]*(?=\n|$)/g;
const UNTRUSTED_METADATA = /(?:^|\n)[A-Za-z][A-Za-z ]{0,40} \(untrusted metadata\):\s*```[a-z]*\n[\s\S]*?```[ \t]*/g;
/** Context blocks injected by MetaClaw itself or by memory plugins; never part of the request. */
const INJECTED_BLOCKS = /<(metaclaw-[a-z-]+|relevant-memories|relevant_memories|memories)\b[^>]*>[\s\S]*?<\/\1>/g;
const RESET_NOTICE = /a new session was started via \/new or \/reset/i;
const RESET_COMMAND = /^\/(?:new|reset)\b/i;

/**
 * Finds the last user message that carries words from the user (not an internal-context carrier,
 * not only tool results) and strips the wrappers OpenClaw and memory plugins add around it.
 */
export function extractUserRequest(messages: readonly unknown[]): UserRequest {
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index];
    if (typeof message !== 'object' || message === null) continue;
    const { role, content } = message as { role?: unknown; content?: unknown };
    if (role !== 'user') continue;
    const text = cleanUserText(messageText(content));
    if (text === '') continue;
    return { text, messageIndex: index, isReset: RESET_NOTICE.test(text) || RESET_COMMAND.test(text) };
  }
  return { text: '', messageIndex: -1, isReset: false };
}

export function cleanUserText(raw: string): string {
  return raw
    .replace(INTERNAL_CONTEXT, '')
    .replace(INJECTED_BLOCKS, '')
    .replace(UNTRUSTED_METADATA, '')
    .replace(RUNTIME_LINE, '')
    .replace(ENVELOPE_TIMESTAMP, '')
    .trim();
}
