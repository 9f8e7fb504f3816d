import { when } from '../format.js';

/** The shapes `/v1/dashboard/sessions` and `/v1/dashboard/sessions/<id>` answer with (src/dashboard/sessions.ts). */

export interface SessionSummary {
  id: string;
  client_format: string;
  client_profile: string | null;
  identity_source: string;
  scope: string | null;
  started_at: string;
  last_turn_at: string;
  ended_at: string | null;
  end_reason: string | null;
  turn_count: number;
  main_turn_count: number;
  learning: boolean;
}

export interface Job {
  id: number;
  kind: string;
  status: string;
  attempts: number;
  max_attempts: number;
  error: string | null;
  tokens_used: number;
  created_at: string | null;
  finished_at: string | null;
  turn_id: string | null;
}

export interface Injected {
  placement: string | null;
  tokens: number | null;
  text: string | null;
  failures: Array<{ provider: string; error: string }>;
  skills: Array<{ name: string; version: number | null; relevance: number | null; keyword: number | null; semantic: number | null; full: boolean }>;
  skills_generation: number | null;
  memories: Array<{
    id: string;
    kind: 'recalled' | 'core';
    type: string | null;
    score: number | null;
    relevance: number | null;
    in_window: boolean | null;
    content: string | null;
  }>;
  sections: Array<{ provider: string; tokens: number | null }>;
}

export interface Turn {
  id: string;
  seq: number;
  turn_type: string;
  side_request: string | null;
  client_profile: string | null;
  started_at: string;
  model: string | null;
  stream: boolean;
  query: string | null;
  query_truncated: boolean;
  response_text: string | null;
  response_truncated: boolean;
  tool_calls: Array<{ name: string; arguments: string }>;
  finish_reason: string | null;
  status: number | null;
  outcome: string;
  error: string | null;
  attempts: number;
  input_tokens: number | null;
  output_tokens: number | null;
  first_byte_ms: number | null;
  duration_ms: number | null;
  injected: Injected | null;
  jobs: Job[];
}

export interface SessionDetail {
  session: SessionSummary;
  turns: Turn[];
  next_after: number | null;
  session_jobs: Job[];
  jobs_limit: number;
}

/** When a session ended and why, or that it is still open. */
export function ended(session: SessionSummary): string {
  if (!session.ended_at) return 'open';
  return `${when(session.ended_at)}${session.end_reason ? ` (${session.end_reason})` : ''}`;
}
