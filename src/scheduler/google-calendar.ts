import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { errorMessage } from '../errors.js';
import { writeFileAtomic } from '../shared/atomic-write.js';
import { BusyCalendar, merge } from './calendar.js';
import type { Clock, Interval } from './types.js';

/** Read-only access to calendars, as MetaClaw asked for. */
export const CALENDAR_SCOPE = 'https://www.googleapis.com/auth/calendar.readonly';
const TIMEOUT_MS = 30_000;
/** A token this close to its expiry is refreshed first. */
const EXPIRY_MARGIN_MS = 60_000;

/** Google's API root; another one (a mirror, a test server) through METACLAW_GOOGLE_API_BASE. */
function apiBase(): string {
  return (process.env['METACLAW_GOOGLE_API_BASE'] ?? 'https://www.googleapis.com').replace(/\/+$/, '');
}

/** The OAuth client file downloaded from Google Cloud ("Desktop app": `installed`; `web` also read). */
const clientFileSchema = z.union([
  z.object({
    installed: z.object({ client_id: z.string().min(1), client_secret: z.string().default(''), auth_uri: z.string().url(), token_uri: z.string().url() }),
  }),
  z.object({ web: z.object({ client_id: z.string().min(1), client_secret: z.string().default(''), auth_uri: z.string().url(), token_uri: z.string().url() }) }),
]);
export type OAuthClient = { client_id: string; client_secret: string; auth_uri: string; token_uri: string };

/** The token file, in google-auth's `authorized_user` shape, so MetaClaw's calendar_token.json reads as is. */
const tokenFileSchema = z
  .object({
    token: z.string().nullable().optional(),
    refresh_token: z.string().min(1),
    token_uri: z.string().url(),
    client_id: z.string().min(1),
    client_secret: z.string().default(''),
    scopes: z.array(z.string()).optional(),
    expiry: z.string().nullable().optional(),
  })
  .passthrough();
type TokenFile = z.infer<typeof tokenFileSchema>;

const tokenAnswerSchema = z.object({
  access_token: z.string().min(1),
  expires_in: z.number().optional(),
  refresh_token: z.string().optional(),
  scope: z.string().optional(),
});

const freeBusySchema = z.object({
  calendars: z.record(
    z.string(),
    z.object({
      busy: z.array(z.object({ start: z.string(), end: z.string() })).default([]),
      errors: z.array(z.object({ reason: z.string() })).optional(),
    }),
  ),
});

/** A JSON file, or an error that says what it was for. */
function readJsonFile(path: string, failure: (reason: string) => string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(failure(errorMessage(error)), { cause: error });
  }
}

export function readOAuthClient(path: string): OAuthClient {
  const json = readJsonFile(path, (reason) => `cannot read the Google OAuth client file ${path}: ${reason}`);
  const parsed = clientFileSchema.safeParse(json);
  if (!parsed.success)
    throw new Error(`${path} is not a Google OAuth client file (download it from Google Cloud → APIs & Services → Credentials → a Desktop app client)`);
  return 'installed' in parsed.data ? parsed.data.installed : parsed.data.web;
}

function readToken(path: string): TokenFile {
  const json = readJsonFile(path, (reason) => `no Google Calendar token at ${path} (${reason}): run \`metaclaw scheduler calendar-auth\``);
  const parsed = tokenFileSchema.safeParse(json);
  if (!parsed.success) throw new Error(`${path} is not a Google token file: run \`metaclaw scheduler calendar-auth\` again`);
  return parsed.data;
}

async function postForm(url: string, form: Record<string, string>): Promise<z.infer<typeof tokenAnswerSchema>> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams(form).toString(),
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  const text = await response.text();
  if (!response.ok) {
    // Google's error codes (invalid_grant: revoked or expired) say what to do; the body never holds our secrets.
    const code = /"error"\s*:\s*"([^"]+)"/.exec(text)?.[1];
    throw new Error(
      `Google's token endpoint answered ${response.status}${code ? ` (${code})` : ''}${code === 'invalid_grant' ? ': run `metaclaw scheduler calendar-auth` again' : ''}`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const parsed = tokenAnswerSchema.safeParse(json);
  if (!parsed.success) throw new Error("Google's token endpoint answered without an access token");
  return parsed.data;
}

/**
 * Google Calendar through its free/busy API (read-only scope): the busy time of the primary
 * calendar, which already leaves out events marked free and expands recurring ones. The access token is refreshed with the stored refresh token when it is near expiry, and the
 * token file rewritten (mode 0600).
 */
export class GoogleCalendar extends BusyCalendar {
  constructor(tokenPath: string, clock: Clock) {
    super({ label: 'Google Calendar (primary)', busy: (from, to) => googleBusy(tokenPath, from, to, clock) }, clock);
  }
}

async function googleBusy(tokenPath: string, from: number, to: number, clock: Clock): Promise<{ intervals: Interval[]; events: number }> {
  const token = await accessToken(tokenPath, clock);
  const response = await fetch(`${apiBase()}/calendar/v3/freeBusy`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ timeMin: new Date(from).toISOString(), timeMax: new Date(to).toISOString(), items: [{ id: 'primary' }] }),
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  if (!response.ok) throw new Error(`Google Calendar answered HTTP ${response.status}`);
  const parsed = freeBusySchema.safeParse(await response.json());
  if (!parsed.success) throw new Error('Google Calendar answered something that is not a free/busy answer');
  const primary = parsed.data.calendars['primary'];
  if (!primary) throw new Error('Google Calendar did not answer for the primary calendar');
  if (primary.errors?.length) throw new Error(`Google Calendar: ${primary.errors.map((error) => error.reason).join(', ')}`);
  const intervals = primary.busy
    .map((busy) => ({ start: Date.parse(busy.start), end: Date.parse(busy.end) }))
    .filter((interval) => Number.isFinite(interval.start) && interval.end > interval.start);
  return { intervals: merge(intervals), events: primary.busy.length };
}

async function accessToken(tokenPath: string, clock: Clock): Promise<string> {
  const token = readToken(tokenPath);
  const expiry = token.expiry ? Date.parse(token.expiry) : Number.NaN;
  if (token.token && Number.isFinite(expiry) && expiry - EXPIRY_MARGIN_MS > clock.now()) return token.token;
  const answer = await postForm(token.token_uri, {
    client_id: token.client_id,
    client_secret: token.client_secret,
    refresh_token: token.refresh_token,
    grant_type: 'refresh_token',
  });
  const refreshed: TokenFile = {
    ...token,
    token: answer.access_token,
    ...(answer.refresh_token ? { refresh_token: answer.refresh_token } : {}),
    expiry: new Date(clock.now() + (answer.expires_in ?? 3600) * 1000).toISOString(),
  };
  writeFileAtomic(tokenPath, `${JSON.stringify(refreshed, null, 2)}\n`, { mode: 0o600 });
  return answer.access_token;
}

export interface AuthorizeOptions {
  client: OAuthClient;
  tokenPath: string;
  /** shows the consent URL (and may open a browser with it) */
  showUrl: (url: string) => void;
  timeoutMs?: number;
}

/**
 * Google's flow for installed apps: a one-time server on 127.0.0.1 receives the consent's
 * redirect, with PKCE (S256) and a random state; the code is exchanged for a refresh token, which
 * is written to `tokenPath` (mode 0600). Returns the scopes granted.
 */
export async function authorizeGoogleCalendar(options: AuthorizeOptions): Promise<{ scopes: string[] }> {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const state = randomBytes(16).toString('hex');
  let settle: { resolve: (code: string) => void; reject: (error: Error) => void } | undefined;
  const received = new Promise<string>((resolve, reject) => (settle = { resolve, reject }));
  const server = http.createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== '/') {
      response.writeHead(404).end();
      return;
    }
    const code = url.searchParams.get('code');
    const error = url.searchParams.get('error');
    const ok = url.searchParams.get('state') === state && code;
    response.writeHead(ok ? 200 : 400, { 'content-type': 'text/plain; charset=utf-8' });
    response.end(
      ok ? 'MetaClaw can read your calendar now. You can close this tab.' : `MetaClaw did not get access: ${error ?? 'the answer did not match this request'}.`,
    );
    if (ok) settle?.resolve(code);
    else if (error || url.searchParams.has('state')) settle?.reject(new Error(`Google did not grant access: ${error ?? 'state mismatch'}`));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const timer = setTimeout(() => settle?.reject(new Error('no answer from the browser in time')), options.timeoutMs ?? 5 * 60_000);
  try {
    const consent = new URL(options.client.auth_uri);
    consent.search = new URLSearchParams({
      client_id: options.client.client_id,
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: CALENDAR_SCOPE,
      access_type: 'offline',
      prompt: 'consent',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state,
    }).toString();
    options.showUrl(consent.toString());
    const code = await received;
    const answer = await postForm(options.client.token_uri, {
      code,
      client_id: options.client.client_id,
      client_secret: options.client.client_secret,
      redirect_uri: redirectUri,
      grant_type: 'authorization_code',
      code_verifier: verifier,
    });
    if (!answer.refresh_token)
      throw new Error('Google granted access without a refresh token; remove MetaClaw from your Google account’s third-party access and try again');
    const scopes = answer.scope ? answer.scope.split(' ') : [CALENDAR_SCOPE];
    const token: TokenFile = {
      token: answer.access_token,
      refresh_token: answer.refresh_token,
      token_uri: options.client.token_uri,
      client_id: options.client.client_id,
      client_secret: options.client.client_secret,
      scopes,
      expiry: new Date(Date.now() + (answer.expires_in ?? 3600) * 1000).toISOString(),
    };
    writeFileAtomic(options.tokenPath, `${JSON.stringify(token, null, 2)}\n`, { mode: 0o600 });
    return { scopes };
  } finally {
    clearTimeout(timer);
    server.close();
    server.closeAllConnections();
  }
}
