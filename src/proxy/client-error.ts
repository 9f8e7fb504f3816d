import http from 'node:http';
import type { Duplex } from 'node:stream';
import { RequestTimeoutError, type ErrorKind } from '../errors.js';
import type { Logger } from '../logging/index.js';
import type { ApiFormat } from '../types/index.js';
import { errorBodyText } from '../shared/api-errors.js';
import { failBodyRead } from './body.js';
import { newRequestId } from './model-request.js';
import { noteRejection } from './rejections.js';
import type { ProxyStats } from './stats.js';

interface Refusal {
  status: number;
  reason: string;
  kind: ErrorKind;
  code: string;
  message: string;
}

/** How long a route has to answer a body read ended by the timeout before its connection is cut anyway. */
const ROUTE_ANSWER_GRACE_MS = 10_000;

/**
 * Requests that node:http refuses before any handler runs (a header block over its limit, a head
 * that took too long, bytes that are not HTTP) get a JSON error an SDK can show, instead of node's
 * bare status line with an empty body. No route has it yet, so its shape is read from the bytes node
 * had (refusedFormat): Anthropic's for /v1/messages or an anthropic-version header, else OpenAI's.
 * A request whose body was still coming when proxy.request_timeout_seconds ran out is the
 * exception: its route is reading it, so the route answers the 408 in its own API's shape. Each is
 * a rejection like those the routes answer (counted, listed in /status, logged with a request id).
 */
export function answerClientErrors(server: http.Server, deps: { stats: ProxyStats; logger: Logger }): void {
  // The last request each connection began (node's in-flight answer is an earlier one's when the
  // client pipelines): the one whose body may still be coming.
  const latest = new WeakMap<Duplex, http.ServerResponse>();
  server.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => latest.set(request.socket, response));
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // A client that closed mid-request (reset, or its end before the request's:
    // HPE_INVALID_EOF_STATE) has left, no one to answer; a route reading its body counts it as a
    // client that left.
    if (error.code === 'ECONNRESET' || error.code === 'HPE_INVALID_EOF_STATE' || !socket.writable) {
      socket.destroy();
      return;
    }
    // null, not undefined, on a kept-alive connection between requests: its last answer was detached.
    const inFlight = (socket as { _httpMessage?: http.ServerResponse | null })._httpMessage ?? undefined;
    // A request timeout with a request begun but not all read is a late body; else a late head.
    const last = latest.get(socket);
    const lateBody = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' && last !== undefined && !last.req.complete ? last : undefined;
    const refusal = lateBody ? bodyTimeout(server.requestTimeout) : refusalFor(error, server);
    // The request in flight arrived whole, so the refused one was pipelined behind it (a later
    // head that is late, too large or not HTTP, or a later body that is late). The answer in
    // flight is what the agent waits for: it goes out whole (node's own handler would cut it; a
    // 408 written here would land in it, or before it and read as its answer), then the
    // connection closes. A late body's route answers its 408 itself, queued behind that answer.
    if (inFlight?.req.complete) {
      if (!(lateBody && handToRoute(lateBody, undefined, server.requestTimeout))) {
        noteRejection(deps, { ...refusal, requestId: newRequestId(), method: lateBody?.req.method, path: lateBody?.req.url ?? '' });
      }
      closeAfterAnswers(socket, inFlight);
      return;
    }
    // Like node's own handler: never write into a response that has already begun.
    if (inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    if (lateBody && lateBody === inFlight && handToRoute(lateBody, socket, server.requestTimeout)) return;
    const requestId = newRequestId();
    const request = (lateBody ?? inFlight)?.req;
    noteRejection(deps, { ...refusal, requestId, method: request?.method, path: request?.url ?? '' });
    const body = errorBodyText(refusedFormat(error), refusal);
    socket.end(
      `HTTP/1.1 ${refusal.status} ${refusal.reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nx-metaclaw-request-id: ${requestId}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
}

/**
 * Reads no more from the connection (a refused head is parsed no further: completed later, it
 * would start a request), lets the answers already under way finish, then closes it. node hands
 * the socket to the next queued answer (a request pipelined behind, read whole or answered early
 * by its route) in its own 'finish' listener, which runs before this one, so each is waited for in
 * turn; one to a body read ended by the timeout gets the route's grace. A client that leaves
 * meanwhile fails the writes and the socket is destroyed as usual.
 */
function closeAfterAnswers(socket: Duplex, current: http.ServerResponse): void {
  socket.pause();
  // Not yet begun: the answer says so itself, and node closes the connection once it is written.
  if (!current.headersSent) current.shouldKeepAlive = false;
  current.once('finish', () => {
    const next = (socket as { _httpMessage?: http.ServerResponse | null })._httpMessage;
    if (!next || next === current) {
      closeWhenWritten(socket);
      return;
    }
    if (!next.req.complete) cutAfterGrace(socket);
    closeAfterAnswers(socket, next);
  });
}

/** Ends the connection once every byte queued on it is written (node's destroySoon, on a Duplex). */
function closeWhenWritten(socket: Duplex): void {
  if (socket.destroyed) return;
  if (socket.writable) socket.end();
  if (socket.writableFinished) socket.destroy();
  else socket.once('finish', () => socket.destroy());
}

/** Cuts the connection if it is still open when a route answering a failed body read has had its time. */
function cutAfterGrace(socket: Duplex): void {
  const cut = setTimeout(() => socket.destroy(), ROUTE_ANSWER_GRACE_MS).unref();
  socket.once('close', () => clearTimeout(cut));
}

/**
 * Ends the route's read of a body that did not arrive in time with a 408, which the route answers
 * and counts itself; its answer closes the connection (the rest of the body is never read). False
 * when no read is under way (the 408 is then answered here). With the socket, the connection is cut
 * if that answer has not come within the grace; an answer queued behind another gets its grace
 * when its turn comes (closeAfterAnswers).
 */
function handToRoute(response: http.ServerResponse, socket: Duplex | undefined, timeoutMs: number): boolean {
  response.shouldKeepAlive = false;
  if (!failBodyRead(response.req, new RequestTimeoutError(bodyTimeout(timeoutMs).message))) return false;
  if (socket) cutAfterGrace(socket);
  return true;
}

function bodyTimeout(timeoutMs: number): Refusal {
  return {
    status: 408,
    reason: 'Request Timeout',
    kind: 'timeout_error',
    code: 'request_timeout',
    message: `The request body did not all arrive within ${timeoutMs / 1000} s (proxy.request_timeout_seconds); the connection is closed.`,
  };
}

/** A request line naming the Messages route, or an anthropic-version header line. */
const ANTHROPIC_REQUEST = /^[A-Z]+ \/(?:v1\/)?messages[?#/ ]|\r\nanthropic-version:/i;

/**
 * The API whose error shape a refused request gets, from the bytes node was parsing when it refused
 * (`rawPacket`: for a head over the limit, usually the whole head so far). An Anthropic SDK shown
 * OpenAI's shape reports the JSON as its message, without the error's type.
 */
function refusedFormat(error: NodeJS.ErrnoException & { rawPacket?: Buffer }): ApiFormat {
  const head = error.rawPacket?.subarray(0, 64 * 1024).toString('latin1');
  return head !== undefined && ANTHROPIC_REQUEST.test(head) ? 'anthropic' : 'openai';
}

function refusalFor(error: NodeJS.ErrnoException, server: http.Server): Refusal {
  if (error.code === 'HPE_HEADER_OVERFLOW') {
    return {
      status: 431,
      reason: 'Request Header Fields Too Large',
      kind: 'invalid_request_error',
      code: 'headers_too_large',
      message: `The request headers exceed the proxy's limit of ${http.maxHeaderSize} bytes in all; send fewer or smaller headers.`,
    };
  }
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    const whole = server.requestTimeout > 0 ? `, all of it within ${server.requestTimeout / 1000} s: proxy.request_timeout_seconds` : '';
    return {
      status: 408,
      reason: 'Request Timeout',
      kind: 'timeout_error',
      code: 'request_timeout',
      message: `The request did not arrive in time (its headers within ${server.headersTimeout / 1000} s${whole}).`,
    };
  }
  return {
    status: 400,
    reason: 'Bad Request',
    kind: 'invalid_request_error',
    code: 'invalid_http',
    message: `The request is not valid HTTP (${error.code ?? error.message}).`,
  };
}
