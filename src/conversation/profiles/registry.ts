import type { IncomingHttpHeaders } from 'node:http';
import type { RequestFormat } from '../../types/index.js';
import { header, isRecord } from '../fields.js';
import { textParts } from '../message-text.js';
import { claudeCode } from './claude-code.js';
import { codex } from './codex.js';
import { generic } from './generic.js';
import { openclaw } from './openclaw.js';
import { opencode } from './opencode.js';
import { qwenCode } from './qwen-code.js';
import type { ClientProfile, SideRequestKind } from './types.js';

/** The clients MetaClaw knows, in the order they are tried; anything else is `generic`. */
export const CLIENT_PROFILES: readonly ClientProfile[] = [claudeCode, codex, qwenCode, opencode, openclaw];

/** How much of a system prompt, or of a user message's text part, the signs are matched against. */
const HEAD_CHARS = 4_096;

/**
 * The parts of a request the signs look at, read once and only when asked: a client recognised by
 * its headers never has its system prompt read.
 */
export class RequestView {
  private system: string | undefined;
  private lastUser: string[] | undefined;

  constructor(
    private readonly body: Record<string, unknown>,
    private readonly format: RequestFormat,
  ) {}

  /** The start of the system prompt (Anthropic's `system`, or OpenAI's leading system messages). */
  systemHead(): string {
    return (this.system ??= head(this.systemTexts()));
  }

  /** The start of each text part of the last user message, as sent (wrappers included). */
  lastUserParts(): string[] {
    return (this.lastUser ??= lastUserParts(this.messages()));
  }

  /** Chat Completions and Messages `messages`, or a Responses body's `input` items. */
  private messages(): unknown[] {
    const messages = this.body['messages'] ?? this.body['input'];
    return Array.isArray(messages) ? messages : [];
  }

  private systemTexts(): string[] {
    if (this.format === 'anthropic') return textParts(this.body['system']);
    const texts = typeof this.body['instructions'] === 'string' ? [this.body['instructions']] : [];
    for (const message of this.messages()) {
      if (!isRecord(message) || (message['role'] !== 'system' && message['role'] !== 'developer')) break;
      texts.push(...textParts(message['content']));
    }
    return texts;
  }
}

/** The profile of the client that sent a request: by its headers first, then by its system prompt. */
export function recognizeClient(headers: IncomingHttpHeaders, view: RequestView): ClientProfile {
  const userAgent = header(headers, 'user-agent') ?? '';
  for (const profile of CLIENT_PROFILES) {
    if (profile.userAgent?.test(userAgent)) return profile;
    if (profile.headers?.some((sign) => hasHeader(headers, sign))) return profile;
  }
  const system = view.systemHead();
  if (system === '') return generic;
  for (const profile of CLIENT_PROFILES) {
    if (profile.systemPrompt?.test(system)) return profile;
    // A side request's prompt replaces the client's own (opencode's title generator).
    if (profile.sideRequests.some((sign) => sign.system?.test(system))) return profile;
  }
  return generic;
}

/** Which of the client's own side requests this is, if it is one. */
export function sideRequestOf(profile: ClientProfile, view: RequestView): SideRequestKind | undefined {
  for (const sign of profile.sideRequests) {
    if (sign.system?.test(view.systemHead())) return sign.kind;
    if (sign.user && view.lastUserParts().some((part) => sign.user!.test(part))) return sign.kind;
  }
  return undefined;
}

function hasHeader(headers: IncomingHttpHeaders, sign: { name: string; value?: RegExp }): boolean {
  const value = header(headers, sign.name);
  return value !== undefined && (sign.value === undefined || sign.value.test(value));
}

function head(texts: string[]): string {
  let joined = '';
  for (const text of texts) {
    joined += (joined ? '\n' : '') + text;
    if (joined.length >= HEAD_CHARS) break;
  }
  return joined.slice(0, HEAD_CHARS);
}

function lastUserParts(messages: unknown[]): string[] {
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index];
    if (!isRecord(message) || message['role'] !== 'user') continue;
    return textParts(message['content']).map((text) => text.slice(0, HEAD_CHARS).trim());
  }
  return [];
}
