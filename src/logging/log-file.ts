import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * The daemon's log file: lines are gathered and written in batches of `minLength` bytes with one
 * plain write each (a page-cache write of a few µs, every dozen requests or so), and at least every
 * half second so `tail -f` stays current.
 *
 * A write that fails (a full disk, a quota) never throws and never retries in a loop: the batch is
 * dropped and counted, one note goes to stderr per episode, and once a write works again the log
 * itself says how many lines are missing. pino's own file stream retried a failed flush forever
 * on a full disk, holding the proxy's thread and growing its buffer without bound.
 */
export class LogFile {
  private readonly fd: number;
  private pending: string[] = [];
  private pendingBytes = 0;
  private droppedLines = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    readonly path: string,
    private readonly minLength = 4_096,
  ) {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    this.fd = openSync(path, 'a', 0o600);
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
    try {
      writeAll(this.fd, Buffer.from(text));
      this.droppedLines = 0;
    } catch (error) {
      if (this.droppedLines === 0) {
        const code = (error as { code?: string }).code ?? String(error);
        stderrLine(`metaclaw: cannot write the log file ${this.path} (${code}); log lines are dropped until it can be written again`);
      }
      this.droppedLines += lines.length;
    }
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
