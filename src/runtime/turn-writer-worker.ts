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
import { recordingListeners, type RecordingSettings } from './recording.js';

export interface TurnWriterData {
  databasePath: string;
  maxAttempts: number;
  settings: RecordingSettings;
  segmentGeneration: Int32Array;
}

const data = workerData as TurnWriterData;
const port = parentPort!;
const db = openDatabase(data.databasePath);
// Checkpoints are the checkpoint worker's job (store/checkpointer.ts), never a commit's.
db.pragma('wal_autocheckpoint = 0');
const enqueued: string[] = [];
const triggerFailures: Array<{ trigger: string; message: string }> = [];
const queue = new JobQueue(db, `turn-writer-${process.pid}`, data.maxAttempts);
const listeners = recordingListeners(db, queue, data.settings, {
  enqueued: (kind) => enqueued.push(kind),
  failed: (trigger, error) => triggerFailures.push({ trigger, message: errorMessage(error) }),
});
const writer = new TurnWriter(db, listeners, data.segmentGeneration, data.settings.redactTurns);

let pending: FinishedTurn[] = [];
let scheduled: NodeJS.Immediate | undefined;
let stopping = false;

port.on('message', (request: WriterRequest) => {
  if (request.type === 'stop') {
    stopping = true;
    if (scheduled) clearImmediate(scheduled);
    while (pending.length > 0) writeSome();
    db.close();
    port.postMessage({ type: 'stopped' } satisfies WriterReply);
    port.close();
    return;
  }
  if (stopping) return;
  // The proxy already gathered these over up to BATCH_WINDOW_MS; messages that arrive together
  // share a transaction too.
  for (const turn of request.turns) pending.push(turn);
  scheduled ??= setImmediate(flush);
});

function flush(): void {
  scheduled = undefined;
  writeSome();
  // A backlog is written in bounded transactions, so the proxy's own writes are never held up long.
  if (pending.length > 0) scheduled = setImmediate(flush);
}

function writeSome(): void {
  const batch = pending.slice(0, MAX_CHUNK_TURNS);
  pending = pending.slice(batch.length);
  const errors = writer.write(batch);
  const reply: WriterReply = {
    type: 'written',
    ids: batch.filter((_, index) => errors[index] === undefined).map((turn) => turn.id),
    errors: batch.flatMap((turn, index) =>
      errors[index] === undefined ? [] : [{ id: turn.id, message: errorMessage(errors[index]), ...errorCode(errors[index]) }],
    ),
    enqueued: enqueued.splice(0),
    triggerFailures: triggerFailures.splice(0),
  };
  port.postMessage(reply);
}

function errorCode(error: unknown): { code?: string } {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? { code } : {};
}
