import type { z } from 'zod';
import type { SessionEndedEvent, TurnRecordedEvent } from '../conversation/index.js';
import { errorMessage, MetaclawError } from '../errors.js';
import type { Logger } from '../logging/index.js';
import type { StoreHealth } from '../store/index.js';
import type { LearningBudget } from './budget.js';
import type { EnqueueOptions, Job } from './job-model.js';
import type { JobQueue } from './queue.js';
import { LlmPause, RecentErrors, ServingGate, type RecentError, type YieldTo } from './runner-parts.js';

export interface JobContext {
  readonly job: Job;
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** Records tokens an LLM call of this job spent (counted against the daily budget). */
  spend(tokens: number): void;
}

/** A learning worker: runs jobs of one kind, off the request path. */
export interface JobHandler {
  readonly kind: string;
  /** Spends LLM tokens, so it pauses when `learning.daily_token_budget` is reached. */
  readonly usesLlm: boolean;
  run(payload: unknown, context: JobContext): Promise<void>;
}

/** Decides which jobs a conversation event creates. Runs inside the recording transaction. */
export interface LearningTrigger {
  readonly name: string;
  onTurnRecorded?(event: TurnRecordedEvent, enqueue: Enqueue): void;
  onSessionEnded?(event: SessionEndedEvent, enqueue: Enqueue): void;
}

export type Enqueue = (kind: string, payload: unknown, options?: EnqueueOptions) => number | undefined;

/** A learning job's failure; `retryable` says whether running it again may help. */
export class LearningError extends MetaclawError {
  constructor(
    code: string,
    message: string,
    readonly retryable: boolean,
  ) {
    super(code, message);
  }
}

/** A failure that retrying cannot fix (bad input): the job goes straight to the dead-letter list. */
export class PermanentJobError extends LearningError {
  constructor(message: string) {
    super('job_permanent_failure', message, false);
  }
}

/**
 * A job's payload as its handler reads it. One that does not match (an older version's, a
 * hand-edited row) cannot run however often it is tried: dead-lettered at once, saying why.
 */
export function parsePayload<T>(schema: z.ZodType<T>, payload: unknown, kind: string): T {
  const parsed = schema.safeParse(payload);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new PermanentJobError(
    `${kind}: a payload this version cannot read (${issue?.path.join('.') || 'root'}: ${issue?.message}): ${JSON.stringify(payload)?.slice(0, 200)}`,
  );
}

/**
 * The learning LLM cannot be used as configured (no key, a key it rejects, a model it does not
 * have): no job of any kind that calls it can succeed until that changes, so instead of burning
 * each job's attempts, the runner pauses LLM jobs and tries again later (the job keeps its attempt).
 */
export class LearningMisconfiguredError extends LearningError {
  constructor(message: string) {
    super('learning_misconfigured', message, true);
  }
}

/**
 * The learning LLM answered 429 (or 503) with a `retry-after`: every LLM job would meet the same
 * limit, so they all wait that long (at most a day); this job's attempt counts, so a limit that
 * never lifts still ends on the dead-letter list.
 */
export class LearningRateLimitedError extends LearningError {
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super('learning_rate_limited', message, true);
  }
}

export interface RunnerOptions {
  concurrency: number;
  leaseMs?: number;
  pollMs?: number;
  /** A job running longer than this is aborted and retried later. */
  jobTimeoutMs?: number;
  /**
   * Serving comes first: while the proxy's activity counter keeps changing (requests arriving or
   * finishing within `quietMs`), jobs wait, but never more than `maxDeferMs` at a time.
   */
  yieldTo?: YieldTo;
  /** While the store cannot be written (a full disk), no job starts; outcomes that could not be saved are saved when it can. */
  storage?: StoreHealth;
}

export interface RunnerStats {
  running: number;
  completed: number;
  failed: number;
  deadLettered: number;
  triggerFailures: number;
  pausedReason: string | undefined;
  lastErrors: RecentError[];
}

/**
 * Runs learning jobs from the durable queue with bounded concurrency. Every failure is logged,
 * counted and retried with backoff; nothing here can fail a proxied request.
 */
export class LearningRunner {
  private readonly handlers = new Map<string, JobHandler>();
  private readonly running = new Map<number, AbortController>();
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly jobTimeoutMs: number;
  private timer: NodeJS.Timeout | undefined;
  private active = false;
  private readonly gate: ServingGate | undefined;
  private readonly stats: Omit<RunnerStats, 'running' | 'pausedReason' | 'lastErrors'> = { completed: 0, failed: 0, deadLettered: 0, triggerFailures: 0 };
  private readonly errors = new RecentErrors();
  /** Queue writes (a job done, failed or put back) that met a storage error, saved once the store can be written. */
  private unsaved: Array<() => void> = [];
  /** The learning LLM cannot be used as configured: LLM jobs wait, then one tries again. */
  private readonly llmPause = new LlmPause();

  constructor(
    private readonly queue: JobQueue,
    private readonly budget: LearningBudget,
    private readonly logger: Logger,
    private readonly options: RunnerOptions,
  ) {
    this.leaseMs = options.leaseMs ?? 10 * 60_000;
    this.pollMs = options.pollMs ?? 1_000;
    this.jobTimeoutMs = options.jobTimeoutMs ?? 30 * 60_000;
    options.storage?.onRecovered(() => this.storageRecovered());
    this.gate = options.yieldTo ? new ServingGate(options.yieldTo) : undefined;
  }

  register(handler: JobHandler): void {
    this.handlers.set(handler.kind, handler);
  }

  readonly enqueue: Enqueue = (kind, payload, options) => {
    const id = this.queue.enqueue(kind, payload, options);
    if (id !== undefined) this.wake();
    return id;
  };

  /** A learning trigger threw while a turn was recorded (on either thread): counted and logged. */
  triggerFailed(trigger: string, error: unknown): void {
    this.stats.triggerFailures++;
    this.logger.error({ err: error, trigger }, 'learning trigger failed; the turn is recorded without it');
  }

  start(): void {
    const recovered = this.queue.recoverAbandoned();
    if (recovered > 0) this.logger.info({ jobs: recovered }, 'resuming learning jobs left unfinished by a previous run');
    this.active = true;
    this.schedule(0);
  }

  /** Stops leasing; running jobs get `graceMs` to finish, then are aborted and put back in the queue. */
  async stop(graceMs = 5_000): Promise<void> {
    this.active = false;
    if (this.timer) clearTimeout(this.timer);
    const deadline = Date.now() + graceMs;
    while (this.running.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    for (const [jobId, controller] of this.running) {
      controller.abort(new Error('shutting down'));
      this.saveOrKeep(() => this.queue.release(jobId), false);
    }
  }

  snapshot(): RunnerStats {
    const storagePaused =
      this.options.storage && !this.options.storage.writable ? 'the store cannot be written (see store in /status); learning resumes by itself' : undefined;
    const llmPaused = this.llmPause.describe();
    return {
      ...this.stats,
      lastErrors: this.errors.list(),
      running: this.running.size,
      pausedReason: storagePaused ?? llmPaused ?? this.budget.pauseReason(),
    };
  }

  /** Runs ready jobs now instead of at the next poll. */
  wake(): void {
    if (this.active) this.schedule(0);
  }

  private schedule(delayMs: number): void {
    if (!this.active) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.tick(), delayMs);
    this.timer.unref();
  }

  private tick(): void {
    if (!this.active) return;
    const yieldTo = this.options.yieldTo;
    if (yieldTo && this.running.size === 0 && this.gate!.serving()) {
      this.schedule(yieldTo.quietMs);
      return;
    }
    // The store is being probed; the runner is woken when it can be written again.
    if (this.options.storage && !this.options.storage.writable) return;
    try {
      const kinds = this.leasableKinds();
      while (this.running.size < this.options.concurrency) {
        const job = this.queue.lease(kinds, this.leaseMs);
        if (!job) break;
        void this.execute(job);
      }
    } catch (error) {
      if (!this.options.storage?.report('learning', error)) this.logger.error({ err: error }, 'learning queue poll failed');
    }
    this.schedule(this.pollMs);
  }

  private leasableKinds(): Set<string> {
    const paused = this.budget.pauseReason() !== undefined || this.llmPause.active;
    const kinds = new Set<string>();
    for (const handler of this.handlers.values()) if (!paused || !handler.usesLlm) kinds.add(handler.kind);
    return kinds;
  }

  private async execute(job: Job): Promise<void> {
    const handler = this.handlers.get(job.kind)!;
    const controller = new AbortController();
    this.running.set(job.id, controller);
    let tokens = 0;
    const logger = this.logger.child({ job: job.id, kind: job.kind, attempt: job.attempts });
    const heartbeat = setInterval(() => this.saveOrKeep(() => this.queue.extendLease(job.id, this.leaseMs), false), Math.max(1_000, this.leaseMs / 3));
    heartbeat.unref();
    const timeout = setTimeout(() => controller.abort(new Error(`job exceeded ${Math.round(this.jobTimeoutMs / 1000)} s`)), this.jobTimeoutMs);
    timeout.unref();
    const context: JobContext = {
      job,
      signal: controller.signal,
      logger,
      spend: (spent) => {
        tokens += spent;
        this.budget.record(job.kind, spent);
      },
    };
    try {
      await handler.run(job.payload, context);
      if (handler.usesLlm) this.llmPause.clear();
      if (!this.running.has(job.id)) return; // released during shutdown
      this.saveOrKeep(() => this.queue.complete(job.id, tokens));
      this.stats.completed++;
      // Jobs without LLM calls (one raw-turn job per proxied turn) would double the log's volume.
      if (handler.usesLlm) logger.info({ tokens }, 'learning job done');
      else logger.debug({ tokens }, 'learning job done');
    } catch (error) {
      if (!this.running.has(job.id) || (!this.active && controller.signal.aborted)) return;
      const message = errorMessage(error);
      if (this.options.storage?.report('learning', error)) {
        // The job did not fail: the store did. It runs again, without losing an attempt, once the store can be written.
        this.saveOrKeep(() => this.queue.release(job.id));
        return;
      }
      if (error instanceof LearningMisconfiguredError) {
        this.saveOrKeep(() => this.queue.release(job.id));
        this.llmPause.misconfigured(message, logger);
        return;
      }
      if (error instanceof LearningRateLimitedError) this.llmPause.rateLimited(message, error.retryAfterMs, logger);
      const verdict = this.failJob(job, message, { retryable: !(error instanceof PermanentJobError), tokensUsed: tokens });
      this.stats.failed++;
      if (verdict === 'dead') this.stats.deadLettered++;
      this.errors.remember(job, message);
      logger.warn({ err: error, verdict }, verdict === 'dead' ? 'learning job failed for good (dead-letter list)' : 'learning job failed; will retry');
    } finally {
      clearInterval(heartbeat);
      clearTimeout(timeout);
      this.running.delete(job.id);
      if (this.active) this.schedule(0);
    }
  }

  /**
   * A queue write that may meet a full disk: such a failure pauses learning (StoreHealth) and the
   * write is kept to be saved once the store can be written (`keep`), instead of escaping a timer
   * or a job's promise and ending the process.
   */
  private saveOrKeep(write: () => void, keep = true): void {
    try {
      write();
    } catch (error) {
      if (!this.options.storage?.report('learning', error)) throw error;
      if (keep) this.unsaved.push(write);
    }
  }

  /** Records a failed job; if the store cannot take it now, it is recorded later and counts as a retry. */
  private failJob(job: Job, message: string, options: { retryable: boolean; tokensUsed: number }): 'retry' | 'dead' {
    const verdicts: Array<'retry' | 'dead'> = [];
    this.saveOrKeep(() => void verdicts.push(this.queue.fail(job, message, options)));
    return verdicts[0] ?? 'retry';
  }

  private storageRecovered(): void {
    const writes = this.unsaved;
    this.unsaved = [];
    for (const write of writes) this.saveOrKeep(write);
    this.wake();
  }
}
