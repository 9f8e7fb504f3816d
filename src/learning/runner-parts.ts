import type { Logger } from '../logging/index.js';

/** What both runners (personal and team node) say of their jobs' failures in /status. */
/** One of `learning.last_errors` in /status (snake_case, as every answer is). */
export interface RecentError {
  at: string;
  kind: string;
  job_id: number;
  error: string;
}

/** The newest ten job failures, newest first. */
export class RecentErrors {
  private readonly errors: RecentError[] = [];

  remember(job: { id: number; kind: string }, error: string): void {
    this.errors.unshift({ at: new Date().toISOString(), kind: job.kind, job_id: job.id, error: error.slice(0, 300) });
    this.errors.length = Math.min(this.errors.length, 10);
  }

  list(): RecentError[] {
    return [...this.errors];
  }
}

/** Longest wait a `retry-after` is taken at: a bogus value must not stop learning for good. */
const RATE_LIMIT_MAX_WAIT_MS = 24 * 3_600_000;

/**
 * Times when every LLM job would fail the same way, so they all wait (the job that found out keeps
 * its attempt, or not, as its runner decides):
 * - a key or model the upstream refuses: 30 s, doubling to 30 min while it lasts;
 * - a rate limit that says how long (`retry-after`): that long, at most a day.
 * Said once per episode in the log, and in /status meanwhile.
 */
export class LlmPause {
  private state: { cause: 'misconfigured' | 'rate_limited'; reason: string; until: number; delayMs: number } | undefined;

  misconfigured(reason: string, logger: Logger): void {
    const delayMs = this.state?.cause === 'misconfigured' ? Math.min(30 * 60_000, this.state.delayMs * 2) : 30_000;
    if (this.state?.cause !== 'misconfigured')
      logger.error({ reason }, 'the learning LLM cannot be used as configured; learning jobs that call it wait and retry later (see `metaclaw doctor`)');
    this.state = { cause: 'misconfigured', reason: reason.slice(0, 300), until: Date.now() + delayMs, delayMs };
  }

  rateLimited(reason: string, waitMs: number, logger: Logger): void {
    const delayMs = Math.min(RATE_LIMIT_MAX_WAIT_MS, Math.max(0, waitMs));
    const until = Date.now() + delayMs;
    if (this.state?.cause !== 'rate_limited')
      logger.warn({ reason, until: new Date(until).toISOString() }, 'the learning LLM is rate limited; learning jobs that call it wait as long as it asked');
    this.state = { cause: 'rate_limited', reason: reason.slice(0, 300), until, delayMs };
  }

  /** An LLM job went through: the episode is over. */
  clear(): void {
    this.state = undefined;
  }

  /** Whether LLM jobs wait now. */
  get active(): boolean {
    return this.state !== undefined && Date.now() < this.state.until;
  }

  /** The pause as /status says it (also once the wait is over, until a job goes through). */
  describe(): string | undefined {
    if (!this.state) return undefined;
    const at = new Date(this.state.until).toISOString();
    return this.state.cause === 'misconfigured'
      ? `the learning LLM cannot be used as configured (${this.state.reason}); LLM jobs try again ${at}`
      : `the learning LLM is rate limited (${this.state.reason}); LLM jobs wait until ${at}`;
  }
}

/** What serving tells learning: a counter that moves with every request, and how long to wait for quiet. */
export interface YieldTo {
  activity(): number;
  quietMs: number;
  maxDeferMs: number;
}

/**
 * Serving comes first: jobs wait while requests are being served (the counter moved within the
 * last `quietMs`), until they have waited `maxDeferMs`: then one round runs, so learning keeps up
 * under sustained load too. Quiet is measured from the last move, not from the last look: a look
 * right after a job (a millisecond later) would otherwise find nothing new and start the next job,
 * and jobs then ran back to back through every short gap between requests, each in the way of the
 * next request.
 */
export class ServingGate {
  private lastActivity = Number.NaN;
  /** When the counter was last seen to move (as seen by a look: never earlier than the move). */
  private lastActivityChange = 0;
  private deferredSince: number | undefined;

  constructor(private readonly yieldTo: YieldTo) {}

  /** True while jobs should wait for serving. */
  serving(): boolean {
    const activity = this.yieldTo.activity();
    const now = Date.now();
    if (activity !== this.lastActivity) {
      this.lastActivity = activity;
      this.lastActivityChange = now;
    }
    if (now - this.lastActivityChange >= this.yieldTo.quietMs) {
      this.deferredSince = undefined;
      return false;
    }
    this.deferredSince ??= now;
    if (now - this.deferredSince < this.yieldTo.maxDeferMs) return true;
    this.deferredSince = undefined;
    return false;
  }
}
