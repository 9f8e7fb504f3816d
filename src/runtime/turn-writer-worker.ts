/**
 * The turn writer: a worker thread with its own connection that commits turn records and runs
 * their recording listeners (learning triggers, skill credit, memory use), so none of that SQLite
 * work sits on the proxy's event loop between requests. The proxy's side is
 * conversation/writer-thread.ts.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { MAX_CHUNK_TURNS, TurnWriter, type FinishedTurn, type WriterReply, type WriterRequest } from '../conversation/index.js';
import { errorMessage } from '../errors.js';
import { JobQueue } from '../learning/queue.js';
import { openDatabase } from '../store/index.js';
import { runWalCheckpoints, type CheckpointSettings } from '../store/wal-checkpoints.js';
import { recordingListeners, type RecordingSettings } from './recording.js';

export interface TurnWriterData {
  databasePath: string;
  maxAttempts: number;
  settings: RecordingSettings;
  segmentGeneration: Int32Array;
  /** Given, this thread also runs the WAL checkpoints, on a connection of its own (store/wal-checkpoints.ts). */
  checkpoints?: CheckpointSettings;
}

const data = workerData as TurnWriterData;
const port = parentPort!;
const db = openDatabase(data.databasePath);
// Checkpoints run on their own connection (store/wal-checkpoints.ts), never inside a commit.
db.pragma('wal_autocheckpoint = 0');
// Here rather than on a thread of their own, which cost some 15 MiB: between two batches, so a
// checkpoint never makes this thread's own BEGIN IMMEDIATE fail as busy.
const stopCheckpoints = data.checkpoints
  ? runWalCheckpoints(data.checkpoints, (event) => port.postMessage({ type: 'checkpoint', event } satisfies WriterReply))
  : undefined;
const enqueued: string[] = [];
const triggerFailures: Array<{ trigger: string; message: string }> = [];
const queue = new JobQueue(db, `turn-writer-${process.pid}`, data.maxAttempts);
const listeners = recordingListeners(db, queue, data.settings, {
  enqueued: (kind) => enqueued.push(kind),
  failed: (trigger, error) => triggerFailures.push({ trigger, message: errorMessage(error) }),
});
const writer = new TurnWriter(db, listeners, data.segmentGeneration, data.settings.redactTurns);

let pending: FinishedTurn[] = [];
/** The next write, soon (setImmediate) or after a pause (setTimeout, when the store was busy). */
let scheduled: { cancel(): void } | undefined;
let stopping = false;

port.on('message', (request: WriterRequest) => {
  if (request.type === 'stop') {
    stopping = true;
    scheduled?.cancel();
    while (pending.length > 0) writeSome();
    stopCheckpoints?.();
    db.close();
    port.postMessage({ type: 'stopped' } satisfies WriterReply);
    port.close();
    return;
  }
  if (stopping) return;
  // The proxy already gathered these over up to BATCH_WINDOW_MS; messages that arrive together
  // share a transaction too.
  for (const turn of request.turns) pending.push(turn);
  scheduled ??= soon();
});

function flush(): void {
  scheduled = undefined;
  if (!writeSome()) return;
  // A backlog is written in bounded transactions, so the proxy's own writes are never held up long.
  if (pending.length > 0) scheduled = soon();
}

/**
 * Pauses before a batch SQLite refused as busy is tried again (ms). A WAL checkpoint that restarts
 * the log (store/checkpoint-worker.ts) can make a concurrent BEGIN IMMEDIATE fail at once, without
 * waiting out busy_timeout; under steady agent traffic that was one refused batch per checkpoint,
 * each logged as "cannot write its store". Waiting a moment and trying again writes it; only a
 * store still refused after all of these is reported (and its turns held by the proxy).
 */
const BUSY_RETRY_MS = [20, 50, 100, 250, 500, 1000, 2000];
let busyRetries = 0;

/** Writes the next batch; false when turns of it were put back to be tried again later (the store was busy). */
function writeSome(): boolean {
  const batch = pending.slice(0, MAX_CHUNK_TURNS);
  pending = pending.slice(batch.length);
  const errors = writer.write(batch);
  const pause = BUSY_RETRY_MS[busyRetries];
  const retry = !stopping && pause !== undefined ? batch.filter((_, index) => isBusy(errors[index])) : [];
  const settled = batch.flatMap((turn, index) => (retry.includes(turn) ? [] : [{ turn, error: errors[index] }]));
  if (settled.length > 0) {
    const reply: WriterReply = {
      type: 'written',
      ids: settled.filter(({ error }) => error === undefined).map(({ turn }) => turn.id),
      errors: settled.flatMap(({ turn, error }) => (error === undefined ? [] : [{ id: turn.id, message: errorMessage(error), ...errorCode(error) }])),
      enqueued: enqueued.splice(0),
      triggerFailures: triggerFailures.splice(0),
    };
    port.postMessage(reply);
  }
  if (retry.length === 0 || pause === undefined) {
    busyRetries = 0;
    return true;
  }
  busyRetries++;
  pending = [...retry, ...pending];
  scheduled = later(pause);
  return false;
}

function soon(): { cancel(): void } {
  const immediate = setImmediate(flush);
  return { cancel: () => clearImmediate(immediate) };
}

function later(ms: number): { cancel(): void } {
  const timer = setTimeout(flush, ms);
  return { cancel: () => clearTimeout(timer) };
}

function isBusy(error: unknown): boolean {
  return errorCode(error).code?.startsWith('SQLITE_BUSY') === true;
}

function errorCode(error: unknown): { code?: string } {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? { code } : {};
}
