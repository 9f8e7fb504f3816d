import { z } from 'zod';
import { NotFoundError } from '../errors.js';
import { jobCore } from '../learning/job-admin.js';
import type { ConversationStore, SessionRow, TurnRow } from '../conversation/index.js';
import type { Db } from '../store/index.js';
import { readInjected, withMemoryContents, type InjectedView } from './injected.js';
import { injectedText } from './injected-text.js';
import { SQLITE_SQL, type SqlDialect } from './sql.js';

/** Sessions per page of the list; turns per page of a session. */
export const SESSIONS_PER_PAGE = 50;
// Each turn with an injection decodes its forwarded body for the injected text: a page stays small.
export const TURNS_PER_PAGE = 25;
/** Learning jobs shown for one session (its turns' and its own), newest first. */
export const JOBS_LIMIT = 200;
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

/** A session row with the client profile of its last turn. */
export type ProfiledSession = SessionRow & { client_profile: string | null };

function sessionSummary(row: ProfiledSession) {
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

/** The sessions pages' queries, with `?` parameters (the same tables in both stores). */
export function sessionSql(sql: SqlDialect) {
  return {
    /** a page of sessions, newest activity first (LIMIT ?) */
    list: `SELECT s.*, ${PROFILE} FROM sessions s ORDER BY s.last_turn_at DESC, s.id DESC LIMIT ?`,
    /** a page older than a cursor (at, at, id, limit) */
    listBefore: `SELECT s.*, ${PROFILE} FROM sessions s WHERE s.last_turn_at < ? OR (s.last_turn_at = ? AND s.id < ?) ORDER BY s.last_turn_at DESC, s.id DESC LIMIT ?`,
    one: `SELECT s.*, ${PROFILE} FROM sessions s WHERE s.id = ?`,
    /** a page of a session's turns with what was injected (session, after seq, limit) */
    turns: `SELECT t.*, p.injected AS injected_json FROM turns t LEFT JOIN turn_payloads p ON p.turn_id = t.id
       WHERE t.session_id = ? AND t.seq > ? ORDER BY t.seq LIMIT ?`,
    /**
     * The learning jobs a session caused (session, session, limit): the enqueuers put `sessionId`
     * (session and per-turn jobs) or only `turnId` (RL judge and teacher) into the payload. Both are
     * indexed (migration 15); a union, not an OR, so each side uses its index (in SQLite, `+turns.id`
     * drops the column's affinity, which would otherwise keep it off the expression index).
     */
    jobs: `SELECT id, kind, status, attempts, max_attempts, last_error, tokens_used, created_at, finished_at, ${sql.json('payload', 'turnId')} AS turn_id
       FROM jobs
       WHERE id IN (
         SELECT id FROM jobs WHERE ${sql.json('payload', 'sessionId')} = ?
         UNION SELECT jobs.id FROM turns ${sql.orderedJoin} jobs ON ${sql.json('jobs.payload', 'turnId')} = ${sql.noIndex}turns.id WHERE turns.session_id = ?)
       ORDER BY id DESC LIMIT ?`,
  };
}

const SQLITE_SESSIONS = sessionSql(SQLITE_SQL);

/** The `before` cursor of the sessions list, read. */
export function sessionCursor(query: z.infer<typeof sessionListQuery>): { at: number; id: string } | undefined {
  return query.before === undefined
    ? undefined
    : { at: Number(query.before.slice(0, query.before.indexOf(':'))), id: query.before.slice(query.before.indexOf(':') + 1) };
}

/** The sessions page: the latest sessions, by last activity, one page at a time. */
export function sessionList(db: Db, query: z.infer<typeof sessionListQuery>) {
  const cursor = sessionCursor(query);
  const rows = (
    cursor
      ? db.prepare(SQLITE_SESSIONS.listBefore).all(cursor.at, cursor.at, cursor.id, SESSIONS_PER_PAGE + 1)
      : db.prepare(SQLITE_SESSIONS.list).all(SESSIONS_PER_PAGE + 1)
  ) as ProfiledSession[];
  return sessionListView(rows);
}

/** A page of the list from up to SESSIONS_PER_PAGE + 1 rows (one more tells whether another page follows). */
export function sessionListView(rows: ProfiledSession[]) {
  const shown = rows.slice(0, SESSIONS_PER_PAGE);
  const last = shown.at(-1);
  return {
    sessions: shown.map(sessionSummary),
    next: rows.length > SESSIONS_PER_PAGE && last ? `${last.last_turn_at}:${last.id}` : null,
  };
}

export type JobView = ReturnType<typeof jobCore<string>> & {
  /** the turn it was queued for, or null for a job of the whole session */
  turn_id: string | null;
};

/** A job row of sessionSql's `jobs` query. */
export interface SessionJobRow {
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
}

function jobView(row: SessionJobRow): JobView {
  return { ...jobCore(row), turn_id: typeof row.turn_id === 'string' ? row.turn_id : null };
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
  const session = db.prepare(SQLITE_SESSIONS.one).get(sessionId) as ProfiledSession | undefined;
  if (!session) throw sessionNotFound(sessionId);
  const rows = db.prepare(SQLITE_SESSIONS.turns).all(sessionId, query.after ?? -1, TURNS_PER_PAGE + 1) as InjectedTurnRow[];
  const injected = injectedViews(rows.slice(0, TURNS_PER_PAGE), (turnId) => injectedText(conversation, turnId));
  withMemoryContents(db, injected);
  return sessionDetailView(session, rows, injected, db.prepare(SQLITE_SESSIONS.jobs).all(sessionId, sessionId, JOBS_LIMIT) as SessionJobRow[]);
}

export type InjectedTurnRow = TurnRow & { injected_json: string | null };

export function sessionNotFound(sessionId: string): NotFoundError {
  return new NotFoundError(`No session ${sessionId} has been recorded by this proxy.`, 'session_not_found');
}

/** What was injected into each shown turn, with the injected block's text (`textOf`) where something was. */
export function injectedViews(shown: InjectedTurnRow[], textOf: (turnId: string) => string | null): Array<InjectedView | null> {
  return shown.map((row) => {
    const view = readInjected(parseStored(row.injected_json));
    if (view && view.sections.length > 0) view.text = textOf(row.id);
    return view;
  });
}

/** A session's page from its row, up to TURNS_PER_PAGE + 1 turns, their injected views and the session's jobs. */
export function sessionDetailView(session: ProfiledSession, rows: InjectedTurnRow[], injected: ReadonlyArray<InjectedView | null>, jobRows: SessionJobRow[]) {
  const shown = rows.slice(0, TURNS_PER_PAGE);
  const jobs = jobRows.map(jobView);
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

export type SessionListView = ReturnType<typeof sessionListView>;
export type SessionDetailView = ReturnType<typeof sessionDetailView>;
