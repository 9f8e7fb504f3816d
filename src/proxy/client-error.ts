import http from 'node:http';
import type { Duplex } from 'node:stream';
import type { ErrorKind } from '../errors.js';
import type { Logger } from '../logging/index.js';
import { errorBodyText } from '../shared/api-errors.js';

interface Refusal {
  status: number;
  reason: string;
  kind: ErrorKind;
  code: string;
  message: string;
}

/**
 * Requests that node:http refuses before any handler runs (a header block over its limit, a head
 * that took too long, bytes that are not HTTP) get a JSON error an SDK can show, instead of node's
 * bare status line with an empty body. The route is not known yet, so the body has OpenAI's shape.
 */
export function answerClientErrors(server: http.Server, logger: Logger): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // Like node's own handler: never write into a response that has already begun.
    const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const refusal = refusalFor(error);
    logger.warn({ code: error.code, status: refusal.status }, 'refused a request node:http could not read');
    const body = errorBodyText('openai', refusal);
    socket.end(
      `HTTP/1.1 ${refusal.status} ${refusal.reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
}

function refusalFor(error: NodeJS.ErrnoException): Refusal {
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
    return { status: 408, reason: 'Request Timeout', kind: 'timeout_error', code: 'request_timeout', message: 'The request headers did not arrive in time.' };
  }
  return {
    status: 400,
    reason: 'Bad Request',
    kind: 'invalid_request_error',
    code: 'invalid_http',
    message: `The request is not valid HTTP (${error.code ?? error.message}).`,
  };
}
