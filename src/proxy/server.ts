import http from 'node:http';
import { getRequestListener } from '@hono/node-server';
import type { RequestFormat } from '../types/index.js';
import { answerClientErrors } from './client-error.js';
import { sendError } from './error-response.js';
import { handleModelRequest } from './model-request.js';
import { createRoutes } from './routes.js';
import type { ProxyDeps } from './types.js';

/** Model routes, served straight on node:http (the hot path); everything else goes through Hono. */
const MODEL_ROUTES: ReadonlyMap<string, RequestFormat> = new Map([
  ['/v1/chat/completions', 'openai'],
  ['/chat/completions', 'openai'],
  ['/v1/messages', 'anthropic'],
  ['/messages', 'anthropic'],
  ['/v1/responses', 'responses'],
  ['/responses', 'responses'],
]);

/** How long a request's head may take (node's own default), within the whole request's time. */
const HEADERS_TIMEOUT_MS = 60_000;

export function createProxyServer(deps: ProxyDeps): http.Server {
  const routes = getRequestListener(createRoutes(deps).fetch);
  const server = http.createServer(receiveTimeouts(deps.requestTimeoutMs), (request, response) => {
    if (request.method === 'POST') {
      const url = request.url ?? '/';
      const query = url.indexOf('?');
      const format = MODEL_ROUTES.get(query === -1 ? url : url.slice(0, query));
      if (format) {
        handleModelRequest(deps, format, request, response).catch((error: unknown) => lastResort(deps, format, response, error));
        return;
      }
    }
    Promise.resolve(routes(request, response)).catch((error: unknown) => lastResort(deps, 'openai', response, error));
  });
  server.keepAliveTimeout = 65_000;
  answerClientErrors(server, deps);
  return server;
}

/**
 * node:http's timeouts for receiving a request. `requestTimeout` covers the request only, head and
 * body, from its first byte until its last: once the body is in, the answer (a stream of many
 * minutes) is not timed (test/proxy-slow-body.test.ts holds it to that). At 0 (as it was, for fear of
 * cutting streams) a client sending its body a byte a minute kept its connection for ever. Node
 * checks the deadlines on an interval (30 s by default); a tenth of the shorter one cuts within 10%.
 */
function receiveTimeouts(requestTimeoutMs: number): http.ServerOptions {
  const headersTimeout = requestTimeoutMs > 0 ? Math.min(HEADERS_TIMEOUT_MS, requestTimeoutMs) : HEADERS_TIMEOUT_MS;
  return {
    requestTimeout: requestTimeoutMs,
    headersTimeout,
    connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.round(headersTimeout / 10))),
  };
}

/** A handler that threw past its own error handling: the client still gets an error, the proxy goes on. */
function lastResort(deps: ProxyDeps, format: RequestFormat, response: http.ServerResponse, error: unknown): void {
  deps.stats.proxyErrors++;
  deps.logger.error({ err: error }, 'request handler failed; the proxy keeps serving');
  try {
    sendError(response, format, error);
  } catch {
    response.destroy();
  }
}
