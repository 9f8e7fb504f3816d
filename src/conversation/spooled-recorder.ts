import { errorMessage } from '../errors.js';
import type { Logger } from '../logging/index.js';
import { HeldTurns, isOnDisk, type HeldTurn, type HeldTurnsCounts, type OnDisk } from './held-turns.js';
import type { TurnJournal } from './turn-journal.js';
import type { FinishedTurn } from './types.js';

/** Where turn records go when they are not written on this machine (the team store). */
export interface TurnSinkPort {
  /** Writes turns in order; each turn's error, or undefined when it is stored (a turn already stored counts as stored). */
  write(turns: readonly FinishedTurn[]): Promise<unknown[]>;
}

export interface SpooledRecorderOptions {
  sink: TurnSinkPort;
  /** Answered turns wait there (on disk) until committed: a crash or restart replays them. */
  journal?: TurnJournal;
  /**
   * Rebuilds a turn from its journal entry (turnFromJournal). Given with a journal, a turn past the
   * memory limits waits in the journal alone and is read back, whole, when its turn to be written comes.
   */
  rebuild?: (header: unknown, request: Buffer, answer: Buffer) => FinishedTurn | undefined;
  /** Whether an error means the store is out of reach (the turn waits) rather than that this turn cannot be stored. */
  isOutage(error: unknown): boolean;
  logger: Logger;
  /** First wait before retrying after an outage; doubled up to `maxRetryMs`. */
  retryMs?: number;
  maxRetryMs?: number;
  /** Turns written per round trip. */
  batch?: number;
}

export interface SpoolStatus extends HeldTurnsCounts {
  /** The store could not be reached at the last write: turns wait here (and in the journal). */
  degraded: boolean;
  degraded_since: string | null;
  last_error: string | null;
  written: number;
  /** Turns written after waiting out an outage. */
  replayed: number;
  outages: number;
}

/** Gathered for a few milliseconds: one round trip for the turns of that window, not one per request. */
const GATHER_MS = 20;

/**
 * Records turns into a store across the network without ever making a request wait for it.
 * Turns are written in the order they were answered, in batches, by one loop. When the store
 * cannot be reached they wait here, bounded (HeldTurns), while the journal keeps each one on disk
 * until it is committed; past the memory limits a journaled turn waits as its id alone and is read
 * back from the journal when it is written. The loop retries with backoff, each try with the oldest
 * turn alone (so an outage does not read the journal over and over), and, once the store answers,
 * writes what waited first, in order. A turn the store refuses for itself (not an
 * outage) is reported and dropped, so one bad turn never blocks the rest.
 */
export class SpooledRecorder {
  private readonly waiting: HeldTurns<HeldTurn>;
  private readonly settle = new Map<string, { resolve: () => void; reject: (error: unknown) => void }>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private retryDelay: number;
  private degradedSince: number | undefined;
  private lastError: string | null = null;
  private written = 0;
  private replayed = 0;
  private outages = 0;
  private closed = false;
  /** The turn an outage stopped at, when it had been read back from the journal: the next try sends it without reading it again. */
  private readAgain: FinishedTurn | undefined;

  constructor(private readonly options: SpooledRecorderOptions) {
    const { journal, rebuild } = options;
    this.waiting = new HeldTurns<HeldTurn>(undefined, undefined, (turn) => rebuild !== undefined && journal?.holds(turn.id) === true);
    this.retryDelay = options.retryMs ?? 250;
  }

  get degraded(): boolean {
    return this.degradedSince !== undefined;
  }

  /** Resolves once the turn is stored, or at once when the store is out of reach (it waits here); rejects when the store refuses it. */
  recordTurn(turn: FinishedTurn): Promise<void> {
    this.waiting.hold(turn);
    if (this.degraded) {
      this.schedule(this.retryDelay);
      return Promise.resolve();
    }
    const settled = new Promise<void>((resolve, reject) => this.settle.set(turn.id, { resolve, reject }));
    this.schedule(GATHER_MS);
    return settled;
  }

  /** Writes what waits now (shutdown). Turns still unwritten stay in the journal for the next start. */
  async drain(timeoutMs = 5_000): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const deadline = Date.now() + timeoutMs;
    while (this.waiting.size > 0 && Date.now() < deadline) {
      await (this.running ?? this.writeWaiting());
      if (this.degraded) break;
    }
    // Whoever waits for a record that was not written is let go: the journal holds it.
    for (const { resolve } of this.settle.values()) resolve();
    this.settle.clear();
  }

  status(): SpoolStatus {
    return {
      ...this.waiting.counts(),
      degraded: this.degraded,
      degraded_since: this.degradedSince === undefined ? null : new Date(this.degradedSince).toISOString(),
      last_error: this.lastError,
      written: this.written,
      replayed: this.replayed,
      outages: this.outages,
    };
  }

  private schedule(delayMs: number): void {
    if (this.timer || this.running || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.writeWaiting();
    }, delayMs);
    this.timer.unref();
  }

  private writeWaiting(): Promise<void> {
    this.running ??= this.loop().finally(() => {
      this.running = undefined;
      if (this.waiting.size > 0) this.schedule(this.degraded ? this.retryDelay : 0);
    });
    return this.running;
  }

  private async loop(): Promise<void> {
    const batchSize = this.options.batch ?? 64;
    while (this.waiting.size > 0) {
      // While the store is out of reach each try sends the oldest turn alone: the turns behind it
      // are read back from the journal once the store answers, not again on every retry.
      const held = this.waiting.peek(this.degraded ? 1 : batchSize);
      const turns = held.map((entry) => (isOnDisk(entry) ? this.readBack(entry.onDisk) : entry));
      const batch = turns.filter((turn) => turn !== undefined);
      const wasDegraded = this.degraded;
      let errors: unknown[];
      try {
        errors = await this.options.sink.write(batch);
      } catch (error) {
        errors = batch.map(() => error);
      }
      // In order: the first outage stops the round, and it and everything after it wait.
      let done = 0;
      let index = 0;
      for (const [position, turn] of turns.entries()) {
        if (turn === undefined) {
          this.lostFromJournal((held[position] as OnDisk).onDisk);
          done++;
          continue;
        }
        const error = errors[index++];
        if (error !== undefined && this.options.isOutage(error)) {
          if (isOnDisk(held[position]!)) this.readAgain = turn;
          this.enterOutage(error);
          break;
        }
        done++;
        this.options.journal?.committed(turn.id);
        const waiter = this.settle.get(turn.id);
        this.settle.delete(turn.id);
        if (error === undefined) {
          this.written++;
          if (wasDegraded) this.replayed++;
          waiter?.resolve();
        } else {
          this.options.logger.error({ err: error, request_id: turn.id }, 'the team store refused a turn record');
          waiter?.reject(error);
        }
      }
      this.waiting.dropFirst(done);
      if (done < held.length) return;
      if (wasDegraded) this.leaveOutage();
    }
  }

  /** A turn that waited in the journal alone, whole again; undefined when its entry cannot be read back. */
  private readBack(id: string): FinishedTurn | undefined {
    const kept = this.readAgain;
    this.readAgain = undefined;
    if (kept?.id === id) return kept;
    const entry = this.options.journal?.entry(id);
    const turn = entry && this.options.rebuild?.(entry.header, entry.request, entry.answer);
    return turn?.id === id ? turn : undefined;
  }

  private lostFromJournal(id: string): void {
    this.waiting.countTurnDropped();
    this.options.logger.error({ request_id: id }, 'a turn waiting in the journal could not be read back; it is not stored');
    this.settle.get(id)?.resolve();
    this.settle.delete(id);
  }

  private enterOutage(error: unknown): void {
    this.lastError = errorMessage(error);
    if (this.degradedSince === undefined) {
      this.degradedSince = Date.now();
      this.outages++;
      this.options.logger.warn({ err: this.lastError }, 'the team store is out of reach: turns wait on this node (and in its journal) until it is back');
    } else {
      this.retryDelay = Math.min(this.retryDelay * 2, this.options.maxRetryMs ?? 5_000);
    }
    // Requests waiting for their record are let go now: the turn is safe in the journal.
    for (const { resolve } of this.settle.values()) resolve();
    this.settle.clear();
  }

  private leaveOutage(): void {
    const since = this.degradedSince;
    this.degradedSince = undefined;
    this.retryDelay = this.options.retryMs ?? 250;
    this.options.logger.info(
      { degraded_ms: since === undefined ? 0 : Date.now() - since, replayed: this.replayed },
      'the team store is back: waiting turns written',
    );
  }
}
