import { RlBackendError, errorMessage, type RlFailureCategory } from '../../errors.js';
import { VERSION } from '../../version.js';
import { WIRE_SDK_VERSION, requestFailedSchema, tryAgainSchema, untypedFutureSchema } from './wire.js';
import { withoutKeys } from '../../shared/without-keys.js';
import { deadlineSignal } from '../../shared/deadline-signal.js';

/**
 * HTTP for the Tinker JSON wire: the X-API-Key header, retries with exponential backoff and jitter
 * for what the service says is passing (408, 409, 429, 5xx, dropped connections), and futures:
 * a queued route answers `{request_id}` at once and the result is fetched from `retrieve_future`,
 * which may answer `try_again`, 408 (poll again), 410 (the future is gone: submit again), or a
 * failure with the service's error category. Mirrors SDK 0.6's `_APIFuture` and `execute_with_retries`.
 */

export type BackendKind = 'tinker' | 'mint';

export interface RetryPolicy {
  /** first backoff delay; doubles each attempt (SDK: 1 s) */
  initialDelayMs: number;
  /** cap on one delay (SDK: 30 s) */
  maxDelayMs: number;
  /** give up after failing this long in a row (SDK: 5 min) */
  maxWaitMs: number;
  /** ± fraction of each delay drawn at random, so many clients do not retry in step (SDK: 0.25) */
  jitter: number;
}

export interface TransportOptions {
  kind: BackendKind;
  baseUrl: string;
  apiKey: string;
  retry?: Partial<RetryPolicy>;
  /** delay before polling again after a 408 or try_again, by queue state (MinT asks for 300 ms / 1 s / 2 s) */
  pollDelayMs?: Partial<Record<'active' | 'paused_capacity' | 'paused_rate_limit', number>>;
  /** per-request timeout of a retrieve_future long poll (SDK: 45 s) */
  retrieveTimeoutMs?: number;
  /** how many times a future that expired (410) is submitted again */
  maxResubmits?: number;
  random?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

const DEFAULT_RETRY: RetryPolicy = { initialDelayMs: 1000, maxDelayMs: 30_000, maxWaitMs: 5 * 60_000, jitter: 0.25 };
const MINT_POLL_DELAYS = { active: 300, paused_capacity: 1000, paused_rate_limit: 2000 };
const RETRYABLE_STATUS = new Set([408, 409, 429]);

export const USER_AGENT = `MetaClaw-TS/${VERSION} (Tinker JSON wire of SDK ${WIRE_SDK_VERSION}; TypeScript)`;

export function backendLabel(kind: BackendKind): string {
  return kind === 'mint' ? 'MinT' : 'Tinker';
}

function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function parseCategory(value: string | undefined): RlFailureCategory {
  const lower = (value ?? '').toLowerCase();
  return lower === 'user' || lower === 'server' ? lower : 'unknown';
}

/** A 410 from retrieve_future: the service lost the future, so the request must be sent again. */
class FutureExpired extends Error {}

interface HttpAnswer {
  status: number;
  body: unknown;
  text: string;
}

export class TinkerTransport {
  readonly kind: BackendKind;
  readonly label: string;
  private readonly baseUrl: string;
  private readonly apiKey: string;
  private readonly retry: RetryPolicy;
  private readonly pollDelayMs: Record<string, number>;
  private readonly retrieveTimeoutMs: number;
  private readonly maxResubmits: number;
  private readonly random: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(options: TransportOptions) {
    if (!options.apiKey) throw new RlBackendError(`${backendLabel(options.kind)} needs an API key (rl.api_key).`, { code: 'rl_no_api_key' });
    this.kind = options.kind;
    this.label = backendLabel(options.kind);
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.apiKey = options.apiKey;
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.pollDelayMs = { ...(options.kind === 'mint' ? MINT_POLL_DELAYS : {}), ...options.pollDelayMs };
    this.retrieveTimeoutMs = options.retrieveTimeoutMs ?? 45_000;
    this.maxResubmits = options.maxResubmits ?? 3;
    this.random = options.random ?? Math.random;
    this.sleep = options.sleep ?? abortableSleep;
  }

  /** The backoff before retry number `attempt` (0-based): exponential, capped, with jitter. */
  backoffMs(attempt: number): number {
    const base = Math.min(this.retry.initialDelayMs * 2 ** attempt, this.retry.maxDelayMs);
    return Math.max(0, base * (1 + this.retry.jitter * (this.random() * 2 - 1)));
  }

  /**
   * A route answered directly (create_session, session_heartbeat, create_sampling_session), retried
   * while passing, for `retry.maxWaitMs`. With `patienceMs` (a session being opened, which its
   * caller tries again later by itself) it gives up within that time instead: each attempt is cut
   * at the time left, so a service that never answers fails as one that refuses connections, and no
   * wait goes past it.
   */
  async post(route: string, body: unknown, options: { signal?: AbortSignal; headers?: Record<string, string>; patienceMs?: number } = {}): Promise<unknown> {
    const started = Date.now();
    const { patienceMs } = options;
    const spent = (wait: number): boolean =>
      patienceMs === undefined ? Date.now() - started >= this.retry.maxWaitMs : Date.now() - started + wait >= patienceMs;
    for (let attempt = 0; ; attempt += 1) {
      let answer: HttpAnswer;
      const deadline = patienceMs === undefined ? undefined : deadlineSignal(options.signal, Math.max(1, patienceMs - (Date.now() - started)));
      try {
        answer = await this.send(route, body, deadline?.signal ?? options.signal, options.headers);
      } catch (error) {
        if (options.signal?.aborted) throw error;
        const wait = this.backoffMs(attempt);
        if (spent(wait)) {
          throw new RlBackendError(`${this.label} is unreachable at ${this.baseUrl} (${route}): ${failureOf(error, patienceMs)}`, {
            code: 'rl_unreachable',
            cause: error,
          });
        }
        await this.sleep(wait, options.signal);
        continue;
      } finally {
        deadline?.done();
      }
      if (answer.status >= 200 && answer.status < 300) return answer.body;
      const passing = RETRYABLE_STATUS.has(answer.status) || answer.status >= 500;
      const wait = passing ? this.backoffMs(attempt) : 0;
      if (!passing || spent(wait)) throw this.statusError(route, answer);
      await this.sleep(wait, options.signal);
    }
  }

  /**
   * A queued route: submit, then wait on the future. `makeBody` is called again for a resubmission
   * after a 410, so a caller may give the new request a fresh sequence id where the wire wants one.
   */
  async submit(
    route: string,
    makeBody: () => unknown,
    options: { signal?: AbortSignal; headers?: Record<string, string>; onAccepted?: () => void } = {},
  ): Promise<unknown> {
    for (let resubmits = 0; ; resubmits += 1) {
      const answer = await this.post(route, makeBody(), options);
      options.onAccepted?.();
      const future = untypedFutureSchema.safeParse(answer);
      if (!future.success)
        throw new RlBackendError(`${this.label} answered ${route} without a request_id: ${JSON.stringify(answer).slice(0, 200)}`, { code: 'rl_bad_response' });
      try {
        return await this.retrieve(route, future.data.request_id, options.signal);
      } catch (error) {
        if (!(error instanceof FutureExpired)) throw error;
        if (resubmits >= this.maxResubmits) {
          throw new RlBackendError(`${this.label} lost the result of ${route} ${resubmits + 1} times (410); giving up.`, {
            code: 'rl_future_expired',
            status: 410,
          });
        }
      }
    }
  }

  private async retrieve(route: string, requestId: string, signal?: AbortSignal): Promise<unknown> {
    let failures = 0;
    let failingSince = 0;
    let badRequests = 0;
    for (let iteration = 0; ; iteration += 1) {
      const deadline = deadlineSignal(signal, this.retrieveTimeoutMs);
      let answer: HttpAnswer;
      try {
        answer = await this.send('/api/v1/retrieve_future', { request_id: requestId }, deadline.signal, { 'X-Tinker-Request-Iteration': String(iteration) });
      } catch (error) {
        if (signal?.aborted) throw error;
        // a long poll that timed out or a dropped connection: back off, then poll again
        failingSince ||= Date.now();
        if (Date.now() - failingSince >= this.retry.maxWaitMs) {
          throw new RlBackendError(`${this.label} is unreachable while waiting for ${route}: ${failureOf(error, undefined)}`, {
            code: 'rl_unreachable',
            cause: error,
          });
        }
        await this.sleep(this.backoffMs(failures++), signal);
        continue;
      } finally {
        deadline.done();
      }
      if (answer.status === 200) {
        failures = 0;
        failingSince = 0;
        const pending = tryAgainSchema.safeParse(answer.body);
        if (pending.success) {
          await this.pollDelay(pending.data.queue_state, signal);
          continue;
        }
        const failed = requestFailedSchema.safeParse(answer.body);
        if (failed.success) {
          const category = parseCategory(failed.data.category);
          const fault = category === 'user' ? 'a user error: check the request' : category === 'server' ? 'a server error' : 'an error of unknown kind';
          throw new RlBackendError(`${this.label} failed ${route} (${fault}): ${failed.data.error}`, { code: `rl_request_failed_${category}`, category });
        }
        return answer.body;
      }
      if (answer.status === 408) {
        const queueState = (answer.body as { queue_state?: unknown } | undefined)?.queue_state;
        await this.pollDelay(typeof queueState === 'string' ? queueState : undefined, signal);
        continue;
      }
      if (answer.status === 410) throw new FutureExpired();
      const passing = answer.status === 429 || answer.status >= 500 || (answer.status === 400 && ++badRequests <= 3);
      failingSince ||= Date.now();
      if (!passing || Date.now() - failingSince >= this.retry.maxWaitMs) throw this.statusError(`${route} (retrieve_future)`, answer);
      await this.sleep(this.backoffMs(failures++), signal);
    }
  }

  private async pollDelay(queueState: string | undefined, signal?: AbortSignal): Promise<void> {
    const delay = this.pollDelayMs[queueState ?? 'active'] ?? this.pollDelayMs.active ?? 0;
    if (delay > 0) await this.sleep(delay, signal);
  }

  private statusError(route: string, answer: HttpAnswer): RlBackendError {
    // Logged, stored and shown in /status: without the key, which some servers echo.
    const detail = withoutKeys(detailOf(answer), [this.apiKey]);
    const status = answer.status;
    if (status === 401 || status === 403) {
      return new RlBackendError(`${this.label} refused the API key (${status} on ${route}): ${detail}. Check rl.api_key.`, {
        code: 'rl_unauthorized',
        status,
        category: 'user',
      });
    }
    if (status === 402) {
      return new RlBackendError(`${this.label} reports a billing problem (402 on ${route}): ${detail}.`, { code: 'rl_billing', status, category: 'user' });
    }
    const category: RlFailureCategory = status >= 500 ? 'server' : status >= 400 && status !== 429 && status !== 408 ? 'user' : 'unknown';
    return new RlBackendError(`${this.label} answered ${status} on ${route}: ${detail}`, { code: `rl_http_${status}`, status, category });
  }

  private async send(route: string, body: unknown, signal?: AbortSignal, headers: Record<string, string> = {}): Promise<HttpAnswer> {
    const response = await fetch(`${this.baseUrl}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'X-API-Key': this.apiKey, 'User-Agent': USER_AGENT, ...headers },
      body: JSON.stringify(body),
      ...(signal ? { signal } : {}),
    });
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON (a proxy's error page): the status and text still say what happened
    }
    return { status: response.status, body: parsed, text };
  }
}

/** Why a request got no answer: fetch's own message ("fetch failed") hides the connection's (ECONNREFUSED, a reset). */
function failureOf(error: unknown, patienceMs: number | undefined): string {
  if (error instanceof Error && error.name === 'TimeoutError' && patienceMs !== undefined) return `no answer within ${Math.round(patienceMs / 1000)} s`;
  const cause = error instanceof Error ? error.cause : undefined;
  return cause instanceof Error && cause.message ? `${errorMessage(error)} (${cause.message})` : errorMessage(error);
}

function detailOf(answer: HttpAnswer): string {
  const body = answer.body as { detail?: unknown; error?: unknown; message?: unknown } | undefined;
  const detail = body?.detail ?? body?.error ?? body?.message;
  if (typeof detail === 'string') return detail;
  if (detail !== undefined) return JSON.stringify(detail).slice(0, 300);
  return answer.text.slice(0, 300) || '(no body)';
}
