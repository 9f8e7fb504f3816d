import { Worker } from 'node:worker_threads';
import type { CheckpointEvent } from '../store/wal-checkpoints.js';
import { BATCH_WINDOW_MS } from './turn-writer.js';
import type { FinishedTurn, JsonBody } from './types.js';

/** Turns are sent over in groups: each message wakes the writer's thread, which has a cost of its own. */
const SEND_EVERY_TURNS = 8;
/** …or once their bodies add up to this many characters (one agent turn of 60 KB does). */
const SEND_AT_CHARS = 32_000;

/** What the main thread sends the turn writer. */
export type WriterRequest = { type: 'turns'; turns: FinishedTurn[] } | { type: 'stop' };

/** What the turn writer answers: which turns are committed, and what their listeners did. */
export type WriterReply =
  | {
      type: 'written';
      ids: string[];
      errors: Array<{ id: string; message: string; code?: string }>;
      enqueued: string[];
      triggerFailures: Array<{ trigger: string; message: string }>;
    }
  /** The WAL checkpoints this thread runs (when asked to: see runtime/turn-writer-worker.ts) reported something. */
  | { type: 'checkpoint'; event: CheckpointEvent }
  | { type: 'stopped' };

/** Where the thread reports what happened on its side. */
export interface WriterThreadEvents {
  /** Jobs were queued with the turns (the runner should look). */
  enqueued(kinds: readonly string[]): void;
  /** A learning trigger threw while a turn was recorded; the turn was recorded without it. */
  triggerFailed(trigger: string, message: string): void;
  /** The thread died; turns are written on the proxy's thread from now on. */
  died(error: Error): void;
  /** Turns could not be sent over; they were written on the proxy's thread. */
  sendFailed(error: Error): void;
  /** The thread's WAL checkpoints reported something (truncated the WAL, or failed). */
  checkpoint?(event: CheckpointEvent): void;
}

/**
 * The proxy's handle on the turn writer, a worker thread with its own connection that writes turn
 * records and runs their listeners (see runtime/turn-writer-worker.ts). A turn record costs
 * 0.1–0.2 ms of SQLite work; on the proxy's thread that time came out of the next request. Here
 * the proxy only copies the turn over (bodies as text) and hears back once it is committed.
 */
export class TurnWriterThread {
  /** Bumped when body parts are deleted whatever uses them (forgetting): the writer then forgets the lists it would extend. */
  readonly segmentGeneration = new Int32Array(new SharedArrayBuffer(4));
  private readonly worker: Worker;
  private readonly waiting = new Map<string, { turn: FinishedTurn; resolve: () => void; reject: (error: unknown) => void }>();
  private outbox: FinishedTurn[] = [];
  private outboxChars = 0;
  private sendTimer: NodeJS.Timeout | undefined;
  private alive = true;
  private stopped: Promise<void> | undefined;

  constructor(
    entry: URL,
    workerData: Record<string, unknown>,
    private readonly events: WriterThreadEvents,
    /** Writes turns here when the thread is gone (the store's own writer). */
    private readonly fallback: (turn: FinishedTurn) => Promise<void>,
  ) {
    this.worker = new Worker(entry, {
      workerData: { ...workerData, segmentGeneration: this.segmentGeneration },
      // It holds at most a few batches of turns: a small young generation keeps its memory small.
      // Running out would end the thread, and the turns would be written on the proxy's thread.
      resourceLimits: { maxOldGenerationSizeMb: 128, maxYoungGenerationSizeMb: 8 },
    });
    this.worker.on('message', (reply: WriterReply) => this.onReply(reply));
    this.worker.on('error', (error) => this.die(error));
    this.worker.on('exit', (code) => {
      if (this.alive) this.die(new Error(`the turn writer exited (code ${code})`));
    });
    // Shutdown drains it explicitly (stop); it must not keep a finished process alive by itself.
    this.worker.unref();
  }

  get running(): boolean {
    return this.alive;
  }

  record(turn: FinishedTurn): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.set(turn.id, { turn, resolve, reject });
      const sent = forTransfer(turn);
      this.outbox.push(sent);
      this.outboxChars += textLength(sent);
      if (this.outbox.length >= SEND_EVERY_TURNS || this.outboxChars >= SEND_AT_CHARS) this.send();
      else this.sendTimer ??= setTimeout(() => this.send(), BATCH_WINDOW_MS);
    });
  }

  private send(): void {
    if (this.sendTimer) clearTimeout(this.sendTimer);
    this.sendTimer = undefined;
    if (this.outbox.length === 0 || !this.alive) return;
    const request: WriterRequest = { type: 'turns', turns: this.outbox };
    this.outbox = [];
    this.outboxChars = 0;
    try {
      this.worker.postMessage(request);
    } catch (error) {
      // A turn that cannot be copied over (it should not happen: turns are plain data) is written here.
      this.events.sendFailed(error instanceof Error ? error : new Error(String(error)));
      for (const turn of request.turns) this.writeHereInstead(turn.id);
    }
  }

  private writeHereInstead(id: string): void {
    const entry = this.waiting.get(id);
    if (!entry) return;
    this.waiting.delete(id);
    this.fallback(entry.turn).then(entry.resolve, entry.reject);
  }

  forgetWrittenSegments(): void {
    Atomics.add(this.segmentGeneration, 0, 1);
  }

  /** Lets the writer commit every turn it was sent, then ends it. */
  stop(): Promise<void> {
    if (!this.stopped) {
      this.stopped = (async () => {
        if (!this.alive) return;
        this.send();
        const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
        this.worker.postMessage({ type: 'stop' } satisfies WriterRequest);
        await exited;
      })();
    }
    return this.stopped;
  }

  private onReply(reply: WriterReply): void {
    if (reply.type === 'stopped') {
      this.alive = false;
      return;
    }
    if (reply.type === 'checkpoint') {
      this.events.checkpoint?.(reply.event);
      return;
    }
    const failed = new Map(reply.errors.map((error) => [error.id, error]));
    for (const id of [...reply.ids, ...failed.keys()]) {
      const entry = this.waiting.get(id);
      if (!entry) continue;
      this.waiting.delete(id);
      const error = failed.get(id);
      // The code (SQLITE_FULL …) crosses too: it tells a full disk from a turn that cannot be written.
      if (error === undefined) entry.resolve();
      else entry.reject(Object.assign(new Error(error.message), error.code === undefined ? {} : { code: error.code }));
    }
    if (reply.enqueued.length > 0) this.events.enqueued(reply.enqueued);
    for (const failure of reply.triggerFailures) this.events.triggerFailed(failure.trigger, failure.message);
  }

  /** The thread is gone: what it had not confirmed is written on the proxy's thread instead. */
  private die(error: Error): void {
    if (!this.alive) return;
    this.alive = false;
    if (this.sendTimer) clearTimeout(this.sendTimer);
    this.outbox = [];
    this.events.died(error);
    for (const id of [...this.waiting.keys()]) this.writeHereInstead(id);
  }
}

/** Bodies cross as text alone: copying a string is far cheaper than cloning the object graph. */
function forTransfer(turn: FinishedTurn): FinishedTurn {
  const { received, forwarded } = turn.payload;
  return { ...turn, payload: { ...turn.payload, received: asText(received), forwarded: forwarded && asText(forwarded) } };
}

function asText(body: JsonBody): JsonBody {
  return { text: body.text ?? JSON.stringify(body.object) };
}

function textLength(turn: FinishedTurn): number {
  return (turn.payload.received.text?.length ?? 0) + (turn.payload.forwarded?.text?.length ?? 0);
}
