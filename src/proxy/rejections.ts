import type { Logger } from '../logging/index.js';
import type { ProxyStats } from './stats.js';

/**
 * A 4xx the proxy answered itself (bad input, a wrong key, an unknown route): counted, listed in
 * /status `last_errors` and logged at warn with its request id, so a client that fails on it (as
 * Claude Code did on a message role) can be traced from the log.
 */
export function noteRejection(
  deps: { stats: ProxyStats; logger: Logger },
  rejection: { requestId: string; status: number; code: string; message: string; method: string | undefined; path: string },
): void {
  const { stats } = deps;
  if (rejection.status === 401) stats.authFailures++;
  else if (rejection.status === 404) stats.notFound++;
  else stats.badRequests++;
  // node:http refuses some requests before their method and path are read (client-error.ts).
  const where = `${rejection.method ?? ''} ${rejection.path}`.trim();
  stats.rememberError(rejection.requestId, rejection.status, where === '' ? rejection.message : `${where}: ${rejection.message}`);
  deps.logger.warn(
    {
      request_id: rejection.requestId,
      status: rejection.status,
      code: rejection.code,
      method: rejection.method,
      path: rejection.path,
      error: rejection.message,
    },
    'request rejected',
  );
}

/** A client that left before its request body arrived: no fault of anyone's and no one to answer, so counted apart and logged at info. */
export function noteClientLeft(deps: { stats: ProxyStats; logger: Logger }, fields: Record<string, unknown>): void {
  deps.stats.clientAborts++;
  deps.logger.info(fields, 'the client left before its request arrived; nothing was done');
}
