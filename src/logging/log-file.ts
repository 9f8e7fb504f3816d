import { closeSync, fstatSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { makeFolders } from '../shared/make-folders.js';

/** Size-based rotation: past `maxBytes` the file becomes `.1`, `.1` becomes `.2` … and `.maxFiles` is dropped. */
export interface LogRotation {
  /** 0: never rotate. */
  maxBytes: number;
  /** Rotated files kept beside the current one. */
  maxFiles: number;
}

/**
 * The daemon's log file: lines are gathered and written in batches of `minLength` bytes with one
 * plain write each (a page-cache write of a few µs, every dozen requests or so), and at least every
 * half second so `tail -f` stays current.
 *
 * A write that fails (a full disk, a quota) never throws and never retries in a loop: the batch is
 * dropped and counted, one note goes to stderr per episode, and once a write works again the log
 * itself says how many lines are missing. pino's own file stream retried a failed flush forever
 * on a full disk, holding the proxy's thread and growing its buffer without bound.
 *
 * Rotation is checked per batch, before it is written, from a byte count kept here (no stat per
 * write): a batch that would take the file past the limit goes to a fresh file.
 */
export class LogFile {
  private fd: number;
  /** Bytes in the current file. */
  private size: number;
  private pending: string[] = [];
  private pendingBytes = 0;
  private droppedLines = 0;
  private readonly timer: NodeJS.Timeout;
  /** Past `maxBytes`, or 0 once rotating failed: the lines then go on into the file as it is. */
  private rotateAt: number;

  constructor(
    readonly path: string,
    private readonly rotation: LogRotation = { maxBytes: 0, maxFiles: 0 },
    private readonly minLength = 4_096,
  ) {
    makeFolders(dirname(path), 0o700);
    this.fd = openSync(path, 'a', 0o600);
    this.size = fstatSync(this.fd).size;
    this.rotateAt = rotation.maxBytes;
    this.timer = setInterval(() => this.writePending(), 500);
    this.timer.unref();
  }

  /** pino's destination interface: one serialised line at a time. */
  write(line: string): boolean {
    this.pending.push(line);
    this.pendingBytes += line.length;
    if (this.pendingBytes >= this.minLength) this.writePending();
    return true;
  }

  /** Writes what is gathered; pino's `logger.flush(callback)` calls this with its callback. */
  flush(callback?: (error?: Error) => void): void {
    this.writePending();
    callback?.();
  }

  private writePending(): void {
    if (this.pending.length === 0) return;
    const lines = this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    let text = lines.join('');
    if (this.droppedLines > 0)
      text = `${JSON.stringify({ level: 'warn', time: new Date().toISOString(), pid: process.pid, dropped_lines: this.droppedLines, msg: 'log lines were dropped while the log file could not be written' })}\n${text}`;
    const buffer = Buffer.from(text);
    try {
      if (this.rotateAt > 0 && this.size > 0 && this.size + buffer.length > this.rotateAt) this.rotate();
      writeAll(this.fd, buffer);
      this.size += buffer.length;
      this.droppedLines = 0;
    } catch (error) {
      if (this.droppedLines === 0) {
        const code = (error as { code?: string }).code ?? String(error);
        stderrLine(`metaclaw: cannot write the log file ${this.path} (${code}); log lines are dropped until it can be written again`);
      }
      this.droppedLines += lines.length;
    }
  }

  /** A rotation that fails is said once and not tried again: losing log lines would be worse than a large file. */
  private rotate(): void {
    try {
      this.shiftFiles();
    } catch (error) {
      this.rotateAt = 0;
      const code = (error as { code?: string }).code ?? String(error);
      stderrLine(`metaclaw: cannot rotate the log file ${this.path} (${code}); it grows past log.max_size_mb until the next start`);
    }
  }

  /** Shifts `.1` … to `.2` …, drops what is past `maxFiles`, renames the current file to `.1` and opens a new one. */
  private shiftFiles(): void {
    const maxFiles = Math.max(1, this.rotation.maxFiles);
    rmSync(`${this.path}.${maxFiles}`, { force: true });
    for (let index = maxFiles - 1; index >= 1; index--) {
      try {
        renameSync(`${this.path}.${index}`, `${this.path}.${index + 1}`);
      } catch (error) {
        if ((error as { code?: string }).code !== 'ENOENT') throw error;
      }
    }
    renameSync(this.path, `${this.path}.1`);
    // Opened before the old one is closed: if it cannot be, lines keep going to the renamed file.
    const fd = openSync(this.path, 'a', 0o600);
    closeSync(this.fd);
    this.fd = fd;
    this.size = 0;
  }

  /** pino calls this at exit. */
  flushSync(): void {
    this.writePending();
  }

  end(): void {
    clearInterval(this.timer);
    this.writePending();
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
  }
}

function writeAll(fd: number, buffer: Buffer): void {
  let offset = 0;
  while (offset < buffer.length) offset += writeSync(fd, buffer, offset, buffer.length - offset);
}

/** Straight to file descriptor 2: process.stderr is a stream whose failure would be an uncaught 'error' event. */
export function stderrLine(text: string): void {
  try {
    writeSync(2, `${text}\n`);
  } catch {
    // stderr itself cannot be written (it may be a file on the same full disk): nothing left to tell
  }
}
