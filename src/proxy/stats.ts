/**
 * Which of /status's `requests.errors` counters are failures (the proxy or the upstream did not
 * deliver what it should have) and which are requests refused as sent (no or a wrong key, a bad
 * request, an unknown route or id): the overview and `metaclaw status` count them apart, and a client
 * hanging up (`client_aborted`) is neither.
 */
export const REQUEST_FAILURES = ['upstream', 'proxy', 'stream_broken', 'record_failures', 'uncaught'] as const;
export const REQUEST_REFUSALS = ['auth', 'bad_request', 'not_found'] as const;

/** The named counters' sum, and the non-zero ones as `name n` parts (`stream broken 2`). */
export function countsOf(errors: Record<string, number>, names: readonly string[]): { total: number; parts: string[] } {
  const present = names.filter((name) => (errors[name] ?? 0) > 0);
  return { total: present.reduce((sum, name) => sum + errors[name]!, 0), parts: present.map((name) => `${name.replaceAll('_', ' ')} ${errors[name]}`) };
}

/** Counters for /status: what the proxy served and what went wrong, since start. */
export class ProxyStats {
  requests = 0;
  streamingRequests = 0;
  active = 0;
  badRequests = 0;
  authFailures = 0;
  /** 404s: unknown routes and ids (Claude Code's `HEAD /` among them). */
  notFound = 0;
  upstreamErrors = 0;
  proxyErrors = 0;
  streamsBroken = 0;
  clientAborts = 0;
  recordFailures = 0;
  /** Errors that escaped every handler and reached the process's last-resort handler. */
  uncaughtErrors = 0;
  inputTokens = 0;
  outputTokens = 0;
  /** Requests passed through without a record: count_tokens (forwarded or estimated) and embeddings. */
  tokenCounts = 0;
  embeddingRequests = 0;
  private readonly recentErrors: Array<{ at: string; request_id: string; status: number | null; error: string }> = [];

  rememberError(requestId: string, status: number | null, error: string): void {
    this.recentErrors.unshift({ at: new Date().toISOString(), request_id: requestId, status, error: error.slice(0, 300) });
    this.recentErrors.length = Math.min(this.recentErrors.length, 10);
  }

  snapshot() {
    return {
      total: this.requests,
      streaming: this.streamingRequests,
      active: this.active,
      errors: {
        bad_request: this.badRequests,
        auth: this.authFailures,
        not_found: this.notFound,
        upstream: this.upstreamErrors,
        proxy: this.proxyErrors,
        stream_broken: this.streamsBroken,
        client_aborted: this.clientAborts,
        record_failures: this.recordFailures,
        uncaught: this.uncaughtErrors,
      },
      tokens: { input: this.inputTokens, output: this.outputTokens },
      passed_through: { count_tokens: this.tokenCounts, embeddings: this.embeddingRequests },
      last_errors: [...this.recentErrors],
    };
  }
}
