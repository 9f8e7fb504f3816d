import { statSync } from 'node:fs';
import Database from 'better-sqlite3';

/** How often and when the WAL is checkpointed (store/checkpointer.ts sets them). */
export interface CheckpointSettings {
  databasePath: string;
  intervalMs: number;
  /** A WAL file past this size is checkpointed and truncated at once (bytes). */
  walLimitBytes: number;
}

/**
 * What a checkpoint loop reports to the proxy's thread, which logs it: the WAL cut back, a
 * truncation another connection stopped (`busy`), or a checkpoint that failed; `retryInMs` is how
 * long until the next truncation is tried.
 */
export type CheckpointEvent =
  | { type: 'error'; message: string; code?: unknown; retryInMs: number }
  | { type: 'truncated'; walBytes: number }
  | { type: 'busy'; walBytes: number; retryInMs: number };

/** How often the WAL's size is looked at: a stat costs microseconds, a checkpoint milliseconds. */
const WATCH_MS = 250;
/**
 * After a truncation that could not finish (a reader kept an older snapshot, or a writer the lock,
 * past busy_timeout) or failed: the wait before the next one, doubled each time up to the longest.
 * Each try holds this thread (the turn writer's) and the write lock for up to busy_timeout: tried
 * every 250 ms while a `sqlite3` shell or a backup kept a read open, it recorded one turn a second
 * instead of some thirty, and it cannot cut the WAL until that reader ends anyway.
 */
const RETRY_FIRST_MS = 1_000;
const RETRY_LONGEST_MS = 30_000;

/**
 * Copies the WAL back into the database file, on a connection of its own, from whichever worker
 * thread runs it (the turn writer's, or a thread of its own when there is no turn writer). A
 * checkpoint reads and writes megabytes and fsyncs; on the proxy's own thread it held requests up
 * for 70–110 ms each time. Returns how to stop it (the connection is closed).
 */
export function runWalCheckpoints(settings: CheckpointSettings, report: (event: CheckpointEvent) => void): () => void {
  const { databasePath, intervalMs, walLimitBytes } = settings;
  const walPath = `${databasePath}-wal`;
  const db = new Database(databasePath, { fileMustExist: true });
  db.pragma('busy_timeout = 1000');
  let lastPassive = Date.now();
  /** No truncation is tried before this time. */
  let truncateAfter = 0;
  /** The last wait before trying again (0: the last truncation worked). */
  let retryMs = 0;
  const backOff = (now: number): number => {
    retryMs = Math.min(RETRY_LONGEST_MS, retryMs === 0 ? RETRY_FIRST_MS : retryMs * 2);
    truncateAfter = now + retryMs;
    return retryMs;
  };

  /**
   * A PASSIVE checkpoint copies what it can without waiting for anyone, but under steady traffic
   * some reader always holds an older snapshot, so the WAL never starts over and only grows (457 MB
   * for a 6.7 MB database after 2,000 requests in 2.5 s). Past the limit a TRUNCATE checkpoint waits
   * for those readers (new readers read the database file meanwhile), copies everything and cuts
   * the file to zero: the WAL stays within the limit and its disk space is given back.
   */
  const tick = (): void => {
    const now = Date.now();
    let walBytes: number;
    try {
      walBytes = statSync(walPath).size;
    } catch {
      return; // no WAL file: nothing to checkpoint
    }
    try {
      if (walBytes > walLimitBytes && now >= truncateAfter) {
        // Copied first without blocking anyone, so the TRUNCATE below (which blocks writers while it
        // waits for readers and copies) has less left to do. Writes refused as busy meanwhile went
        // from one per truncation to one in four under 60 KB agent traffic; the turn writer retries those.
        db.pragma('wal_checkpoint(PASSIVE)');
        const [result] = db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number; log: number; checkpointed: number }>;
        lastPassive = Date.now();
        // Busy: the WAL was not cut (SQLite answers so rather than throwing).
        if ((result?.busy ?? 0) !== 0) report({ type: 'busy', walBytes, retryInMs: backOff(lastPassive) });
        else {
          retryMs = 0;
          report({ type: 'truncated', walBytes });
        }
      } else if (now - lastPassive >= intervalMs) {
        db.pragma('wal_checkpoint(PASSIVE)');
        lastPassive = now;
      }
    } catch (error) {
      // Not tried again at the next look: over the limit, a failing truncation (a full disk) was tried and logged four times a second.
      lastPassive = Date.now();
      const retryInMs = walBytes > walLimitBytes ? backOff(lastPassive) : intervalMs;
      report({ type: 'error', message: error instanceof Error ? error.message : String(error), code: (error as { code?: unknown }).code, retryInMs });
    }
  };

  const timer = setInterval(tick, Math.min(WATCH_MS, intervalMs));
  return () => {
    clearInterval(timer);
    db.close();
  };
}
