import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  deriveScope,
  extractUserRequest,
  readTurnSignals,
  stripNonStandardKeys,
  type FinishedTurn,
  type TurnSignals,
  type UserRequest,
} from '../conversation/index.js';
import type { Augmentation } from '../context/index.js';
import { errorMessage, RequestError } from '../errors.js';
import type { RequestFormat } from '../types/index.js';
import type { PolicyForwardResult } from '../rl/policy/index.js';
import type { PolicyTurn } from '../rl/types.js';
import { wireFormat, type ForwardInput, type ForwardResult } from '../upstream/index.js';
import { clientLeft, readRequestBody, parseJsonObject, withoutByteOrderMark } from './body.js';
import { noteClientLeft, noteRejection } from './rejections.js';
import { sendError } from './error-response.js';
import { ResponseSink } from './response-sink.js';
import { ResponsesTurn } from './responses-turn.js';
import { asMember } from './member-access.js';
import { memberScope } from '../team/index.js';
import type { JournalHeader, KeptRequest, TurnHead } from './turn-journal-entry.js';
import type { ProxyDeps } from './types.js';
import { validateModelRequest } from './validate.js';
import { validateResponsesRequest } from './validate-responses.js';

/** Request headers worth keeping on the turn record; credentials are never among them. */
const RECORDED_HEADERS = [
  'user-agent',
  'content-type',
  'x-session-id',
  'session_id',
  'x-claude-code-session-id',
  'session-id',
  'thread-id',
  'x-turn-type',
  'x-session-done',
  'x-memory-scope',
  'x-user-id',
  'x-workspace-id',
  'anthropic-version',
  'anthropic-beta',
  // The client's own id for the request, to find its turn from the client's logs.
  'x-request-id',
];

/**
 * `req_` + 12 hex digits of the time in ms + 12 random ones. Ids that grow with time keep turn
 * inserts at the end of the primary-key indexes: a batch of turns then dirties a few pages instead
 * of one per turn (WAL written per turn down from ~21 KB to ~14 KB, batches of 4).
 */
export function newRequestId(): string {
  const random = randomUUID();
  return `req_${Date.now().toString(16).padStart(12, '0')}${random.slice(0, 8)}${random.slice(9, 13)}`;
}

/**
 * One model request, in order: auth, body, validation (nothing before this point reaches the
 * upstream or the store), session signals, context, forwarding, and, once the client has its
 * answer, the turn record.
 */
export async function handleModelRequest(deps: ProxyDeps, format: RequestFormat, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const requestId = newRequestId();
  const startedAt = Date.now();
  const started = performance.now();
  response.setHeader('x-metaclaw-request-id', requestId);
  deps.stats.requests++;
  deps.stats.active++;
  let endActivity: ((endedAt: number) => void) | undefined;
  let prepared: number | undefined;
  let upstreamMs: number | null = null;
  let injectedTokens = 0;
  try {
    const { credentials, member } = deps.auth.identify(request.headers, request.method ?? 'POST');
    const raw = withoutByteOrderMark(await readRequestBody(request, deps.maxBodyBytes));
    const body = parseJsonObject(raw);
    if (format === 'responses') validateResponsesRequest(body);
    else validateModelRequest(format, body);

    const received = { ...body }; // as received, before MetaClaw's own keys are stripped
    const ownScope = member ? memberScope(member) : undefined;
    const responses = format === 'responses' ? await ResponsesTurn.prepare(deps.responses, deps.forwarder, body, raw.length, ownScope) : undefined;
    const conversation = responses ? responses.messages : (body['messages'] as unknown[]);
    const read = readTurnSignals(request.headers, body, format, responses?.messages);
    const placement = deps.conversation.fingerprints.place(member ? asMember(read, member) : read, conversation, raw);
    const { signals } = placement;
    endActivity = deps.conversation.activity.begin(signals.turnType, startedAt);
    const strippedKeys = stripNonStandardKeys(body);
    const userRequest = extractUserRequest(conversation, signals.profile);
    const scope = deriveScope(signals.scope, deps.defaultScope);
    const stream = body['stream'] === true;
    if (stream) deps.stats.streamingRequests++;

    const augmentation = await deps.context.augment({ format, body, userRequest, turnType: signals.turnType, scope, sessionId: signals.sessionId });
    const turn = { requestId, format, request, received, signals, userRequest, scope, strippedKeys, augmentation, stream, startedAt, body };
    prepared = performance.now();
    injectedTokens = augmentation.injected?.tokens ?? 0;
    // The turn is journaled just before the client gets the end of its answer (see conversation/turn-journal.ts).
    // A turn the policy answers is journaled with its exact token ids, so a crash cannot turn a trainable sample into text.
    let sampled: PolicyTurn | undefined;
    const sink = new ResponseSink(response, requestId, (status, answer) => journalTurn(deps, turn, raw, status, performance.now() - started, answer, sampled));
    const forwardInput: ForwardInput = {
      requestId,
      clientFormat: format,
      body: augmentation.body,
      stream,
      clientHeaders: request.headers,
      credentials,
      onWaiting: deps.afterServing.proxyWaiting,
      ...(responses?.earlier ? { history: responses.earlier } : {}),
    };
    // Modes rl and auto: the RL policy answers main turns, falling back to the forwarder (rl/policy/upstream.ts).
    const result: PolicyForwardResult = deps.policy
      ? await deps.policy.forward(
          forwardInput,
          { sessionId: signals.sessionId, main: signals.turnType === 'main', onSampled: (policyTurn) => (sampled = policyTurn) },
          sink,
        )
      : await deps.forwarder.forward(forwardInput, sink);
    if (responses) result.response = responses.answered(requestId, result, scope);
    upstreamMs = result.firstByteMs;
    placement.settle(result.outcome === 'ok');

    countOutcome(deps, requestId, result);
    const finished = performance.now();
    // Registered now, so /v1/requests/{id} and shutdown wait for it; built when the proxy is idle.
    const record = new Promise<void>((resolve) =>
      deps.afterServing.defer(() => {
        recordTurn(deps, turn, { raw, result, started, finished }).then(resolve, (error: unknown) => {
          deps.logger.error({ err: error, request_id: requestId }, 'could not record the turn; the client was served anyway');
          resolve();
        });
        deps.logger.info(
          {
            request_id: requestId,
            session: signals.sessionId,
            turn: signals.turnType,
            client: signals.profile.name,
            side: signals.sideRequest,
            format,
            upstream: result.upstream?.name,
            status: result.status,
            outcome: result.outcome,
            attempts: result.attempts,
            ms: Math.round(finished - started),
          },
          'request finished',
        );
      }),
    );
    deps.pendingRecords.set(requestId, record);
    void record.finally(() => deps.pendingRecords.delete(requestId));
  } catch (error) {
    countError(deps, requestId, request, error);
    sendError(response, format, error, requestId);
  } finally {
    deps.stats.active--;
    endActivity?.(Date.now());
    deps.metrics.observe({
      route: format,
      status: response.headersSent ? response.statusCode : 0,
      seconds: (performance.now() - started) / 1000,
      addedSeconds: prepared === undefined ? undefined : (prepared - started) / 1000,
      upstreamSeconds: upstreamMs === null ? undefined : upstreamMs / 1000,
      injectedTokens,
    });
  }
}

/** What is known of a turn before its answer: enough for the journal and, with the result, for the record. */
interface TurnInput {
  requestId: string;
  format: RequestFormat;
  request: IncomingMessage;
  received: Record<string, unknown>;
  signals: TurnSignals;
  userRequest: UserRequest;
  scope: string;
  strippedKeys: string[];
  augmentation: Augmentation;
  stream: boolean;
  startedAt: number;
  body: Record<string, unknown>;
}

/** What is known of a turn once the client has its answer. */
interface TurnEnd {
  raw: Buffer;
  /** with what the RL policy sampled when it tried the turn */
  result: PolicyForwardResult;
  started: number;
  /** When the client had its whole answer (the record itself is written later). */
  finished: number;
}

/**
 * The turn record's fields that do not depend on the answer, as a new object the caller adds to.
 * Records are built with Object.assign and plain literals, not spreads: spreading an object of
 * this many fields made V8 allocate about 9 KB per turn (new hidden classes), a tenth of a request's garbage.
 */
function turnHead(input: TurnInput): TurnHead {
  const { signals } = input;
  const model = typeof input.body['model'] === 'string' ? input.body['model'] : null;
  return {
    id: input.requestId,
    sessionId: signals.sessionId,
    identitySource: signals.identitySource,
    lineage: `${input.scope}|${input.format}|${model ?? ''}`,
    scope: input.scope,
    turnType: signals.turnType,
    clientProfile: signals.profile.name,
    sideRequest: signals.sideRequest ?? null,
    clientFormat: input.format,
    model,
    stream: input.stream,
    query: input.userRequest.text,
    startedAt: input.startedAt,
    startsNewConversation: input.userRequest.isReset,
    endsSession: signals.sessionDone,
    learning: signals.learning,
  };
}

function keptRequest(input: TurnInput): KeptRequest {
  return {
    receivedHeaders: recordedHeaders(input.request),
    strippedKeys: input.strippedKeys,
    // The injected text itself is in the forwarded body; the record keeps what was chosen and why.
    injected: injectionRecord(input.augmentation),
  };
}

/** Appends the answered turn to the journal; a failure there never reaches the client. */
function journalTurn(
  deps: ProxyDeps,
  input: TurnInput,
  raw: Buffer,
  status: number,
  durationMs: number,
  answer: readonly Buffer[],
  policy: PolicyTurn | undefined,
): void {
  try {
    const header: JournalHeader = Object.assign(turnHead(input), keptRequest(input), { v: 1 as const, status, durationMs });
    if (policy) header.policy = policy;
    deps.conversation.journalTurn(input.requestId, header, raw, answer);
  } catch (error) {
    deps.logger.warn({ err: error, request_id: input.requestId }, 'could not journal the turn; it is recorded as usual');
  }
}

/** Writes the turn and its session bookkeeping after the client has its answer. Never throws. */
async function recordTurn(deps: ProxyDeps, input: TurnInput, end: TurnEnd): Promise<void> {
  const { result } = end;
  const turn: FinishedTurn = Object.assign(turnHead(input), {
    upstreamName: result.upstream?.name ?? null,
    upstreamFormat: result.upstream ? wireFormat(result.upstream, input.format) : null,
    response: result.response,
    status: result.status,
    outcome: result.outcome,
    error: result.error,
    attempts: result.attempts,
    firstByteMs: result.firstByteMs,
    durationMs: end.finished - end.started,
    payload: Object.assign(keptRequest(input), {
      received: { object: input.received, text: end.raw.toString('utf8') },
      forwarded: result.forwardedBody,
    }),
  });
  turn.model = result.response?.model ?? result.upstream?.model ?? turn.model;
  if (result.policyTurn) turn.policy = result.policyTurn;
  try {
    await deps.conversation.recordTurn(turn);
  } catch (error) {
    deps.stats.recordFailures++;
    deps.stats.rememberError(input.requestId, null, `turn record failed: ${errorMessage(error)}`);
    deps.logger.error({ err: error, request_id: input.requestId }, 'could not record the turn; the client was served anyway');
  }
}

function injectionRecord(augmentation: Augmentation): unknown {
  const { injected, failures } = augmentation;
  if (!injected) return failures.length > 0 ? { failures } : null;
  const { text: _text, ...record } = injected;
  return failures.length > 0 ? { ...record, failures } : record;
}

function recordedHeaders(request: IncomingMessage): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of RECORDED_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') kept[name] = value;
  }
  return kept;
}

function countOutcome(deps: ProxyDeps, requestId: string, result: ForwardResult): void {
  const usage = result.response?.usage;
  if (usage) {
    deps.stats.inputTokens += usage.inputTokens;
    deps.stats.outputTokens += usage.outputTokens;
  }
  switch (result.outcome) {
    case 'upstream_error':
      deps.stats.upstreamErrors++;
      break;
    case 'stream_broken':
      deps.stats.streamsBroken++;
      break;
    case 'client_aborted':
      deps.stats.clientAborts++;
      return;
    case 'proxy_error':
      deps.stats.proxyErrors++;
      break;
    default:
      return;
  }
  deps.stats.rememberError(requestId, result.status, result.error ?? result.outcome);
}

function countError(deps: ProxyDeps, requestId: string, request: IncomingMessage, error: unknown): void {
  if (clientLeft(request, error)) {
    noteClientLeft(deps, { request_id: requestId });
    return;
  }
  if (error instanceof RequestError && error.status < 500) {
    noteRejection(deps, { requestId, status: error.status, code: error.code, message: error.message, method: request.method, path: request.url ?? '' });
    return;
  }
  if (error instanceof RequestError) {
    deps.stats.proxyErrors++;
    deps.stats.rememberError(requestId, error.status, error.message);
    return;
  }
  deps.stats.proxyErrors++;
  deps.stats.rememberError(requestId, 500, errorMessage(error));
  deps.logger.error({ err: error, request_id: requestId }, 'unexpected proxy error');
}
