/**
 * Worker thread that runs WAL checkpoints (store/wal-checkpoints.ts) when the proxy has no turn
 * writer thread to run them (it died). SQLite lets a PASSIVE checkpoint proceed on this thread's
 * connection while the main connection reads and commits.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { runWalCheckpoints, type CheckpointSettings } from './wal-checkpoints.js';

const stop = runWalCheckpoints(workerData as CheckpointSettings, (event) => parentPort?.postMessage(event));

parentPort?.on('message', (message: unknown) => {
  if (message !== 'stop') return;
  stop();
  parentPort?.close();
});
