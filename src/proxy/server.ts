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

export function createProxyServer(deps: ProxyDeps): http.Server {
  const routes = getRequestListener(createRoutes(deps).fetch);
  const server = http.createServer((request, response) => {
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
  // Streams can run for minutes; only the request head must arrive promptly.
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  server.keepAliveTimeout = 65_000;
  answerClientErrors(server, deps.logger);
  return server;
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
