import { hash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { BadRequestError } from '../errors.js';
import type { RequestFormat } from '../types/index.js';
import { header, isRecord, nonEmpty, stringField } from './fields.js';
import { messageText } from './message-text.js';
import { recognizeClient, RequestView, sideRequestOf } from './profiles/registry.js';
import type { ClientProfile, SideRequestKind } from './profiles/types.js';
import { userMessageText } from './user-request.js';

/** Body keys MetaClaw reads; they are removed before the request goes upstream. */
export const NON_STANDARD_BODY_KEYS = ['session_id', 'session_done', 'turn_type', 'memory_scope', 'user_id', 'workspace_id'] as const;

export type IdentitySource = 'header' | 'body' | 'runtime' | 'fingerprint' | 'none';
export type TurnType = 'main' | 'side';

export interface ScopeHints {
  memoryScope: string | undefined;
  userId: string | undefined;
  workspaceId: string | undefined;
}

/** What one request says about who is talking and where the turn belongs. */
export interface TurnSignals {
  sessionId: string;
  identitySource: IdentitySource;
  turnType: TurnType;
  sessionDone: boolean;
  /** false with `X-MetaClaw-Learning: off` (doctor's canary): the turn is recorded, nothing learns from it */
  learning: boolean;
  scope: ScopeHints;
  /** The client family that sent the request (what its session id, side requests and wrappers are). */
  profile: ClientProfile;
  /** Which of the client's own side requests this is (a title, a summary…); undefined for the user's turns. */
  sideRequest: SideRequestKind | undefined;
}

const TRUE_WORDS = new Set(['1', 'true', 'yes', 'on']);
const FALSE_WORDS = new Set(['0', 'false', 'no', 'off']);

/**
 * Recognises the client (profiles/registry.ts) and reads session identity in this order:
 * `X-Session-Id` or `session_id` header, the client's own session id (Claude Code's
 * `x-claude-code-session-id`, Codex's `session-id`…), body `session_id`, `metadata.session_id`,
 * `user`, OpenClaw's `Runtime: … sessionId=…` line, else a fingerprint of the conversation's first
 * user words, so clients that send nothing still get stable sessions. A request the client makes
 * for itself (a title, a summary) is a side turn unless `X-Turn-Type` says otherwise. `messages`
 * is the conversation when the body's own `messages` is not it (a Responses request's, resolved
 * from its `previous_response_id`).
 */
export function readTurnSignals(
  headers: IncomingHttpHeaders,
  body: Record<string, unknown>,
  format: RequestFormat,
  messages: unknown[] = Array.isArray(body['messages']) ? (body['messages'] as unknown[]) : [],
): TurnSignals {
  const view = new RequestView(body, format);
  const profile = recognizeClient(headers, view);
  const identity = resolveIdentity(headers, body, format, profile, messages);
  const turnTypeText = (header(headers, 'x-turn-type') ?? stringField(body, 'turn_type') ?? '').trim().toLowerCase();
  const doneText = (header(headers, 'x-session-done') ?? fieldText(body, 'session_done') ?? '').trim().toLowerCase();
  const sideRequest = turnTypeText === '' ? sideRequestOf(profile, view) : undefined;
  return {
    sessionId: identity.id,
    identitySource: identity.source,
    turnType: turnTypeText === 'side' || sideRequest ? 'side' : 'main',
    sessionDone: TRUE_WORDS.has(doneText),
    learning: !FALSE_WORDS.has((header(headers, 'x-metaclaw-learning') ?? '').trim().toLowerCase()),
    scope: {
      memoryScope: bounded(nonEmpty(header(headers, 'x-memory-scope') ?? stringField(body, 'memory_scope')), 'memory_scope', 'memory scope'),
      userId: bounded(nonEmpty(header(headers, 'x-user-id') ?? stringField(body, 'user_id')), 'user_id', 'user id'),
      workspaceId: bounded(nonEmpty(header(headers, 'x-workspace-id') ?? stringField(body, 'workspace_id')), 'workspace_id', 'workspace id'),
    },
    profile,
    sideRequest,
  };
}

/** Returns the non-standard keys that were present (and removes them from the body). */
export function stripNonStandardKeys(body: Record<string, unknown>): string[] {
  const removed: string[] = [];
  for (const key of NON_STANDARD_BODY_KEYS) {
    if (key in body) {
      delete body[key];
      removed.push(key);
    }
  }
  return removed;
}

/**
 * MetaClaw's scope rules (metaclaw-spec §3.2), minus the per-session part: explicit scope wins,
 * then user and workspace, then the configured default.
 */
export function deriveScope(hints: ScopeHints, defaultScope: string): string {
  if (hints.memoryScope) return hints.memoryScope;
  if (hints.userId && hints.workspaceId) return `user:${hints.userId}|workspace:${hints.workspaceId}`;
  if (hints.workspaceId) return `workspace:${hints.workspaceId}`;
  if (hints.userId) return `user:${hints.userId}`;
  return defaultScope;
}

/** Longest session id accepted; ids are stored, listed and printed, and no agent's ids come near it. */
export const MAX_SESSION_ID_LENGTH = 256;

function resolveIdentity(
  headers: IncomingHttpHeaders,
  body: Record<string, unknown>,
  format: RequestFormat,
  profile: ClientProfile,
  messages: unknown[],
): { id: string; source: IdentitySource } {
  const fromHeader = bounded(nonEmpty(header(headers, 'x-session-id')) ?? withoutCallCounter(nonEmpty(header(headers, 'session_id'))));
  if (fromHeader) return { id: fromHeader, source: 'header' };
  const fromClient = profile.sessionId?.(headers, body);
  if (fromClient) return { id: bounded(fromClient.id)!, source: fromClient.source };
  const metadata = isRecord(body['metadata']) ? body['metadata'] : undefined;
  // OpenAI's `user` names an end user, not a session: a long one is just not used as the id.
  const user = format !== 'anthropic' ? nonEmpty(stringField(body, 'user')) : undefined;
  const fromBody =
    bounded(nonEmpty(stringField(body, 'session_id')) ?? nonEmpty(metadata ? stringField(metadata, 'session_id') : undefined)) ??
    (user && user.length <= MAX_SESSION_ID_LENGTH ? user : undefined);
  if (fromBody) return { id: fromBody, source: 'body' };
  const fromRuntime = runtimeSessionId(messages);
  if (fromRuntime) return { id: fromRuntime, source: 'runtime' };
  const fingerprint = conversationFingerprint(messages, typeof body['model'] === 'string' ? body['model'] : '', profile);
  if (fingerprint) return { id: fingerprint, source: 'fingerprint' };
  return { id: 'unidentified', source: 'none' };
}

/**
 * An explicit session id over the limit is refused rather than cut: a cut id could merge two
 * sessions. A scope part (X-Memory-Scope, X-User-Id, X-Workspace-Id or their body fields) likewise,
 * and a scope the memory API is asked for by name (body or query `scope`): scopes are stored with
 * every memory, listed and printed, and a cut one could reach another's memories.
 */
export function bounded(value: string | undefined, param = 'session_id', what = 'session id'): string | undefined {
  if (value !== undefined && value.length > MAX_SESSION_ID_LENGTH)
    throw new BadRequestError(`${param}_too_long`, `The ${what} is ${value.length} characters long; MetaClaw accepts at most ${MAX_SESSION_ID_LENGTH}.`, param);
  return value;
}

/** OpenClaw's affinity header is `session_id: <id>:<n>`; the counter is not part of the identity. */
function withoutCallCounter(value: string | undefined): string | undefined {
  return value?.replace(/:\d+$/, '');
}

function openclawSessionId(runtimeId: string): string {
  return `openclaw-${runtimeId}`;
}

/** The session ids an agent's own id for a conversation may have been recorded under, in that order. */
export function sessionIdCandidates(agentId: string): string[] {
  return [agentId, withoutCallCounter(agentId)!, openclawSessionId(agentId)];
}

// With its `openclaw-` prefix the id stays within MAX_SESSION_ID_LENGTH; a longer one does not match,
// and the conversation's fingerprint names the session.
const RUNTIME_SESSION = /\bRuntime:[^\n]*\bsessionId=([A-Za-z0-9._:-]{1,240})(?![A-Za-z0-9._:-])/;

/** OpenClaw puts `Runtime: agent=… | sessionId=<uuid> | …` into the first user message. */
function runtimeSessionId(messages: unknown[]): string | undefined {
  for (const message of messages) {
    if (!isRecord(message) || message['role'] !== 'user') continue;
    const match = RUNTIME_SESSION.exec(messageText(message['content']));
    if (match) return openclawSessionId(match[1]!);
    return undefined;
  }
  return undefined;
}

/**
 * A stable id from the model and the first user message with words from the user: every later turn
 * of the same conversation resends that message unchanged. Messages that are wholly the client's
 * (Qwen Code's date-and-folder preamble) are skipped: they are the same for every run, and would
 * merge them. System prompts are left out because agents rewrite them per turn.
 */
function conversationFingerprint(messages: unknown[], model: string, profile: ClientProfile): string | undefined {
  for (const message of messages) {
    if (!isRecord(message) || message['role'] !== 'user') continue;
    if (userMessageText(message, profile) === '') continue;
    const text = messageText(message['content']);
    const digest = hash('sha256', `${model}\u0000${text}`, 'hex');
    return `fp-${digest.slice(0, 16)}`;
  }
  return undefined;
}

function fieldText(record: Record<string, unknown>, key: string): string | undefined {
  const value = record[key];
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean' || typeof value === 'number') return String(value);
  return undefined;
}
