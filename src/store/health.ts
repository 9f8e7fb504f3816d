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

/** Another connection holds the lock (a `sqlite3` shell, a backup, the turn writer): it is usually let go within moments. */
function isBusyCode(code: string): boolean {
  return code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED');
}

/** The first probe after a busy error: most locks are held for a few hundred milliseconds. */
const BUSY_FIRST_PROBE_MS = 50;
/**
 * The longest wait between probes while busy. A busy probe gives up at once (see the probe in
 * runtime/app.ts), so probing often costs little, and learning resumes within this long of the
 * lock's release however long it was held.
 */
const BUSY_LONGEST_PROBE_MS = 500;

/** Who met the failure: each is paused while the store cannot be written. */
export type StorageArea = 'recording' | 'learning' | 'maintenance' | 'api';

export interface StoreHealthStatus {
  writable: boolean;
  paused_since: string | null;
  /** Storage errors met since start (every failed write counts). */
  errors: number;
  /** Times recording and learning paused and later resumed. */
  recoveries: number;
  /** Paused only because another connection holds the lock (see `StoreHealth.busy`): what to end is that connection, not a full disk. */
  busy: boolean;
  last_error: { at: string; area: StorageArea; code: string; message: string } | null;
}

/**
 * Whether the store can be written. The first storage error pauses recording and learning (their
 * owners ask `writable` before writing), logs once, and starts a probe; when a probe write works,
 * everything resumes by itself and the waiting work is written. One episode logs two lines, not
 * one per failed write: a full disk under load would otherwise fill the log (if it still could).
 * A full disk is probed every `probeIntervalMs`; a lock held by another connection (SQLITE_BUSY,
 * SQLITE_LOCKED) after 50 ms, then twice as long each time up to 500 ms, so learning resumes within
 * moments of the lock's release, not up to 2 s later.
 */
export class StoreHealth {
  private pausedSince: number | undefined;
  private errorCount = 0;
  private recoveryCount = 0;
  private lastError: StoreHealthStatus['last_error'] = null;
  private probeTimer: NodeJS.Timeout | undefined;
  private probing = false;
  /** Every storage error of this pause was a lock held by another connection. */
  private pausedBusy = false;
  private stopped = false;
  /** Wait before the next probe: grows from 50 ms while busy, always the full interval otherwise. */
  private nextProbeMs: number;
  private readonly recoveredCallbacks: Array<() => void> = [];

  constructor(
    private readonly logger: Logger,
    /** A real write that fails while the store cannot be written (set by whoever composes the store). */
    private probe: () => void | Promise<void> = () => undefined,
    private readonly probeIntervalMs = 2_000,
  ) {
    this.nextProbeMs = probeIntervalMs;
  }

  get writable(): boolean {
    return this.pausedSince === undefined;
  }

  /**
   * Whether the store is paused only because another connection holds its lock (every storage
   * error of this pause was SQLITE_BUSY or SQLITE_LOCKED). The probe then skips work that would
   * only wait on the same lock.
   */
  get busy(): boolean {
    return this.pausedSince !== undefined && this.pausedBusy;
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
    if (this.pausedSince !== undefined) {
      this.noteErrorWhilePaused(area, code, message);
      return true;
    }
    this.pausedSince = Date.now();
    this.pausedBusy = isBusyCode(code);
    if (this.pausedBusy) {
      // A lock is usually let go within moments: probing at the fixed interval paused learning for
      // 2 s or more after a lock of a few hundred milliseconds.
      this.nextProbeMs = Math.min(BUSY_FIRST_PROBE_MS, this.probeIntervalMs);
      const line = `MetaClaw's store is busy (locked by another connection: ${code}: ${message}); serving goes on, recording and learning are paused and resume by themselves as soon as the lock is let go`;
      logOrStderr(this.logger, 'warn', { area, code, err: message }, line);
    } else {
      this.logCannotWrite(area, code, message);
    }
    this.scheduleProbe();
    return true;
  }

  status(): StoreHealthStatus {
    return {
      writable: this.writable,
      paused_since: this.pausedSince === undefined ? null : new Date(this.pausedSince).toISOString(),
      errors: this.errorCount,
      recoveries: this.recoveryCount,
      busy: this.busy,
      last_error: this.lastError,
    };
  }

  /** At shutdown: no probe runs after this, not even one scheduled by a probe still running. */
  stop(): void {
    this.stopped = true;
    this.cancelProbe();
  }

  private cancelProbe(): void {
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
      const code = storageErrorCode(error);
      const message = error instanceof Error ? error.message : String(error);
      if (code === undefined) logOrStderr(this.logger, 'warn', { err: message }, 'store probe failed');
      else this.noteErrorWhilePaused('recording', code, message);
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
    this.pausedBusy = false;
    this.nextProbeMs = this.probeIntervalMs;
    this.recoveryCount++;
    this.cancelProbe();
    logOrStderr(this.logger, 'info', { paused_ms: pausedMs }, 'the store can be written again; recording and learning resume');
    for (const callback of this.recoveredCallbacks) {
      try {
        callback();
      } catch (error) {
        this.report('recording', error);
      }
    }
  }

  /**
   * A storage error while already paused (a failed write elsewhere, or the probe's own). One that
   * is not a lock (the disk filled meanwhile) ends the quick probing and is logged as such, once.
   */
  private noteErrorWhilePaused(area: StorageArea, code: string, message: string): void {
    if (!this.pausedBusy || isBusyCode(code)) return;
    this.pausedBusy = false;
    this.nextProbeMs = this.probeIntervalMs;
    this.logCannotWrite(area, code, message);
  }

  private logCannotWrite(area: StorageArea, code: string, message: string): void {
    const line = `MetaClaw cannot write its store (${code}: ${message}); serving goes on, recording and learning are paused and resume by themselves once a write works again`;
    logOrStderr(this.logger, 'error', { area, code, err: message }, line);
  }

  private scheduleProbe(): void {
    if (this.probeTimer || this.stopped) return;
    const delayMs = this.nextProbeMs;
    // While busy: 50, 100, 200, 400 ms, then every 500 ms; otherwise the normal interval.
    this.nextProbeMs = Math.min(delayMs * 2, this.pausedBusy ? Math.min(BUSY_LONGEST_PROBE_MS, this.probeIntervalMs) : this.probeIntervalMs);
    this.probeTimer = setTimeout(() => {
      this.probeTimer = undefined;
      void this.probeNow().then((ok) => {
        if (!ok && !this.writable) this.scheduleProbe();
      });
    }, delayMs);
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
