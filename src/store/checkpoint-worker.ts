/**
 * Worker thread that copies the WAL back into the database file. A checkpoint reads and writes
 * megabytes and fsyncs; on the proxy's own thread it held requests up for 70–110 ms each time.
 * Here it runs beside them on its own connection: SQLite lets a PASSIVE checkpoint proceed while
 * the main connection reads and commits.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

interface CheckpointWorkerData {
  databasePath: string;
  intervalMs: number;
}

const { databasePath, intervalMs } = workerData as CheckpointWorkerData;
const db = new Database(databasePath, { fileMustExist: true });
db.pragma('busy_timeout = 1000');

const timer = setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch (error) {
    parentPort?.postMessage({ type: 'error', message: error instanceof Error ? error.message : String(error) });
  }
}, intervalMs);

parentPort?.on('message', (message: unknown) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  db.close();
  parentPort?.close();
});
