import { when } from '../format.js';
import type { SessionDetailView, SessionListView } from '../../../src/dashboard/views.js';

/** The shapes `/v1/dashboard/sessions` and `/v1/dashboard/sessions/<id>` answer with (src/dashboard/sessions.ts). */
export type SessionSummary = SessionListView['sessions'][number];
export type SessionDetail = SessionDetailView;
export type Turn = SessionDetailView['turns'][number];
export type Job = Turn['jobs'][number];
export type Injected = NonNullable<Turn['injected']>;

/** When a session ended and why, or that it is still open. */
export function ended(session: SessionSummary): string {
  if (!session.ended_at) return 'open';
  return `${when(session.ended_at)}${session.end_reason ? ` (${session.end_reason})` : ''}`;
}
