import { generic } from './profiles/generic.js';
import type { ClientProfile } from './profiles/types.js';
import { textParts } from './message-text.js';

/** The user's real request in the latest turn, with the client's wrappers removed. */
export interface UserRequest {
  text: string;
  /** Index in `messages` of the message it came from, or -1. */
  messageIndex: number;
  /** The agent started a new conversation (`/new`, `/reset`, OpenClaw's bootstrap notice). */
  isReset: boolean;
  /** The two user messages before it, wrappers removed: the conversation's recent topic. */
  earlier: string;
}

const RESET_NOTICE = /a new session was started via \/new or \/reset/i;
const RESET_COMMAND = /^\/(?:new|reset)\b/i;
const EARLIER_MESSAGES = 2;
const EARLIER_CHARS = 1_000;

/**
 * Finds the last user message that carries words from the user (not a carrier of the client's own
 * context, not only tool results) and strips the wrappers the client (its profile says which) and
 * memory plugins add around them. This text, and nothing else of the request, is what retrieval
 * searches for and what memory and skills learn from.
 */
export function extractUserRequest(messages: readonly unknown[], profile: ClientProfile = generic): UserRequest {
  for (let index = messages.length - 1; index >= 0; index--) {
    const text = userMessageText(messages[index], profile);
    if (text === '') continue;
    return { text, messageIndex: index, isReset: RESET_NOTICE.test(text) || RESET_COMMAND.test(text), earlier: earlierUserText(messages, index, profile) };
  }
  return { text: '', messageIndex: -1, isReset: false, earlier: '' };
}

/** What the user typed in one message ('' for any other role, or when it is all the client's). */
export function userMessageText(message: unknown, profile: ClientProfile = generic): string {
  if (typeof message !== 'object' || message === null) return '';
  const { role, content } = message as { role?: unknown; content?: unknown };
  if (role !== 'user') return '';
  return textParts(content)
    .map((part) => cleanUserText(part, profile))
    .filter(Boolean)
    .join('\n');
}

/** One text with the client's wrappers removed; '' when it is wholly the client's. */
export function cleanUserText(raw: string, profile: ClientProfile = generic): string {
  let text = raw;
  for (const block of profile.wrappers.blocks) text = text.replace(block, '');
  text = text.trim();
  return profile.wrappers.parts.some((part) => part.test(text)) ? '' : text;
}

function earlierUserText(messages: readonly unknown[], before: number, profile: ClientProfile): string {
  const found: string[] = [];
  for (let index = before - 1; index >= 0 && found.length < EARLIER_MESSAGES; index--) {
    const text = userMessageText(messages[index], profile);
    if (text) found.push(text.slice(0, EARLIER_CHARS));
  }
  return found.join('\n');
}
