import { errorMessage, MetaclawError } from '../errors.js';
import type { Logger } from '../logging/index.js';

/**
 * A backend (or, on a team node, the team's run as its trainer) that could not be opened and is
 * tried again: what /status shows of it, and `metaclaw status` and `rl status` say.
 */
export interface OpeningFailure {
  /** the last try's error (the backend's transport strips its API key from what a service answers) */
  error: string;
  /** when the first of these failed tries came */
  since: string;
  /** failed tries in a row */
  attempts: number;
  /** when the next try may run */
  retry_at: string;
}

/** The longest wait before opening a failed backend again. */
export const MAX_REOPEN_DELAY_MS = 5 * 60_000;

/**
 * When a training backend that could not be opened is tried again, on one proxy (`RlEngine`) and on
 * a team node (its sampling session, and the team's run as its trainer): after `firstMs`, twice as
 * long after each further failure, at most MAX_REOPEN_DELAY_MS. The failure is logged when it
 * starts and when its reason changes, not at every try (a service down for a day would otherwise
 * write a line every five minutes), and the opening that ends it is logged with the count.
 */
export class ReopenSchedule {
  private failures = 0;
  private reason: string | undefined;
  private next = 0;
  /** the last failure's message and when the failures began, for `report` */
  private lastError = '';
  private since = 0;

  constructor(
    private readonly firstMs: number,
    private readonly logger: Logger,
    /** the log line of a failure (the reason and the wait go in its fields) */
    private readonly message: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** When the next try may run (0 before any failure). */
  get nextAt(): number {
    return this.next;
  }

  /** True while the wait after a failure runs. */
  waiting(): boolean {
    return this.now() < this.next;
  }

  /**
   * A try failed: returns the wait before the next one, in ms. Failures of one kind (the error's
   * code, else its message) are the same reason, whatever their details (a reset connection, one
   * that timed out).
   */
  failed(error: unknown, fields: Record<string, unknown> = {}): number {
    const delay = Math.min(this.firstMs * 2 ** this.failures, MAX_REOPEN_DELAY_MS);
    if (this.failures === 0) this.since = this.now();
    this.failures += 1;
    this.lastError = errorMessage(error);
    this.next = this.now() + delay;
    const reason = error instanceof MetaclawError ? error.code : errorMessage(error);
    const details = { ...fields, err: this.lastError, failures: this.failures, retry_in_s: Math.round(delay / 1000) };
    if (reason !== this.reason) this.logger.error(details, this.message);
    else this.logger.debug(details, `${this.message} (again, for the same reason)`);
    this.reason = reason;
    return delay;
  }

  /** The failures since the last opening, or null when the last try opened (or none ran yet). */
  report(): OpeningFailure | null {
    if (this.failures === 0) return null;
    return { error: this.lastError, since: new Date(this.since).toISOString(), attempts: this.failures, retry_at: new Date(this.next).toISOString() };
  }

  /** The backend opened: the next failure starts the count (and its log) again. */
  opened(): void {
    if (this.failures > 0) this.logger.info({ failures: this.failures }, 'rl: the training backend opened after failing to');
    this.failures = 0;
    this.reason = undefined;
    this.next = 0;
  }
}
