import type { Hono } from 'hono';
import type { HttpBindings } from '@hono/node-server';
import type { ContextPlanner } from '../context/index.js';
import type { FingerprintSessions, FinishedTurn, MainTurnActivity, SessionEndReason, SessionRow, TurnDetail, TurnRow } from '../conversation/index.js';
import type { Logger } from '../logging/index.js';
import type { PolicyUpstream } from '../rl/policy/index.js';
import type { StoreHealth } from '../store/index.js';
import type { ApiFormat } from '../types/index.js';
import type { ClientCredentials, ModelList, UpstreamForwarder } from '../upstream/index.js';
import type { AfterServing } from './after-serving.js';
import type { ProxyAuth } from './auth.js';
import type { ResponsesHistory } from './responses-history.js';
import type { ProxyStats } from './stats.js';
import type { ProxyMetrics } from '../metrics/index.js';
import type { Member } from '../team/index.js';
import type { Awaitable } from '../types/index.js';

/** What every route sees: the Node request, and the team member the auth middleware found (undefined: the owner or an open proxy). */
export interface ProxyEnv {
  Bindings: HttpBindings;
  Variables: { member: Member | undefined };
}

export type ProxyApp = Hono<ProxyEnv>;

/**
 * The conversation record as the HTTP layer uses it: the personal store (ConversationStore, SQLite,
 * synchronous reads) or the team store's (PostgreSQL, reads that wait for the database). Placement,
 * activity and the journal are always local and synchronous: they are on the request path.
 */
export interface ConversationPort {
  readonly fingerprints: Pick<FingerprintSessions, 'place'>;
  readonly activity: Pick<MainTurnActivity, 'begin'>;
  journalTurn(id: string, header: unknown, request: Buffer, answer: readonly Buffer[]): boolean;
  recordTurn(turn: FinishedTurn): Promise<void>;
  getTurn(id: string): Awaitable<TurnDetail | undefined>;
  getSession(id: string): Awaitable<SessionRow | undefined>;
  endSession(id: string, reason: SessionEndReason): Awaitable<boolean>;
  turnOfResponse(responseId: string): Awaitable<TurnRow | undefined>;
  receivedBody(turnId: string): Awaitable<unknown>;
}

/** Everything the HTTP layer needs, handed in by the runtime; proxy/ knows none of the internals. */
export interface ProxyDeps {
  auth: ProxyAuth;
  maxBodyBytes: number;
  /** How long a request may take to arrive, head and body (proxy.request_timeout_seconds; 0: no limit). */
  requestTimeoutMs: number;
  defaultScope: string;
  forwarder: UpstreamForwarder;
  /**
   * Modes rl and auto: the RL policy, which answers main turns and falls back to `forwarder`.
   * Absent (skills_only, or no policy sampler yet): every turn goes to `forwarder`.
   */
  policy?: PolicyUpstream;
  conversation: ConversationPort;
  context: ContextPlanner;
  stats: ProxyStats;
  /** Prometheus metrics (`GET /metrics`). */
  metrics: ProxyMetrics;
  logger: Logger;
  statusReport(): Record<string, unknown>;
  listModels(clientFormat: ApiFormat, credentials: ClientCredentials): Promise<ModelList>;
  /** Route groups added by other parts (skills, memory, admin). */
  routeGroups: ReadonlyArray<(app: ProxyApp) => void>;
  /** Turn records being written, by request id: shutdown waits for them, /v1/requests/{id} too. */
  pendingRecords: Map<string, Promise<void>>;
  /** Where the turn record and log line of a finished request wait for an idle moment. */
  afterServing: AfterServing;
  /** Whether the store can be written (a full disk pauses recording and learning, never serving). */
  health: StoreHealth;
  /** The conversations behind Responses API ids (previous_response_id, GET /v1/responses/{id}). */
  responses: ResponsesHistory;
}
