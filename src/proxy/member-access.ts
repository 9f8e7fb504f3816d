import type { TurnSignals } from '../conversation/index.js';
import { NotFoundError, PermissionError } from '../errors.js';
import { memberScope, type Member } from '../team/index.js';

/**
 * What a member key opens besides the model routes (which node:http serves before any of this):
 * their own memory, their own recorded requests, sessions and responses, and the pass-through
 * routes. Everything else reads or changes what the whole install holds (the dashboard, sessions,
 * skills, RL, metrics, status) and needs the proxy key.
 */
const MEMBER_ROUTES: ReadonlyArray<{ method: string; path: RegExp }> = [
  { method: 'GET', path: /^\/(v1\/)?models$/ },
  { method: 'POST', path: /^\/(v1\/)?messages\/count_tokens$/ },
  { method: 'POST', path: /^\/(v1\/)?embeddings$/ },
  { method: '*', path: /^\/v1\/memory(\/.*)?$/ },
  { method: 'GET', path: /^\/v1\/requests\/[^/]+$/ },
  { method: 'POST', path: /^\/v1\/sessions\/[^/]+\/end$/ },
  { method: 'GET', path: /^\/(v1\/)?responses\/[^/]+$/ },
];

/** Throws PermissionError when a member's key does not open this route. */
export function checkMemberRoute(member: Member, method: string, path: string): void {
  if (MEMBER_ROUTES.some((route) => (route.method === '*' || route.method === method) && route.path.test(path))) return;
  throw new PermissionError(
    'member_not_allowed',
    `A member key (${member.name}) opens the model routes and the member's own memory, requests and sessions; ${method} ${path} needs the proxy key.`,
  );
}

/**
 * For a member, something recorded in another scope is as missing as something never recorded:
 * `notFound` is thrown rather than a 403 that would confirm it exists.
 */
export function requireOwnScope(member: Member | undefined, scope: string | null | undefined, notFound: () => NotFoundError): void {
  if (member && scope !== memberScope(member)) throw notFound();
}

/**
 * A member's turn: their scope whatever the headers say (a key fixes it; `X-User-Id` or
 * `X-Memory-Scope` cannot widen it), and session ids of their own, so two members whose agents
 * send the same session id or open with the same words never share a session.
 */
export function asMember(signals: TurnSignals, member: Member): TurnSignals {
  return {
    ...signals,
    sessionId: memberSessionId(member, signals.sessionId),
    scope: { memoryScope: memberScope(member), userId: undefined, workspaceId: undefined },
  };
}

/** The stored id of a member's session: the id their agent uses, behind the member's name. */
export function memberSessionId(member: Member, sessionId: string): string {
  return `${member.name}~${sessionId}`;
}
