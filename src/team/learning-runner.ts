import { errorMessage } from '../errors.js';
import { LearningMisconfiguredError, LearningRateLimitedError, PermanentJobError, type JobContext, type TeamJobHandler } from '../learning/index.js';
import { LlmPause, RecentErrors, ServingGate, type RecentError, type YieldTo } from '../learning/runner-parts.js';
import type { Logger } from '../logging/index.js';
import type { BudgetReservation, LeasedJob, PgJobQueue, PgLearningBudget } from '../store/postgres/index.js';

export interface TeamRunnerOptions {
  concurrency: number;
  leaseMs?: number;
  pollMs?: number;
  /** A job running longer than this is aborted and retried later. */
  jobTimeoutMs?: number;
  /** Tokens set aside in the team's budget before an LLM job runs (settled with what it spent). */
  reserveTokens?: number;
  /** True while the store is out of reach: no job is leased (the recorder knows first). */
  storeDown?: () => boolean;
  /** Whether an error means the store could not be reached (the job did not fail: the store did). */
  isOutage: (error: unknown) => boolean;
  /** Serving comes first: while this node serves requests, jobs wait (as on one proxy). */
  yieldTo?: YieldTo;
}

export interface TeamRunnerStats {
  running: number;
  completed: number;
  duplicates: number;
  leasesLost: number;
  failed: number;
  deadLettered: number;
  pausedReason: string | undefined;
  lastErrors: RecentError[];
}

/**
 * Runs the team store's learning jobs on this node: any node leases any job (PgJobQueue's leases,
 * fencing and effects), so the team's learning goes on while one node is left. A job's handler
 * reads and calls the LLM, then its writes (the effect) are made in the transaction that completes
 * the job: once per job, and not at all by a node that lost the lease meanwhile — its work is
 * thrown away, and the node that holds the job now does it again.
 *
 * The daily token budget is the team's: an LLM job first reserves `reserveTokens` of it, and the
 * reservation is settled with what the job spent, so nodes never together spend past the budget by
 * more than one job each.
 */
export class TeamLearningRunner {
  private readonly handlers = new Map<string, TeamJobHandler>();
  private readonly running = new Map<number, { job: LeasedJob; controller: AbortController }>();
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly jobTimeoutMs: number;
  private readonly reserveTokens: number;
  private timer: NodeJS.Timeout | undefined;
  private active = false;
  private polling = false;
  private budgetPause: { reason: string; until: number } | undefined;
  private readonly llmPause = new LlmPause();
  private readonly errors = new RecentErrors();
  private readonly gate: ServingGate | undefined;
  private pollFailure: string | undefined;
  private readonly stats = { completed: 0, duplicates: 0, leasesLost: 0, failed: 0, deadLettered: 0 };

  constructor(
    private readonly queue: PgJobQueue,
    private readonly budget: PgLearningBudget,
    private readonly logger: Logger,
    private readonly options: TeamRunnerOptions,
  ) {
    this.leaseMs = options.leaseMs ?? 5 * 60_000;
    this.pollMs = options.pollMs ?? 1_000;
    this.jobTimeoutMs = options.jobTimeoutMs ?? 30 * 60_000;
    this.reserveTokens = options.reserveTokens ?? 8_000;
    this.gate = options.yieldTo ? new ServingGate(options.yieldTo) : undefined;
  }

  register(handler: TeamJobHandler): void {
    this.handlers.set(handler.kind, handler);
  }

  /** The job kinds this node runs. */
  kinds(): string[] {
    return [...this.handlers.keys()].sort();
  }

  start(): void {
    this.active = true;
    this.schedule(0);
  }

  /** Stops leasing; running jobs get `graceMs` to finish, then are aborted and given back to the queue. */
  async stop(graceMs = 5_000): Promise<void> {
    this.active = false;
    if (this.timer) clearTimeout(this.timer);
    const deadline = Date.now() + graceMs;
    while (this.running.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    await Promise.all(
      [...this.running.values()].map(async ({ job, controller }) => {
        controller.abort(new Error('shutting down'));
        // If the store cannot be reached, the lease runs out and another node takes the job.
        await this.queue.release(job).catch(() => false);
      }),
    );
    this.running.clear();
  }

  /** Runs ready jobs now instead of at the next poll. */
  wake(): void {
    if (this.active) this.schedule(0);
  }

  snapshot(): TeamRunnerStats {
    const now = Date.now();
    const paused =
      (this.llmPause.active ? this.llmPause.describe() : undefined) ??
      (this.budgetPause && now < this.budgetPause.until ? this.budgetPause.reason : undefined) ??
      this.pollFailure;
    return { ...this.stats, lastErrors: this.errors.list(), running: this.running.size, pausedReason: paused };
  }

  private schedule(delayMs: number): void {
    if (!this.active) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.poll(), delayMs);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    if (!this.active || this.polling) return;
    if (this.running.size === 0 && this.gate?.serving() && this.options.yieldTo) {
      this.schedule(this.options.yieldTo.quietMs);
      return;
    }
    this.polling = true;
    try {
      if (!this.options.storeDown?.()) {
        const kinds = await this.leasableKinds();
        while (this.active && this.running.size < this.options.concurrency) {
          const job = await this.queue.lease(kinds, this.leaseMs);
          if (!job) break;
          void this.execute(job);
        }
      }
      this.pollFailure = undefined;
    } catch (error) {
      // Said once per episode: an outage is also in /status (store.degraded).
      if (!this.pollFailure) this.logger.warn({ err: error }, 'learning: the team queue cannot be read; trying again');
      this.pollFailure = `the team queue cannot be read: ${errorMessage(error).slice(0, 200)}`;
    } finally {
      this.polling = false;
      this.schedule(this.pollMs);
    }
  }

  /** The kinds this node runs now: LLM jobs wait while the team's budget is spent, or the learning LLM is misconfigured or rate limited. */
  private async leasableKinds(): Promise<Set<string>> {
    const now = Date.now();
    let llmPaused = this.llmPause.active;
    if (!llmPaused && this.budgetPause && now < this.budgetPause.until) llmPaused = true;
    if (!llmPaused && this.budget.dailyLimit > 0 && [...this.handlers.values()].some((handler) => handler.usesLlm)) {
      const reason = await this.budget.pauseReason();
      if (reason) {
        this.budgetPause = { reason, until: now + 60_000 };
        llmPaused = true;
      }
    }
    const kinds = new Set<string>();
    for (const handler of this.handlers.values()) if (!llmPaused || !handler.usesLlm) kinds.add(handler.kind);
    return kinds;
  }

  private async execute(job: LeasedJob): Promise<void> {
    const handler = this.handlers.get(job.kind)!;
    const controller = new AbortController();
    this.running.set(job.id, { job, controller });
    const logger = this.logger.child({ job: job.id, kind: job.kind, attempt: job.attempts });
    let tokens = 0;
    let reservation: BudgetReservation | undefined;
    const heartbeat = setInterval(() => void this.heartbeat(job, controller, logger), Math.max(1_000, this.leaseMs / 3));
    heartbeat.unref();
    const timeout = setTimeout(() => controller.abort(new Error(`job exceeded ${Math.round(this.jobTimeoutMs / 1000)} s`)), this.jobTimeoutMs);
    timeout.unref();
    const context: JobContext = { job, signal: controller.signal, logger, spend: (spent) => void (tokens += spent) };
    try {
      if (handler.usesLlm) {
        reservation = await this.budget.reserve(job.kind, this.reserveTokens, { ttlMs: this.jobTimeoutMs + 60_000 });
        if (!reservation) {
          this.budgetPause = { reason: 'the team has spent its daily learning token budget (learning.daily_token_budget)', until: Date.now() + 60_000 };
          await this.queue.release(job);
          return;
        }
      }
      const effect = await handler.run(job.payload, context);
      if (controller.signal.aborted) throw controller.signal.reason ?? new Error('aborted');
      const outcome = await this.queue.complete(job, { tokensUsed: tokens, ...(effect ? { effect } : {}) });
      if (handler.usesLlm) this.llmPause.clear();
      if (outcome === 'lease_lost') {
        this.stats.leasesLost++;
        logger.warn('learning job: the lease ran out before it finished; another node runs it, nothing of this run was written');
      } else if (outcome === 'duplicate') this.stats.duplicates++;
      else this.stats.completed++;
      if (handler.usesLlm) logger.info({ tokens, outcome }, 'learning job done');
      else logger.debug({ tokens, outcome }, 'learning job done');
    } catch (error) {
      await this.failed(job, handler, error, tokens, logger, controller);
    } finally {
      clearInterval(heartbeat);
      clearTimeout(timeout);
      this.running.delete(job.id);
      if (reservation)
        await this.budget.settle(reservation, tokens, tokens > 0 ? 1 : 0).catch((error) => logger.warn({ err: error }, 'learning: spend not settled'));
      if (this.active) this.schedule(0);
    }
  }

  private async failed(job: LeasedJob, handler: TeamJobHandler, error: unknown, tokens: number, logger: Logger, controller: AbortController): Promise<void> {
    if (!this.active && controller.signal.aborted) return; // stop() gives it back
    const message = errorMessage(error);
    try {
      if (this.options.isOutage(error)) {
        // The store failed, not the job: it runs again, without losing an attempt, once the store is back.
        await this.queue.release(job);
        return;
      }
      if (error instanceof LearningMisconfiguredError) {
        await this.queue.release(job);
        this.llmPause.misconfigured(message, logger);
        return;
      }
      if (error instanceof LearningRateLimitedError) this.llmPause.rateLimited(message, error.retryAfterMs, logger);
      const verdict = await this.queue.fail(job, message, { retryable: !(error instanceof PermanentJobError), tokensUsed: tokens });
      if (verdict === 'lease_lost') {
        this.stats.leasesLost++;
        return;
      }
      this.stats.failed++;
      if (verdict === 'dead') this.stats.deadLettered++;
      this.errors.remember(job, message);
      logger.warn(
        { err: error, verdict, handler: handler.kind },
        verdict === 'dead' ? 'learning job failed for good (dead-letter list)' : 'learning job failed; will retry',
      );
    } catch (queueError) {
      // The failure could not be recorded (the store went away): the lease runs out and the job runs again.
      logger.warn({ err: queueError, jobError: message }, 'learning job failed and the team queue could not record it; it runs again after its lease');
    }
  }

  /** Pushes the lease on; a lease another node took over stops the work (its result would not be written anyway). */
  private async heartbeat(job: LeasedJob, controller: AbortController, logger: Logger): Promise<void> {
    try {
      if (!(await this.queue.extendLease(job, this.leaseMs))) {
        logger.warn('learning job: lease lost (another node holds the job now); stopping this run');
        controller.abort(new Error('lease lost'));
      }
    } catch {
      // The store is out of reach: the job goes on; completing it will tell whether the lease held.
    }
  }
}
