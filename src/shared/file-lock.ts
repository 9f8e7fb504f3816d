import { closeSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { makeFolders } from './make-folders.js';

/** Raised when another process keeps the lock longer than the caller waits. */
export class LockBusyError extends Error {
  constructor(readonly lockFile: string) {
    super(`${lockFile} is held by another process`);
  }
}

const POLL_MS = 15;

/**
 * Runs `work` while holding `<path>.lock`, so that two processes that each read, change and write
 * `path` (two `metaclaw config set` at once) do not lose one another's change. The lock file holds
 * the owner's pid; one whose owner has exited, or older than `staleMs`, is taken over.
 */
export function withFileLock<T>(path: string, work: () => T, options: { waitMs?: number; staleMs?: number } = {}): T {
  const lockFile = `${path}.lock`;
  const deadline = Date.now() + (options.waitMs ?? 5000);
  // Private like the file it guards (config.yaml): on a fresh install this makes $METACLAW_HOME.
  makeFolders(dirname(lockFile), 0o700);
  while (!tryAcquire(lockFile)) {
    if (isStale(lockFile, options.staleMs ?? 30_000)) {
      rmSync(lockFile, { force: true });
      continue;
    }
    if (Date.now() > deadline) throw new LockBusyError(lockFile);
    sleepSync(POLL_MS);
  }
  try {
    return work();
  } finally {
    rmSync(lockFile, { force: true });
  }
}

function tryAcquire(lockFile: string): boolean {
  let descriptor: number;
  try {
    descriptor = openSync(lockFile, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    writeSync(descriptor, String(process.pid));
  } finally {
    closeSync(descriptor);
  }
  return true;
}

function isStale(lockFile: string, staleMs: number): boolean {
  try {
    if (Date.now() - statSync(lockFile).mtimeMs > staleMs) return true;
    const pid = Number(readFileSync(lockFile, 'utf8'));
    // An empty file is a lock being written this instant, not a stale one.
    return Number.isInteger(pid) && pid > 0 && !isAlive(pid);
  } catch {
    return false; // gone already: the next attempt takes it
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
