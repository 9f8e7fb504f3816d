import type { Logger } from '../logging/index.js';

/**
 * Error codes that mean "the store cannot be written right now" rather than "this write is wrong":
 * a full disk or quota, an I/O error, a lock held too long, a read-only file system. Serving goes
 * on through all of them; recording and learning wait until a write works again.
 */
const STORAGE_CODE_PREFIXES = ['SQLITE_FULL', 'SQLITE_IOERR', 'SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_READONLY', 'SQLITE_CANTOPEN', 'SQLITE_PROTOCOL'];
const STORAGE_ERRNO_CODES = new Set(['ENOSPC', 'EDQUOT', 'EIO', 'EROFS', 'EMFILE', 'ENFILE']);

export function storageErrorCode(error: unknown): string | undefined {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (typeof code !== 'string') return undefined;
  if (STORAGE_ERRNO_CODES.has(code) || STORAGE_CODE_PREFIXES.some((prefix) => code.startsWith(prefix))) return code;
  return undefined;
}

export function isStorageError(error: unknown): boolean {
  return storageErrorCode(error) !== undefined;
}

/** Who met the failure: each is paused while the store cannot be written. */
export type StorageArea = 'recording' | 'learning' | 'maintenance' | 'api';

export interface StoreHealthStatus {
  writable: boolean;
  paused_since: string | null;
  /** Storage errors met since start (every failed write counts). */
  errors: number;
  /** Times recording and learning paused and later resumed. */
  recoveries: number;
  last_error: { at: string; area: StorageArea; code: string; message: string } | null;
}

/**
 * Whether the store can be written. The first storage error pauses recording and learning (their
 * owners ask `writable` before writing), logs once, and starts a probe; when a probe write works,
 * everything resumes by itself and the waiting work is written. One episode logs two lines, not
 * one per failed write: a full disk under load would otherwise fill the log (if it still could).
 */
export class StoreHealth {
  private pausedSince: number | undefined;
  private errorCount = 0;
  private recoveryCount = 0;
  private lastError: StoreHealthStatus['last_error'] = null;
  private probeTimer: NodeJS.Timeout | undefined;
  private probing = false;
  private readonly recoveredCallbacks: Array<() => void> = [];

  constructor(
    private readonly logger: Logger,
    /** A real write that fails while the store cannot be written (set by whoever composes the store). */
    private probe: () => void | Promise<void> = () => undefined,
    private readonly probeIntervalMs = 2_000,
  ) {}

  get writable(): boolean {
    return this.pausedSince === undefined;
  }

  setProbe(probe: () => void | Promise<void>): void {
    this.probe = probe;
  }

  /** Runs once each time the store becomes writable again. */
  onRecovered(callback: () => void): void {
    this.recoveredCallbacks.push(callback);
  }

  /**
   * Reports a failed write. A storage error pauses recording and learning and returns true (the
   * caller keeps its work for later); any other error returns false and is the caller's to handle.
   */
  report(area: StorageArea, error: unknown): boolean {
    const code = storageErrorCode(error);
    if (code === undefined) return false;
    this.errorCount++;
    const message = error instanceof Error ? error.message : String(error);
    this.lastError = { at: new Date().toISOString(), area, code, message: message.slice(0, 300) };
    if (this.pausedSince !== undefined) return true;
    this.pausedSince = Date.now();
    const line = `MetaClaw cannot write its store (${code}: ${message}); serving goes on, recording and learning are paused and resume by themselves once a write works again`;
    logOrStderr(this.logger, 'error', { area, code, err: message }, line);
    this.scheduleProbe();
    return true;
  }

  status(): StoreHealthStatus {
    return {
      writable: this.writable,
      paused_since: this.pausedSince === undefined ? null : new Date(this.pausedSince).toISOString(),
      errors: this.errorCount,
      recoveries: this.recoveryCount,
      last_error: this.lastError,
    };
  }

  stop(): void {
    if (this.probeTimer) clearTimeout(this.probeTimer);
    this.probeTimer = undefined;
  }

  /** Tries a write now instead of at the next probe (used by tests and after space was freed by us). */
  async probeNow(): Promise<boolean> {
    if (this.writable) return true;
    if (this.probing) return false;
    this.probing = true;
    try {
      await this.probe();
    } catch (error) {
      if (!isStorageError(error)) logOrStderr(this.logger, 'warn', { err: error instanceof Error ? error.message : String(error) }, 'store probe failed');
      return false;
    } finally {
      this.probing = false;
    }
    this.recover();
    return true;
  }

  private recover(): void {
    if (this.pausedSince === undefined) return;
    const pausedMs = Date.now() - this.pausedSince;
    this.pausedSince = undefined;
    this.recoveryCount++;
    this.stop();
    logOrStderr(this.logger, 'info', { paused_ms: pausedMs }, 'the store can be written again; recording and learning resume');
    for (const callback of this.recoveredCallbacks) {
      try {
        callback();
      } catch (error) {
        this.report('recording', error);
      }
    }
  }

  private scheduleProbe(): void {
    if (this.probeTimer) return;
    this.probeTimer = setTimeout(() => {
      this.probeTimer = undefined;
      void this.probeNow().then((ok) => {
        if (!ok && !this.writable) this.scheduleProbe();
      });
    }, this.probeIntervalMs);
    this.probeTimer.unref();
  }
}

/** The log file may sit on the very disk that is full: what cannot be logged goes to stderr. */
function logOrStderr(logger: Logger, level: 'error' | 'warn' | 'info', fields: Record<string, unknown>, message: string): void {
  try {
    logger[level](fields, message);
  } catch {
    process.stderr.write(`metaclaw: ${message}\n`);
  }
}
