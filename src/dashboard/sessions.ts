import { z } from 'zod';
import { NotFoundError } from '../errors.js';
import type { ConversationStore, SessionRow, TurnRow } from '../conversation/index.js';
import type { Db } from '../store/index.js';
import { readInjected, withMemoryContents, type InjectedView } from './injected.js';
import { injectedText } from './injected-text.js';

/** Sessions per page of the list; turns per page of a session. */
export const SESSIONS_PER_PAGE = 50;
// Each turn with an injection decodes its forwarded body for the injected text: a page stays small.
export const TURNS_PER_PAGE = 25;
/** Learning jobs shown for one session (its turns' and its own), newest first. */
const JOBS_LIMIT = 200;
/** A request or answer longer than this is cut on the page; `GET /v1/requests/{id}` has it whole. */
const TEXT_LIMIT = 8_000;

/** `before`: the cursor a previous page handed out (`<last_turn_at>:<id>`), to page back in time. */
export const sessionListQuery = z.object({
  before: z
    .string()
    .regex(/^\d{1,15}:.+$/, 'must be the `next` cursor of a previous page')
    .optional(),
});

/** `after`: the last turn number already shown, to page on through a long session. */
export const sessionDetailQuery = z.object({
  after: z
    .string()
    .regex(/^\d{1,9}$/, 'must be a turn number')
    .transform(Number)
    .optional(),
});

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

function sessionSummary(row: SessionRow & { client_profile: string | null }) {
  return {
    id: row.id,
    client_format: row.client_format,
    client_profile: row.client_profile,
    identity_source: row.identity_source,
    scope: row.scope,
    started_at: iso(row.started_at),
    last_turn_at: iso(row.last_turn_at),
    ended_at: iso(row.ended_at),
    end_reason: row.end_reason,
    turn_count: row.turn_count,
    main_turn_count: row.main_turn_count,
    learning: row.learning !== 0,
  };
}

// The profile is per turn (a session's turns can come from an agent's side helpers); the last one names the client.
const PROFILE = `(SELECT client_profile FROM turns WHERE session_id = s.id ORDER BY seq DESC LIMIT 1) AS client_profile`;

/** The sessions page: the latest sessions, by last activity, one page at a time. */
export function sessionList(db: Db, query: z.infer<typeof sessionListQuery>) {
  const cursor =
    query.before === undefined
      ? undefined
      : { at: Number(query.before.slice(0, query.before.indexOf(':'))), id: query.before.slice(query.before.indexOf(':') + 1) };
  const rows = (
    cursor
      ? db
          .prepare(
            `SELECT s.*, ${PROFILE} FROM sessions s WHERE s.last_turn_at < ? OR (s.last_turn_at = ? AND s.id < ?) ORDER BY s.last_turn_at DESC, s.id DESC LIMIT ?`,
          )
          .all(cursor.at, cursor.at, cursor.id, SESSIONS_PER_PAGE + 1)
      : db.prepare(`SELECT s.*, ${PROFILE} FROM sessions s ORDER BY s.last_turn_at DESC, s.id DESC LIMIT ?`).all(SESSIONS_PER_PAGE + 1)
  ) as Array<SessionRow & { client_profile: string | null }>;
  const shown = rows.slice(0, SESSIONS_PER_PAGE);
  const last = shown.at(-1);
  return {
    sessions: shown.map(sessionSummary),
    next: rows.length > SESSIONS_PER_PAGE && last ? `${last.last_turn_at}:${last.id}` : null,
  };
}

export interface JobView {
  id: number;
  kind: string;
  status: string;
  attempts: number;
  max_attempts: number;
  error: string | null;
  tokens_used: number;
  created_at: string | null;
  finished_at: string | null;
  /** the turn it was queued for, or null for a job of the whole session */
  turn_id: string | null;
}

/**
 * The learning jobs a session caused: the enqueuers put `sessionId` (session and per-turn jobs) or
 * only `turnId` (RL judge and teacher) into the payload. Both are indexed (migration 15); a union,
 * not an OR, so each side uses its index (`+turns.id` drops the column's affinity, which would
 * otherwise keep SQLite off the expression index).
 */
function jobsOfSession(db: Db, sessionId: string): JobView[] {
  const rows = db
    .prepare(
      `SELECT id, kind, status, attempts, max_attempts, last_error, tokens_used, created_at, finished_at, json_extract(payload, '$.turnId') AS turn_id
       FROM jobs
       WHERE id IN (
         SELECT id FROM jobs WHERE json_extract(payload, '$.sessionId') = ?
         UNION SELECT jobs.id FROM turns CROSS JOIN jobs ON json_extract(jobs.payload, '$.turnId') = +turns.id WHERE turns.session_id = ?)
       ORDER BY id DESC LIMIT ?`,
    )
    .all(sessionId, sessionId, JOBS_LIMIT) as Array<{
    id: number;
    kind: string;
    status: string;
    attempts: number;
    max_attempts: number;
    last_error: string | null;
    tokens_used: number;
    created_at: number;
    finished_at: number | null;
    turn_id: unknown;
  }>;
  return rows.map((row) => ({
    id: row.id,
    kind: row.kind,
    status: row.status,
    attempts: row.attempts,
    max_attempts: row.max_attempts,
    error: row.last_error,
    tokens_used: row.tokens_used,
    created_at: iso(row.created_at),
    finished_at: iso(row.finished_at),
    turn_id: typeof row.turn_id === 'string' ? row.turn_id : null,
  }));
}

function clipped(text: string | null): { text: string | null; truncated: boolean } {
  if (text === null || text.length <= TEXT_LIMIT) return { text, truncated: false };
  return { text: `${text.slice(0, TEXT_LIMIT)}…`, truncated: true };
}

function toolCalls(stored: string | null): Array<{ name: string; arguments: string }> {
  if (!stored) return [];
  try {
    const calls = JSON.parse(stored) as unknown;
    if (!Array.isArray(calls)) return [];
    return calls.map((call: { name?: unknown; function?: { name?: unknown; arguments?: unknown }; arguments?: unknown; input?: unknown }) => {
      const name = call.name ?? call.function?.name;
      const args = call.arguments ?? call.function?.arguments ?? call.input ?? '';
      return { name: typeof name === 'string' ? name : '?', arguments: clipped(typeof args === 'string' ? args : JSON.stringify(args)).text ?? '' };
    });
  } catch {
    return [];
  }
}

function turnView(row: TurnRow, injected: InjectedView | null, jobs: JobView[]) {
  const query = clipped(row.query);
  const answer = clipped(row.response_text);
  return {
    id: row.id,
    seq: row.seq,
    turn_type: row.turn_type,
    side_request: row.side_request,
    client_profile: row.client_profile,
    started_at: iso(row.started_at),
    model: row.model,
    stream: row.stream !== 0,
    query: query.text,
    query_truncated: query.truncated,
    response_text: answer.text,
    response_truncated: answer.truncated,
    tool_calls: toolCalls(row.tool_calls),
    finish_reason: row.finish_reason,
    status: row.status,
    outcome: row.outcome,
    error: row.error,
    attempts: row.attempts,
    input_tokens: row.input_tokens,
    output_tokens: row.output_tokens,
    first_byte_ms: row.first_byte_ms,
    duration_ms: row.duration_ms,
    injected,
    jobs: jobs.filter((job) => job.turn_id === row.id),
  };
}

/** One session's page: its turns in order with what was injected into each, and the learning they caused. */
export function sessionDetail(db: Db, conversation: ConversationStore, sessionId: string, query: z.infer<typeof sessionDetailQuery>) {
  const session = db.prepare(`SELECT s.*, ${PROFILE} FROM sessions s WHERE s.id = ?`).get(sessionId) as
    (SessionRow & { client_profile: string | null }) | undefined;
  if (!session) throw new NotFoundError(`No session ${sessionId} has been recorded by this proxy.`, 'session_not_found');
  const rows = db
    .prepare(
      `SELECT t.*, p.injected AS injected_json FROM turns t LEFT JOIN turn_payloads p ON p.turn_id = t.id
       WHERE t.session_id = ? AND t.seq > ? ORDER BY t.seq LIMIT ?`,
    )
    .all(sessionId, query.after ?? -1, TURNS_PER_PAGE + 1) as Array<TurnRow & { injected_json: string | null }>;
  const shown = rows.slice(0, TURNS_PER_PAGE);
  const injected = shown.map((row) => {
    const view = readInjected(parseStored(row.injected_json));
    if (view && view.sections.length > 0) view.text = injectedText(conversation, row.id);
    return view;
  });
  withMemoryContents(db, injected);
  const jobs = jobsOfSession(db, sessionId);
  return {
    session: sessionSummary(session),
    turns: shown.map((row, index) => turnView(row, injected[index] ?? null, jobs)),
    /** the `after` of the next page of turns, or null at the end */
    next_after: rows.length > TURNS_PER_PAGE ? (shown.at(-1)?.seq ?? null) : null,
    session_jobs: jobs.filter((job) => job.turn_id === null),
    jobs_limit: JOBS_LIMIT,
  };
}

function parseStored(text: string | null): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

export type SessionListView = ReturnType<typeof sessionList>;
export type SessionDetailView = ReturnType<typeof sessionDetail>;
