import type { PolicyTurn } from '../rl/types.js';
import type { AssembledResponse, RequestFormat } from '../types/index.js';
import type { ClientProfileName, SideRequestKind } from './profiles/types.js';
import type { IdentitySource, TurnType } from './signals.js';

export type TurnOutcome = 'ok' | 'upstream_error' | 'stream_broken' | 'client_aborted' | 'proxy_error';
export type SessionEndReason = 'done_header' | 'idle' | 'reset' | 'manual' | 'agent';

/** Everything known about one finished turn, as the proxy hands it over for recording. */
export interface FinishedTurn {
  id: string;
  sessionId: string;
  identitySource: IdentitySource;
  lineage: string;
  scope: string;
  turnType: TurnType;
  /** The client family recognised from the request (profiles/registry.ts). */
  clientProfile: ClientProfileName;
  /** What the client's own side request was for (a title, a summary…), or null. */
  sideRequest: SideRequestKind | null;
  clientFormat: RequestFormat;
  upstreamName: string | null;
  /** What went on the wire: `responses` when a Responses request passed through. */
  upstreamFormat: RequestFormat | null;
  model: string | null;
  stream: boolean;
  query: string;
  response: AssembledResponse | null;
  status: number | null;
  outcome: TurnOutcome;
  error: string | null;
  attempts: number;
  startedAt: number;
  firstByteMs: number | null;
  durationMs: number;
  payload: TurnPayload;
  /** The agent started a new conversation: end the other open sessions of this lineage first. */
  startsNewConversation: boolean;
  /** The client said the session is over (X-Session-Done): end it after this turn. */
  endsSession: boolean;
  /** false: record the turn but tell no learner (a session started by such a turn never learns) */
  learning: boolean;
  /** Served from the RL policy (rl/policy): the exact sampled token ids and logprobs, kept in the RL sample buffer. */
  policy?: PolicyTurn;
}

/**
 * A JSON body: its object, its text, or both when the proxy already has them (saves serialising it
 * again). Bodies sent to the turn writer's thread travel as text alone, which is cheaper to copy.
 */
export type JsonBody = { object: Record<string, unknown>; text?: string } | { object?: undefined; text: string };

export interface TurnPayload {
  /** Request body as received. */
  received: JsonBody;
  /** What the proxy added (skills, memories), with scores; null when nothing. */
  injected: unknown;
  /** The body sent upstream on the last attempt; null when nothing was sent. */
  forwarded: JsonBody | null;
  receivedHeaders: Record<string, string>;
  strippedKeys: string[];
}

/** Delivered to learning inside the recording transaction, so a job is never lost between the two. */
export interface TurnRecordedEvent {
  turnId: string;
  sessionId: string;
  scope: string;
  /** The user's real request of this turn. */
  query: string;
  /** What the proxy injected into this turn (the context planner's record), or null. */
  injected: unknown;
  model: string | null;
  seq: number;
  turnType: TurnType;
  outcome: TurnOutcome;
  mainTurnCount: number;
  turnCount: number;
  /** The turn was served from the RL policy: what the sampler returned (see FinishedTurn.policy). */
  policy?: PolicyTurn;
}

export interface SessionEndedEvent {
  sessionId: string;
  scope: string | null;
  reason: SessionEndReason;
  turnCount: number;
  mainTurnCount: number;
}

export interface ConversationListener {
  turnRecorded?(event: TurnRecordedEvent): void;
  sessionEnded?(event: SessionEndedEvent): void;
}

export interface SessionRow {
  id: string;
  identity_source: string;
  lineage: string;
  scope: string | null;
  client_format: string;
  started_at: number;
  last_turn_at: number;
  ended_at: number | null;
  end_reason: string | null;
  turn_count: number;
  main_turn_count: number;
  /** 0: nothing learns from this session (see FinishedTurn.learning) */
  learning: number;
}

export interface TurnRow {
  id: string;
  session_id: string;
  seq: number;
  turn_type: string;
  /** null on turns recorded before client profiles */
  client_profile: string | null;
  side_request: string | null;
  client_format: string;
  upstream_name: string | null;
  upstream_format: string | null;
  model: string | null;
  stream: number;
  query: string | null;
  response_text: string | null;
  tool_calls: string | null;
  finish_reason: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  status: number | null;
  outcome: string;
  error: string | null;
  attempts: number;
  started_at: number;
  first_byte_ms: number | null;
  duration_ms: number | null;
  /** The Responses API id the client got (Responses API turns only). */
  response_id: string | null;
}

/** A turn with its full bodies, for `GET /v1/requests/{id}` and `metaclaw sessions show`. */
export interface TurnDetail extends TurnRow {
  received: unknown;
  injected: unknown;
  forwarded: unknown;
  received_headers: Record<string, string>;
  stripped_keys: string[];
}
