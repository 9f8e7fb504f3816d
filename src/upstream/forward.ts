import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { UpstreamTarget } from '../config/index.js';
import { errorMessage, RequestError } from '../errors.js';
import type { Logger } from '../logging/index.js';
import { errorBodyText, kindForStatus, streamErrorFrame } from '../shared/api-errors.js';
import { DECODED_CODINGS } from '../shared/content-coding.js';
import { redactSecrets } from '../text/secrets.js';
import type { AssembledResponse, RequestFormat } from '../types/index.js';
import { decodedAnswer, readResponseBody, requestUpstream, undecodedCoding, type UpstreamAnswer } from './http.js';
import { finalErrorHeaders, relayedHeaders } from './relayed-headers.js';
import { backoffDelayMs, isRetryableStatus, retryAfterMs } from './retry.js';
import type { CredentialMemory } from './credential-memory.js';
import { authHeaders, endpointUrl, versionHeaders, type ClientCredentials } from './endpoint.js';
import type { ClientSink } from './sink.js';
import { transientOpening } from './opening-error.js';
import { completeEventsLength, eventsOf, firstMalformedEvent, isWellFormedEvent, SseParser, type SseEvent } from './sse.js';
import {
  answerAsStream,
  answerJsonTool,
  answerShapeProblem,
  answerFromStream,
  assembleAnswer,
  assembleStream,
  readStream,
  responseAsStream,
  streamAssembler,
  streamTranslator,
  translateAnswer,
  translateErrorBody,
  translateRequest,
  wireFormat,
  type EarlierConversation,
  type StreamEnding,
} from './translate/index.js';
import { isRecord, parseJson, readString } from './translate/common.js';
import { withoutKeys } from '../shared/without-keys.js';

export type ForwardOutcome = 'ok' | 'upstream_error' | 'stream_broken' | 'client_aborted' | 'proxy_error';

export interface ForwardInput {
  requestId: string;
  clientFormat: RequestFormat;
  /** The client-format body, already augmented and stripped of MetaClaw's own keys. */
  body: Record<string, unknown>;
  /** A Responses request's conversation before its `previous_response_id`, for upstreams that cannot resolve the id. */
  history?: EarlierConversation;
  stream: boolean;
  clientHeaders: IncomingHttpHeaders;
  credentials: ClientCredentials;
  /**
   * Called when the proxy is about to wait on the upstream (work that can wait runs then): after a
   * non-stream request has gone upstream, and after a stream's first bytes have been relayed.
   */
  onWaiting?: () => void;
}

export interface ForwardResult {
  status: number | null;
  outcome: ForwardOutcome;
  error: string | null;
  upstream: UpstreamTarget | null;
  attempts: number;
  /** The body sent on the last attempt. */
  forwardedBody: ForwardedBody | null;
  response: AssembledResponse | null;
  firstByteMs: number | null;
}

export interface ForwardedBody {
  object: Record<string, unknown>;
  text: string;
}

export interface ForwarderOptions {
  maxRetries: number;
  timeoutMs: number;
  maxRetryWaitMs: number;
  defaultMaxTokens: number;
  userAgent: string;
}

/** An answer being read: its result, and how to end it early (shutdown). */
interface AnswerReading {
  result: Promise<AttemptResult>;
  abort: (message: string) => void;
}

type AttemptResult =
  | { type: 'finished'; status: number; outcome: ForwardOutcome; error: string | null; response: AssembledResponse | null }
  | {
      type: 'retryable';
      reason: string;
      status?: number;
      contentType?: string;
      body?: Buffer;
      headers?: OutgoingHttpHeaders | undefined;
      retryAfterMs?: number;
      timedOut?: boolean;
    }
  | { type: 'rejected'; status: number; contentType: string; body: Buffer; headers: OutgoingHttpHeaders | undefined };

const MALFORMED_EVENT = 'the upstream sent a stream event that is not JSON';
const ENDED_EARLY = 'the upstream ended the stream without its final event';
/** The record's words for an error event in the upstream's stream: its message, which the client got too, with no secret in it. */
const UPSTREAM_FAILED = (message: string) => `the upstream sent an error event in its stream: ${redactSecrets(message).slice(0, 500)}`;

/** What a stream amounted to when it ended: the answer so far, and how it ended. */
interface StreamRead {
  response: AssembledResponse;
  ending: StreamEnding;
}

/** Client headers that carry meaning upstream and are safe to pass along. */
const OPENAI_HEADERS = ['openai-organization', 'openai-project', 'openai-beta', 'http-referer', 'x-title'];
/** Codex names its session, thread and turn in headers that a Responses upstream reads as Codex sent them. */
const CODEX_HEADERS = [
  'originator',
  'session-id',
  'thread-id',
  'session_id',
  'x-client-request-id',
  'x-codex-window-id',
  'x-codex-turn-metadata',
  'x-codex-beta-features',
];
const PASSED_HEADERS: Record<RequestFormat, readonly string[]> = {
  openai: OPENAI_HEADERS,
  responses: [...OPENAI_HEADERS, ...CODEX_HEADERS],
  anthropic: ['anthropic-beta', 'anthropic-dangerous-direct-browser-access'],
};

/**
 * Sends one model request upstream and relays the answer to the client as it arrives. Connection
 * errors, timeouts and 408/409/429/5xx are retried with backoff (honouring retry-after), then the
 * next upstream is tried, but only while nothing has reached the client. A stream that breaks
 * midway (or, translated, ends without its final event) ends with the client API's own error event.
 */
export class UpstreamForwarder {
  /** How to end each attempt still running; used only at shutdown. */
  private readonly inFlight = new Set<(message: string) => void>();
  /** Set once shutdown cut the requests in flight: no new attempt starts. */
  private closingMessage: string | undefined;

  constructor(
    private readonly targets: readonly UpstreamTarget[],
    private readonly options: ForwarderOptions,
    private readonly logger: Logger,
    private readonly credentialMemory?: CredentialMemory,
  ) {}

  get mainTarget(): UpstreamTarget {
    return this.targets[0]!;
  }

  get allTargets(): readonly UpstreamTarget[] {
    return this.targets;
  }

  /**
   * Throws the RequestError of a request the main upstream cannot be sent (a content part its
   * format cannot carry, `unsupported_content_part`): nothing has reached an upstream or the client.
   */
  async forward(input: ForwardInput, sink: ClientSink): Promise<ForwardResult> {
    let attempts = 0;
    let forwardedBody: ForwardedBody | null = null;
    let lastFailure: Extract<AttemptResult, { type: 'retryable' }> | undefined;
    let lastTarget: UpstreamTarget | null = null;
    const started = performance.now();
    let firstByteMs: number | null = null;
    const markFirstByte = () => {
      firstByteMs ??= performance.now() - started;
    };

    for (const target of this.targets) {
      let built: ForwardedBody;
      try {
        built = this.buildBody(target, input);
      } catch (error) {
        // A fallback that cannot carry what the main upstream could is skipped: refused there, the
        // main upstream's outage would reach the client as a 400 about its request, which no SDK retries.
        if (error instanceof RequestError && lastFailure !== undefined) {
          this.logger.warn(
            { request_id: input.requestId, upstream: target.name, reason: error.message },
            'fallback upstream skipped: it cannot be sent this request',
          );
          continue;
        }
        // Refused as bad input, before anything went upstream: the caller answers it as it answers
        // any other request it refuses (no turn is recorded for it).
        if (error instanceof RequestError) throw error;
        return this.failWith(input, sink, 400, `Cannot translate the request for ${target.name}: ${errorMessage(error)}`, {
          attempts,
          forwardedBody,
          upstream: target,
          firstByteMs,
        });
      }
      // The last target tried, whose failure the client gets (not a fallback skipped above).
      lastTarget = target;
      forwardedBody = built;
      const body = built.text;
      for (let retry = 0; retry <= this.options.maxRetries; retry++) {
        if (sink.closed)
          return {
            status: null,
            outcome: 'client_aborted',
            error: 'client disconnected',
            upstream: target,
            attempts,
            forwardedBody,
            response: null,
            firstByteMs,
          };
        attempts++;
        // The last try of the last upstream relays a stream's opening failure as it came: no try is left to spend on it.
        const mayRetry = retry < this.options.maxRetries || target !== this.targets[this.targets.length - 1];
        const result = await this.attempt(target, input, body, sink, markFirstByte, mayRetry);
        if (result.type === 'retryable' && (sink.closed || sink.committed)) {
          // Something already reached the client (or it left): a retry would answer twice.
          return this.endCommitted(input, sink, result.reason, { attempts, forwardedBody, upstream: target, firstByteMs });
        }
        if (result.type === 'retryable' && this.closingMessage !== undefined) {
          return this.failWith(input, sink, 503, this.closingMessage, { attempts, forwardedBody, upstream: target, firstByteMs });
        }
        if (result.type === 'finished') {
          if (result.outcome === 'ok' && !target.apiKey) this.credentialMemory?.remember(target.name, input.credentials);
          return {
            status: result.status,
            outcome: result.outcome,
            error: result.error,
            upstream: target,
            attempts,
            forwardedBody,
            response: result.response,
            firstByteMs,
          };
        }
        if (result.type === 'rejected') {
          this.sendUpstreamError(input.clientFormat, target, sink, result.status, result.contentType, result.body, result.headers);
          return {
            status: result.status,
            outcome: 'upstream_error',
            error: `upstream ${target.name} answered ${result.status}`,
            upstream: target,
            attempts,
            forwardedBody,
            response: null,
            firstByteMs,
          };
        }
        lastFailure = result;
        this.logger.warn(
          { request_id: input.requestId, upstream: target.name, attempt: attempts, status: result.status, reason: result.reason },
          'upstream attempt failed',
        );
        if (retry === this.options.maxRetries) break;
        const wait = result.retryAfterMs ?? backoffDelayMs(retry);
        if (wait > this.options.maxRetryWaitMs) break; // asked to wait too long: move on to the next upstream
        await delay(wait, sink);
      }
    }

    // The proxy's retries are spent: the client's error says so, so its SDK does not retry on top.
    const failure = lastFailure!;
    if (failure.status !== undefined && failure.body !== undefined) {
      const headers = finalErrorHeaders(failure.headers);
      this.sendUpstreamError(input.clientFormat, lastTarget!, sink, failure.status, failure.contentType ?? 'application/json', failure.body, headers);
      return {
        status: failure.status,
        outcome: 'upstream_error',
        error: failure.reason,
        upstream: lastTarget,
        attempts,
        forwardedBody,
        response: null,
        firstByteMs,
      };
    }
    const status = failure.timedOut ? 504 : 502;
    const message = failure.timedOut ? `The upstream did not answer in time (${failure.reason}).` : `Could not reach the upstream (${failure.reason}).`;
    return this.failWith(input, sink, status, message, { attempts, forwardedBody, upstream: lastTarget, firstByteMs }, finalErrorHeaders(undefined));
  }

  /** An attempt failed after the client had bytes or left: end what was sent with an error event, never retry. */
  private endCommitted(
    input: ForwardInput,
    sink: ClientSink,
    reason: string,
    context: Pick<ForwardResult, 'attempts' | 'forwardedBody' | 'upstream' | 'firstByteMs'>,
  ): ForwardResult {
    if (sink.closed) return { status: null, outcome: 'client_aborted', error: 'client disconnected', response: null, ...context };
    const message = `The upstream stream broke before it finished (${reason}).`;
    sink.write(streamErrorFrame(input.clientFormat, { kind: 'api_error', message, code: 'upstream_stream_broken' }));
    sink.end();
    return { status: 200, outcome: 'stream_broken', error: reason, response: null, ...context };
  }

  /**
   * Ends every request still in flight: a stream gets the client API's error event, a request not
   * yet answered a 503, and nothing is retried from here on (for shutdown, after the grace period).
   */
  abortInFlight(message: string): void {
    this.closingMessage = message;
    for (const abort of [...this.inFlight]) abort(message);
  }

  private failWith(
    input: ForwardInput,
    sink: ClientSink,
    status: number,
    message: string,
    context: Pick<ForwardResult, 'attempts' | 'forwardedBody' | 'upstream' | 'firstByteMs'>,
    headers?: OutgoingHttpHeaders,
  ): ForwardResult {
    if (!sink.closed && !sink.committed) {
      sink.sendComplete(
        status,
        'application/json',
        errorBodyText(input.clientFormat, { kind: kindForStatus(status), message, code: status === 504 ? 'upstream_timeout' : 'upstream_unreachable' }),
        headers,
      );
    }
    return { status, outcome: status >= 500 ? 'upstream_error' : 'proxy_error', error: message, response: null, ...context };
  }

  /** The body for one target: the client's model replaced if the target fixes one, translated if needed. */
  private buildBody(target: UpstreamTarget, input: ForwardInput): ForwardedBody {
    const model = target.model;
    const object = translateRequest(input.clientFormat, wireFormat(target, input.clientFormat), input.body, {
      defaultMaxTokens: this.options.defaultMaxTokens,
      ...(model === undefined ? {} : { model }),
      ...(input.history === undefined ? {} : { history: input.history }),
    });
    return { object, text: JSON.stringify(object) };
  }

  private attempt(
    target: UpstreamTarget,
    input: ForwardInput,
    body: string,
    sink: ClientSink,
    markFirstByte: () => void,
    mayRetry: boolean,
  ): Promise<AttemptResult> {
    return new Promise<AttemptResult>((resolve) => {
      let settled = false;
      /**
       * Once a 2xx answer is being read, its reader owns the outcome: the request's own errors and
       * the client's close are its to handle (one owner, so a broken stream is never retried and a
       * client that leaves keeps what was relayed on its record).
       */
      let answering: ((message: string) => void) | undefined;
      const abort = (message: string) => {
        if (answering) answering(message);
        else request.destroy(new Error(message));
      };
      const settle = (result: AttemptResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.inFlight.delete(abort);
        resolve(result);
      };
      const endpoint = endpointUrl(target, wireFormat(target, input.clientFormat) === 'responses' ? 'responses' : 'model');
      const request = requestUpstream(endpoint, { method: 'POST', headers: this.buildHeaders(target, input, body) });
      this.inFlight.add(abort);
      const timer = setTimeout(() => {
        request.destroy(new Error(`no response within ${Math.round(this.options.timeoutMs / 100) / 10} s`));
        settle({ type: 'retryable', reason: `no response within ${Math.round(this.options.timeoutMs / 100) / 10} s`, timedOut: true });
      }, this.options.timeoutMs);
      sink.onClose(() => {
        if (settled || answering) return;
        request.destroy();
        settle({ type: 'finished', status: 499, outcome: 'client_aborted', error: 'client disconnected', response: null });
      });
      request.on('error', (error) => {
        if (!answering) settle({ type: 'retryable', reason: errorMessage(error) });
      });
      request.on('response', (raw) => {
        clearTimeout(timer);
        const response = decodedAnswer(raw);
        const status = response.statusCode ?? 502;
        const contentType = headerText(response.headers['content-type']) ?? 'application/json';
        // A body in a coding the proxy cannot decode is bytes no client asked for: never relayed as if plain.
        const coding = undecodedCoding(response);
        const undecodable =
          coding === undefined ? undefined : `its content-encoding "${coding}" is not one the proxy decodes (${DECODED_CODINGS}; it asks for identity)`;
        if (status >= 200 && status < 300 && undecodable !== undefined) {
          response.destroy();
          settle(this.answerUndecodable(input, status, undecodable, relayedHeaders(response.headers), sink, markFirstByte));
          return;
        }
        if (status >= 200 && status < 300) {
          // A client that asked for no stream gets one JSON answer even from an upstream that streams anyway (readComplete).
          const reading =
            contentType.includes('text/event-stream') && input.stream
              ? this.relayStream(target, input, response, sink, markFirstByte, mayRetry)
              : this.deliverComplete(target, input, response, status, contentType, sink, markFirstByte);
          answering = reading.abort;
          reading.result.then(settle, (error) => settle({ type: 'retryable', reason: errorMessage(error) }));
          return;
        }
        const settleError = (errorBody: Buffer, bodyType: string) => {
          const headers = relayedHeaders(response.headers);
          if (isRetryableStatus(status)) {
            const wait = retryAfterMs(response.headers);
            settle({
              type: 'retryable',
              reason: `HTTP ${status}`,
              status,
              contentType: bodyType,
              body: errorBody,
              headers,
              ...(wait === undefined ? {} : { retryAfterMs: wait }),
            });
          } else settle({ type: 'rejected', status, contentType: bodyType, body: errorBody, headers });
        };
        // An error body is timed like an answer's: an upstream that sent its status and then stalled held
        // the client for ever. One that cannot be read (stalled, cut, over 1 MB) still gives the client
        // the upstream's status, with what went wrong in the upstream's error shape (translated as any error body).
        const idle = this.idleGuard(response);
        answering = (message) => response.destroy(new Error(message));
        (undecodable === undefined ? readResponseBody(response, 1024 * 1024) : unread(response, undecodable))
          .finally(() => clearTimeout(idle))
          .then(
            (errorBody) => settleError(errorBody, contentType),
            (error) => {
              const message = `The upstream answered ${status}, and its error body could not be read (${errorMessage(error)}).`;
              const wire = wireFormat(target, input.clientFormat);
              settleError(Buffer.from(errorBodyText(wire, { kind: kindForStatus(status), message, code: 'upstream_error_unreadable' })), 'application/json');
            },
          );
      });
      request.end(body);
      if (!input.stream) input.onWaiting?.();
    });
  }

  /** A 2xx answer whose body the proxy cannot decode: a 502 in the client's shape, as any answer it cannot read. */
  private answerUndecodable(
    input: ForwardInput,
    status: number,
    problem: string,
    headers: OutgoingHttpHeaders | undefined,
    sink: ClientSink,
    markFirstByte: () => void,
  ): AttemptResult {
    const message = `The upstream answered ${status}, but ${problem}.`;
    markFirstByte();
    sink.sendComplete(502, 'application/json', errorBodyText(input.clientFormat, { kind: 'api_error', message, code: 'upstream_invalid_body' }), headers);
    return { type: 'finished', status: 502, outcome: 'upstream_error', error: message, response: null };
  }

  /** A complete (non-stream) answer: read it whole, translate if the formats differ, send it. */
  private deliverComplete(
    target: UpstreamTarget,
    input: ForwardInput,
    response: UpstreamAnswer,
    status: number,
    contentType: string,
    sink: ClientSink,
    markFirstByte: () => void,
  ): AnswerReading {
    const abort = (message: string) => response.destroy(new Error(message));
    sink.onClose(() => response.destroy());
    return { abort, result: this.readComplete(target, input, response, status, contentType, sink, markFirstByte) };
  }

  private async readComplete(
    target: UpstreamTarget,
    input: ForwardInput,
    response: UpstreamAnswer,
    status: number,
    contentType: string,
    sink: ClientSink,
    markFirstByte: () => void,
  ): Promise<AttemptResult> {
    const idle = this.idleGuard(response);
    let raw: Buffer;
    try {
      raw = await readResponseBody(response);
    } finally {
      clearTimeout(idle);
    }
    if (sink.closed) return { type: 'finished', status: 499, outcome: 'client_aborted', error: 'client disconnected', response: null };
    const wire = wireFormat(target, input.clientFormat);
    if (contentType.includes('text/event-stream')) return this.answerFromStream(wire, input, response, raw, sink, markFirstByte);
    if (input.stream) {
      const streamed = this.streamWholeAnswer(target, wire, input, response, raw, status, sink, markFirstByte);
      if (streamed) return streamed;
    }
    const sameFormat = wire === input.clientFormat;
    const headers = relayedHeaders(response.headers);
    // Same format: the client gets the upstream's bytes first; they are parsed for the record after.
    if (sameFormat) {
      markFirstByte();
      sink.sendComplete(status, contentType, raw, headers);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw.toString('utf8'));
    } catch {
      parsed = undefined;
    }
    if (!sameFormat) {
      markFirstByte();
      const problem = parsed === undefined ? 'is not JSON' : answerShapeProblem(wire, parsed);
      if (problem !== undefined) {
        // Relayed as it came, a body that is not JSON is a "success" the client's SDK cannot parse, and
        // JSON of another shape translates to an empty answer: a 502 in the client's shape says what happened.
        const message = `The upstream answered ${status} with a body that ${parsed === undefined ? problem : `is not an answer of the ${wire} API (${problem})`}, so it cannot be given as the ${input.clientFormat} API's answer.`;
        sink.sendComplete(502, 'application/json', errorBodyText(input.clientFormat, { kind: 'api_error', message, code: 'upstream_invalid_body' }), headers);
        return { type: 'finished', status: 502, outcome: 'upstream_error', error: message, response: null };
      }
      sink.sendComplete(status, 'application/json', JSON.stringify(translateAnswer(input.clientFormat, wire, parsed, input)), headers);
    }
    // The record holds the answer as the client got it: a forced JSON tool's call as its text.
    const assembled = parsed === undefined ? null : assembleAnswer(wire, parsed, answerJsonTool(input.clientFormat, wire, input));
    return { type: 'finished', status, outcome: 'ok', error: null, response: assembled };
  }

  /**
   * A stream request the upstream answered with one JSON answer (a server that ignores `stream`), sent
   * as the stream the client asked for: relayed or translated as JSON, its SDK, reading events, got
   * nothing. Undefined when the body is no answer of the wire's API (the caller answers that as usual).
   * A Responses upstream's answer is replayed as its own events, ids kept, and recorded from those
   * events as a real stream is (a `failed` response is a failed turn, as its `response.failed` event is).
   */
  private streamWholeAnswer(
    target: UpstreamTarget,
    wire: RequestFormat,
    input: ForwardInput,
    response: UpstreamAnswer,
    raw: Buffer,
    status: number,
    sink: ClientSink,
    markFirstByte: () => void,
  ): AttemptResult | undefined {
    const parsed = parseJson(raw.toString('utf8'));
    if (!isRecord(parsed) || answerShapeProblem(wire, parsed) !== undefined) return undefined;
    let events: string;
    let result: AttemptResult;
    if (wire === 'responses') {
      events = responseAsStream(parsed);
      result = this.endedStream(input, target, readStream(wire, Buffer.from(events)));
    } else {
      const assembled = assembleAnswer(wire, parsed, answerJsonTool(input.clientFormat, wire, input));
      const id = readString(parsed['id']) ?? `chatcmpl-${input.requestId}`;
      const model = assembled.model ?? readString(input.body['model']) ?? '';
      const { inputTokens = 0, outputTokens = 0 } = assembled.usage ?? {};
      const answer = { id, model, parts: assembled, finishReason: assembled.finishReason ?? 'stop', promptTokens: inputTokens, completionTokens: outputTokens };
      events = answerAsStream(input.clientFormat, input, answer);
      result = { type: 'finished', status, outcome: 'ok', error: null, response: assembled };
    }
    markFirstByte();
    sink.startStream(status, 'text/event-stream', relayedHeaders(response.headers));
    sink.write(events);
    sink.end();
    return result;
  }

  /**
   * A whole stream the upstream sent a client that asked for no stream, as the one JSON answer the
   * client asked for (its SDK cannot read events as an answer). A stream that holds no
   * whole answer is a 502 in the client's shape, and an empty one is retried like an empty stream.
   */
  private answerFromStream(
    wire: RequestFormat,
    input: ForwardInput,
    response: UpstreamAnswer,
    raw: Buffer,
    sink: ClientSink,
    markFirstByte: () => void,
  ): AttemptResult {
    if (raw.length === 0) return { type: 'retryable', reason: 'upstream ended the stream without sending anything' };
    markFirstByte();
    const headers = relayedHeaders(response.headers);
    const collected = answerFromStream(input.clientFormat, wire, raw, input);
    if ('problem' in collected) {
      const message = `The upstream answered a request that asked for no stream with an event stream, and ${collected.problem}, so it holds no ${input.clientFormat} API answer.`;
      sink.sendComplete(502, 'application/json', errorBodyText(input.clientFormat, { kind: 'api_error', message, code: 'upstream_invalid_body' }), headers);
      return { type: 'finished', status: 502, outcome: 'upstream_error', error: message, response: null };
    }
    sink.sendComplete(200, 'application/json', JSON.stringify(collected.answer), headers);
    return { type: 'finished', status: 200, outcome: 'ok', error: null, response: assembleStream(wire, raw, answerJsonTool(input.clientFormat, wire, input)) };
  }

  /**
   * Relays a stream chunk by chunk. Same format: the upstream's bytes, whole events at a time, with
   * the side copy parsed after the end. Other format: each event translated as it arrives, and a
   * stream that ends before the upstream said it finished is broken, as a cut connection is. Either
   * way, a stream in which the upstream sent an error event is a failed turn (upstream_error), and
   * one it ended without its final event a broken one, so learning never takes half an answer.
   * While a try is left, nothing is committed before the first whole events: a stream that opens
   * with a transient error of the upstream's is retried (see `opened`).
   */
  private relayStream(
    target: UpstreamTarget,
    input: ForwardInput,
    response: UpstreamAnswer,
    sink: ClientSink,
    markFirstByte: () => void,
    mayRetry: boolean,
  ): AnswerReading {
    let abort: (message: string) => void = () => undefined;
    const result = new Promise<AttemptResult>((resolve) => {
      const wire = wireFormat(target, input.clientFormat);
      const translating = wire !== input.clientFormat;
      const translator = translating ? streamTranslator(input.clientFormat, wire, input) : undefined;
      const assembler = translating ? streamAssembler(wire, answerJsonTool(input.clientFormat, wire, input)) : undefined;
      const parser = translating ? new SseParser() : undefined;
      const rawChunks: Buffer[] = [];
      let pending: Buffer = Buffer.alloc(0);
      let committed = false;
      let finished = false;

      /**
       * The answer so far and how the stream ended. The untranslated side copy is parsed only now,
       * never per chunk; with `whole` false a last event without its blank line (not relayed yet) is left out.
       */
      const read = (whole = true): StreamRead => {
        if (!translating) return readStream(wire, Buffer.concat(rawChunks), whole);
        return { response: assembler!.result(), ending: assembler!.ending() };
      };
      /** A result given as a function is made after the client's last bytes have left (they leave once this callback returns). */
      const finish = (result: AttemptResult | (() => AttemptResult)) => {
        if (finished) return;
        finished = true;
        clearTimeout(idle);
        if (typeof result === 'function') setImmediate(() => resolve(result()));
        else resolve(result);
      };
      const send = (chunk: string | Buffer) => {
        if (chunk.length === 0 || sink.closed) return;
        if (!sink.write(chunk)) {
          response.pause();
          sink.onDrain(() => response.resume());
        }
      };
      const idle = setTimeout(
        () => response.destroy(new Error(`upstream sent nothing for ${Math.round(this.options.timeoutMs / 1000)} s`)),
        this.options.timeoutMs,
      );

      /** Ends the stream early: retried if nothing was sent, else closed with the client API's error event. */
      const stop = (reason: string, clientMessage: string, outcome: ForwardOutcome) => {
        if (finished) return;
        response.destroy();
        if (!committed) {
          finish({ type: 'retryable', reason });
          return;
        }
        const code = outcome === 'stream_broken' ? 'upstream_stream_broken' : 'proxy_shutting_down';
        send(translating ? translator!.fail(clientMessage, code) : streamErrorFrame(input.clientFormat, { kind: 'api_error', message: clientMessage, code }));
        if (!sink.closed) sink.end();
        const sofar = read();
        // The upstream's own error event came before the cut: that failure is what the client's SDK raised.
        if (outcome === 'stream_broken' && sofar.ending.kind === 'failed') {
          finish(this.endedStream(input, target, sofar));
          return;
        }
        this.logger.warn({ request_id: input.requestId, upstream: target.name, reason }, 'stream ended before the upstream finished');
        finish({ type: 'finished', status: 200, outcome, error: reason, response: sofar.response });
      };
      /** The upstream's error event reached the client (translated, it ended the client's stream): nothing follows it. */
      const upstreamFailed = () => {
        response.destroy();
        if (!sink.closed) sink.end();
        finish(() => this.endedStream(input, target, read()));
      };
      const broken = (error?: Error) => {
        const reason = error ? errorMessage(error) : 'upstream connection closed mid-stream';
        stop(reason, `The upstream stream broke before it finished (${reason}).`, 'stream_broken');
      };
      abort = (message) => stop(message, message, 'proxy_error');
      /** Translates and sends events; false (the stream is ended with an error event) at one that is not JSON. */
      const translateEvents = (events: SseEvent[]): boolean => {
        let out = '';
        for (const event of events) {
          if (!isWellFormedEvent(event)) {
            send(out);
            broken(new Error(MALFORMED_EVENT));
            return false;
          }
          assembler!.push(event);
          out += translator!.push(event);
          if (assembler!.ending().kind === 'failed') {
            send(out);
            upstreamFailed();
            return false;
          }
        }
        send(out);
        return true;
      };

      sink.onClose(() => {
        if (finished) return;
        response.destroy();
        // Codex hangs up on response.completed, before the upstream ends the connection: a stream
        // whose final event was out is a whole answer, and one whose error event was out a failed one.
        const sofar = read(false);
        if (sofar.ending.kind !== 'cut') finish(this.endedStream(input, target, sofar));
        else finish({ type: 'finished', status: 200, outcome: 'client_aborted', error: 'client disconnected mid-stream', response: sofar.response });
      });
      const commit = () => {
        committed = true;
        markFirstByte();
        sink.startStream(
          200,
          translating ? 'text/event-stream; charset=utf-8' : (headerText(response.headers['content-type']) ?? 'text/event-stream'),
          relayedHeaders(response.headers),
        );
      };
      /** The translated path's bytes and events read before the client had any, held until the stream's opening is known. */
      let openingBytes: Buffer = Buffer.alloc(0);
      const held: SseEvent[] = [];
      let received = false;
      /**
       * Before the client has a byte: true once the first whole events are in and are not a
       * transient failure of the upstream's (relayed from here: an answer begun, keep-alives, an error
       * that blames the request); false while the first event is still incomplete, or when it was such
       * a failure, which is retried as a 529 would be (see upstream/opening-error.ts). With no try
       * left, every opening is relayed at once.
       */
      const opened = (bytes: Buffer, events: () => readonly SseEvent[], whole = false): boolean => {
        if (!mayRetry) return true;
        if (!whole && completeEventsLength(bytes) === 0) return false;
        const failure = transientOpening(wire, events());
        if (failure === undefined) return true;
        response.destroy();
        finish({ type: 'retryable', reason: failure });
        return false;
      };
      response.on('data', (chunk: Buffer) => {
        if (finished) return;
        try {
          received = true;
          idle.refresh();
          const first = !committed;
          if (!translating) {
            rawChunks.push(chunk);
            pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
            const complete = completeEventsLength(pending);
            if (first) {
              if (!opened(pending, () => eventsOf(pending.subarray(0, complete)))) return;
              commit();
            }
            if (complete > 0) {
              const malformed = firstMalformedEvent(pending, complete);
              if (malformed !== -1) {
                send(pending.subarray(0, malformed));
                broken(new Error(MALFORMED_EVENT));
                return;
              }
              send(complete === pending.length ? pending : pending.subarray(0, complete));
              pending = pending.subarray(complete);
            }
          } else if (first) {
            openingBytes = Buffer.concat([openingBytes, chunk]);
            held.push(...parser!.push(chunk));
            if (!opened(openingBytes, () => held)) return;
            commit();
            if (!translateEvents(held.splice(0))) return;
          } else if (!translateEvents(parser!.push(chunk))) return;
          // The first bytes are out (the time to first byte is kept); the rest comes at the model's pace.
          if (first) input.onWaiting?.();
        } catch (error) {
          broken(error instanceof Error ? error : new Error(String(error)));
        }
      });
      response.on('end', () => {
        if (finished) return;
        if (!received) {
          finish({ type: 'retryable', reason: 'upstream ended the stream without sending anything' });
          return;
        }
        try {
          if (!committed) {
            // The last event may have come without its blank line: the opening is read with it.
            if (translating) held.push(...parser!.end());
            if (!opened(pending, () => (translating ? held : eventsOf(pending)), true)) return;
            commit();
            if (translating && !translateEvents(held.splice(0))) return;
          }
          if (!translating) {
            const malformed = firstMalformedEvent(pending, pending.length, true);
            send(malformed === -1 ? pending : pending.subarray(0, malformed));
            if (malformed !== -1) {
              broken(new Error(MALFORMED_EVENT));
              return;
            }
          } else {
            if (!translateEvents(parser!.end())) return;
            // Closed as a whole answer, a cut stream would pass half an answer off as all of it.
            if (assembler!.ending().kind !== 'finished') {
              broken(new Error(ENDED_EARLY));
              return;
            }
            send(translator!.finish());
          }
        } catch (error) {
          broken(error instanceof Error ? error : new Error(String(error)));
          return;
        }
        if (!sink.closed) sink.end();
        // Relayed as they came, the untranslated bytes are judged from the side copy once the client has them all.
        finish(() => this.endedStream(input, target, read()));
      });
      response.on('error', broken);
      response.on('close', () => {
        if (!response.complete) broken();
      });
    });
    return { result, abort: (message) => abort(message) };
  }

  /**
   * The record of a stream the upstream ended (or the client left after its last event): whole, or
   * failed by the upstream's error event, or ended without its final event (the untranslated path
   * relays such an end as it came; a translated one was broken before it got here).
   */
  private endedStream(input: ForwardInput, target: UpstreamTarget, { response, ending }: StreamRead): AttemptResult {
    if (ending.kind === 'finished') return { type: 'finished', status: 200, outcome: 'ok', error: null, response };
    const failed = ending.kind === 'failed';
    const error = failed ? UPSTREAM_FAILED(ending.message) : ENDED_EARLY;
    this.logger.warn(
      { request_id: input.requestId, upstream: target.name, reason: error },
      failed ? 'the upstream sent an error event in its stream' : 'stream ended before the upstream finished',
    );
    return { type: 'finished', status: 200, outcome: failed ? 'upstream_error' : 'stream_broken', error, response };
  }

  private idleGuard(response: UpstreamAnswer): NodeJS.Timeout {
    const timer = setTimeout(
      () => response.destroy(new Error(`upstream sent nothing for ${Math.round(this.options.timeoutMs / 1000)} s`)),
      this.options.timeoutMs,
    );
    response.on('data', () => timer.refresh());
    return timer;
  }

  /**
   * An upstream error reaches the client with its status and headers; its body is translated when the
   * formats differ, and loses the proxy's own key for that upstream when it echoes it (`withoutKey`).
   */
  private sendUpstreamError(
    clientFormat: RequestFormat,
    target: UpstreamTarget,
    sink: ClientSink,
    status: number,
    contentType: string,
    upstreamBody: Buffer,
    headers: OutgoingHttpHeaders | undefined,
  ): void {
    if (sink.closed || sink.committed) return;
    const body = withoutKey(upstreamBody, target.apiKey);
    const translated = translateErrorBody(clientFormat, wireFormat(target, clientFormat), body.toString('utf8'), status);
    if (translated === undefined) sink.sendComplete(status, contentType, body, headers);
    else sink.sendComplete(status, 'application/json', translated, headers);
  }

  private buildHeaders(target: UpstreamTarget, input: ForwardInput, body: string): OutgoingHttpHeaders {
    const headers: OutgoingHttpHeaders = {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      accept: input.stream ? 'text/event-stream' : 'application/json',
      'accept-encoding': 'identity',
      'user-agent': headerText(input.clientHeaders['user-agent']) ?? this.options.userAgent,
    };
    if (wireFormat(target, input.clientFormat) === input.clientFormat) {
      for (const name of PASSED_HEADERS[input.clientFormat]) {
        const value = headerText(input.clientHeaders[name]);
        if (value !== undefined) headers[name] = value;
      }
    }
    Object.assign(headers, versionHeaders(target, headerText(input.clientHeaders['anthropic-version'])), authHeaders(target, input.credentials));
    return headers;
  }
}

function delay(ms: number, sink: ClientSink): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    sink.onClose(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * An upstream error body without the proxy's own key for that upstream (`llm.api_key`), which some
 * servers echo ("Invalid API key: sk-…"): the client never sent it and may not know it (a team
 * member). A client's own key is its own and left as it came.
 */
function withoutKey(body: Buffer, apiKey: string | undefined): Buffer {
  if (!apiKey || !body.includes(apiKey)) return body;
  return Buffer.from(withoutKeys(body.toString('utf8'), [apiKey]));
}

/** An answer left unread (its body could not be understood anyway): the connection is dropped, the read fails with `problem`. */
function unread(response: UpstreamAnswer, problem: string): Promise<Buffer> {
  response.destroy();
  return Promise.reject(new Error(problem));
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
