import type { Logger } from '../logging/index.js';

/** What both runners (personal and team node) say of their jobs' failures in /status. */
export interface RecentError {
  at: string;
  kind: string;
  jobId: number;
  error: string;
}

/** The newest ten job failures, newest first. */
export class RecentErrors {
  private readonly errors: RecentError[] = [];

  remember(job: { id: number; kind: string }, error: string): void {
    this.errors.unshift({ at: new Date().toISOString(), kind: job.kind, jobId: job.id, error: error.slice(0, 300) });
    this.errors.length = Math.min(this.errors.length, 10);
  }

  list(): RecentError[] {
    return [...this.errors];
  }
}

/**
 * A key or model the upstream refuses: every LLM job would fail the same way. They wait (30 s,
 * doubling to 30 min while it lasts), then one tries again; the job keeps its attempt. Said once
 * per episode in the log, and in /status meanwhile.
 */
export class MisconfiguredPause {
  private state: { reason: string; until: number; delayMs: number } | undefined;

  pause(reason: string, logger: Logger): void {
    const delayMs = this.state ? Math.min(30 * 60_000, this.state.delayMs * 2) : 30_000;
    if (!this.state)
      logger.error({ reason }, 'the learning LLM cannot be used as configured; learning jobs that call it wait and retry later (see `metaclaw doctor`)');
    this.state = { reason: reason.slice(0, 300), until: Date.now() + delayMs, delayMs };
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
    return this.state
      ? `the learning LLM cannot be used as configured (${this.state.reason}); LLM jobs try again ${new Date(this.state.until).toISOString()}`
      : undefined;
  }
}
