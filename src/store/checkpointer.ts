import { Worker } from 'node:worker_threads';
import type { Logger } from '../logging/index.js';
import type { Db } from './database.js';
import type { CheckpointEvent, CheckpointSettings } from './wal-checkpoints.js';

/** The WAL file is kept under this size (the soak in bench/ checks it stays within 64 MB at full load). */
export const WAL_LIMIT_BYTES = 32 * 1024 * 1024;

/** What `/status` says of the checkpoints (`store.checkpoints`). */
export interface CheckpointStatus {
  /** Checkpoints that failed (an I/O error, say) since start; each is logged at warn and retried. */
  failures: number;
  /** The WAL is over its limit and another connection keeps it from being truncated (warned once). */
  blocked: boolean;
  /** The WAL's size when last looked at past its limit; null before it first passed it. */
  wal_bytes: number | null;
  /** The last failure's message, or null. */
  last_error: string | null;
}

/**
 * Keeps WAL checkpoints off the request path. SQLite's automatic checkpoint runs inside whichever
 * commit crosses 1,000 pages and fsyncs there (a 30-turn batch write went from ~1 ms to ~28 ms when
 * it hit one), and checkpointing on the proxy's thread when it looked idle still held up the next
 * request for 70–110 ms once the WAL was large. So the proxy's connection never checkpoints while
 * serving: a worker thread (the turn writer's) does it every `intervalMs` on its own connection, and the proxy
 * truncates the WAL once at shutdown. Every 5 s rather than every 0.5 s: a page rewritten by many
 * commits in between is copied once, and the copying (with its fsync) took a share of the two
 * cores that showed in request latency. A crash loses nothing either way: the WAL is replayed.
 */
export class WalCheckpointer {
  private worker: Worker | undefined;
  private stopped = false;
  /** Truncations in a row that another connection stopped. */
  private busyTries = 0;
  private failures = 0;
  private walBytes: number | null = null;
  private lastError: string | null = null;

  constructor(
    private readonly db: Db,
    private readonly databasePath: string,
    private readonly logger: Logger,
    private readonly options = { intervalMs: 5_000, walLimitBytes: WAL_LIMIT_BYTES },
  ) {}

  /** What a thread running the checkpoints needs (store/wal-checkpoints.ts). */
  get settings(): CheckpointSettings {
    return { databasePath: this.databasePath, intervalMs: this.options.intervalMs, walLimitBytes: this.options.walLimitBytes };
  }

  /**
   * The turn writer's thread runs the checkpoints (runtime/turn-writer-worker.ts): a worker thread
   * of their own cost some 15 MiB of memory (its own V8 heap and Node environment) for a pragma
   * now and then. The proxy's connection stops checkpointing all the same.
   */
  handOff(): void {
    this.db.pragma('wal_autocheckpoint = 0');
  }

  /** Checkpoints on a worker thread of their own (when no turn writer runs them, or it died). */
  start(): void {
    this.db.pragma('wal_autocheckpoint = 0');
    if (this.worker || this.stopped) return;
    // Compiled, this module sits beside checkpoint-worker.js; run from source (tsx), beside the .ts.
    const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
    const worker = new Worker(new URL(`./checkpoint-worker${extension}`, import.meta.url), {
      workerData: this.settings,
      // It runs one pragma now and then: a small heap keeps its memory small.
      resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 2 },
    });
    worker.on('message', (event: CheckpointEvent) => this.report(event));
    worker.on('error', (error) => {
      // Serving goes on without it: the WAL just grows until the next start checkpoints it.
      this.logger.error({ err: error }, 'the WAL checkpoint worker stopped');
      this.failures++;
      this.lastError = `the checkpoint worker stopped: ${error.message}`;
      this.worker = undefined;
    });
    worker.unref();
    this.worker = worker;
  }

  /**
   * Logs what a checkpoint loop reported, on whichever thread it runs. A WAL that cannot be cut
   * (another connection keeps an old snapshot) is said once, at warn, until a truncation works
   * again: it was logged at debug as "checkpointed and truncated", so the WAL grew unseen.
   */
  report(event: CheckpointEvent): void {
    if (event.type !== 'error') this.walBytes = event.walBytes;
    if (event.type === 'error') {
      this.failures++;
      this.lastError = event.message;
      this.logger.warn({ error: event.message, code: event.code, retry_in_ms: event.retryInMs }, 'WAL checkpoint failed; it will be retried');
    } else if (event.type === 'busy') {
      this.busyTries++;
      const fields = { wal_bytes: event.walBytes, tries: this.busyTries, retry_in_ms: event.retryInMs };
      if (this.busyTries === 1)
        this.logger.warn(
          fields,
          'the WAL is over its limit but cannot be truncated: another connection holds a read transaction (or the write lock) open, a `sqlite3` shell or a backup perhaps; it grows until that ends, and is truncated then',
        );
      else this.logger.debug(fields, 'the WAL still cannot be truncated');
    } else if (event.type === 'truncated') {
      if (this.busyTries > 0) this.logger.info({ wal_bytes: event.walBytes, busy_tries: this.busyTries }, 'the WAL is truncated again');
      else this.logger.debug({ wal_bytes: event.walBytes }, 'WAL over its limit: checkpointed and truncated');
      this.busyTries = 0;
    }
  }

  status(): CheckpointStatus {
    return { failures: this.failures, blocked: this.busyTries > 0, wal_bytes: this.walBytes, last_error: this.lastError };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const worker = this.worker;
    this.worker = undefined;
    if (worker) {
      const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      worker.postMessage('stop');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
      await worker.terminate();
    }
    try {
      this.db.pragma('wal_checkpoint(TRUNCATE)');
    } catch (error) {
      this.logger.warn({ err: error }, 'WAL checkpoint at shutdown failed; SQLite will replay the WAL on the next start');
    }
  }
}
