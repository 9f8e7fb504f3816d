import { closeSync, fstatSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { z } from 'zod';

import { LOG_LEVELS, type LogLevel } from './levels.js';

export { LOG_LEVELS, type LogLevel } from './levels.js';

/** What a reader relies on in a line of the daemon's log; every other field is kept as written. */
const logEntrySchema = z.looseObject({
  level: z.enum(LOG_LEVELS),
  time: z.string(),
  msg: z.string().optional(),
  request_id: z.string().optional(),
  job: z.number().optional(),
});
export type LogEntry = z.infer<typeof logEntrySchema>;

/** One line of the log: its text, and its entry when it is one of the logger's JSON lines. */
export interface LogLine {
  raw: string;
  entry?: LogEntry;
}

export interface LogFilter {
  /** This level and above. */
  minLevel?: LogLevel;
  requestId?: string;
  jobId?: number;
  /** Entries at or after this time (ms since the epoch). */
  sinceMs?: number;
}

/** A filter from the optional parts a caller was given (the CLI's options, the HTTP query), the absent ones left out. */
export function logFilter(parts: {
  level?: LogLevel | undefined;
  request?: string | undefined;
  job?: number | undefined;
  since?: number | undefined;
}): LogFilter {
  return {
    ...(parts.level ? { minLevel: parts.level } : {}),
    ...(parts.request !== undefined ? { requestId: parts.request } : {}),
    ...(parts.job !== undefined ? { jobId: parts.job } : {}),
    ...(parts.since !== undefined ? { sinceMs: parts.since } : {}),
  };
}

export function parseLogLine(raw: string): LogLine {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { raw };
  }
  const parsed = logEntrySchema.safeParse(value);
  return parsed.success ? { raw, entry: parsed.data } : { raw };
}

/** A line with no entry (not the logger's) passes only when nothing is asked of it. */
export function lineMatches(line: LogLine, filter: LogFilter): boolean {
  const { entry } = line;
  if (!entry) return filter.minLevel === undefined && filter.requestId === undefined && filter.jobId === undefined && filter.sinceMs === undefined;
  if (filter.minLevel !== undefined && LOG_LEVELS.indexOf(entry.level) < LOG_LEVELS.indexOf(filter.minLevel)) return false;
  if (filter.requestId !== undefined && entry.request_id !== filter.requestId) return false;
  if (filter.jobId !== undefined && entry.job !== filter.jobId) return false;
  if (filter.sinceMs !== undefined && !(Date.parse(entry.time) >= filter.sinceMs)) return false;
  return true;
}

/** The log and its rotated files (`metaclaw.log.1` is the newest of those), newest first. */
export function logFilesNewestFirst(path: string): string[] {
  const name = basename(path);
  let names: string[];
  try {
    names = readdirSync(dirname(path));
  } catch (error) {
    return ifMissing(error, dirname(path), []);
  }
  const rotated = names
    .map((entry) => ({ entry, suffix: entry.startsWith(`${name}.`) ? entry.slice(name.length + 1) : '' }))
    .filter(({ suffix }) => /^[1-9][0-9]{0,5}$/.test(suffix))
    .map(({ entry, suffix }) => ({ entry, number: Number(suffix) }))
    .sort((a, b) => a.number - b.number)
    .map(({ entry }) => join(dirname(path), entry));
  return [...(names.includes(name) ? [path] : []), ...rotated];
}

const CHUNK = 64 * 1024;

/**
 * `value` when the file or folder is missing: no log yet, or a file rotated away between listing
 * and reading. Any other failure (a `logs` that is a file, a folder that cannot be read) is thrown
 * with its path: said as "no log yet", it sent the user looking for a proxy that never ran.
 */
function ifMissing<T>(error: unknown, path: string, value: T): T {
  if ((error as NodeJS.ErrnoException)?.code === 'ENOENT') return value;
  throw withPath(error, path);
}

/** The error with the path it is about, for a message that names the file (a read's error carries none). */
function withPath(error: unknown, path: string): unknown {
  const fsError = error as NodeJS.ErrnoException;
  if (typeof fsError === 'object' && fsError !== null && fsError.path === undefined) fsError.path = path;
  return error;
}

/**
 * The lines of the first `end` bytes of a file, last first, read backwards in chunks: a log that is
 * never rotated (log.max_size_mb 0) may be large, and a tail wants only its end. Lines split on the
 * newline byte, which UTF-8 never uses inside a character.
 */
export function* linesBackward(path: string, end?: number): Generator<string> {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    return ifMissing(error, path, undefined);
  }
  try {
    let position = end ?? fstatSync(fd).size;
    // The line being read, in pieces in file order: joined once its start is found, so a line longer
    // than a chunk is copied once, not once per chunk (a 30 MB line took half a minute, the loop held).
    let carry: Buffer[] = [];
    while (position > 0) {
      const size = Math.min(CHUNK, position);
      position -= size;
      const chunk = Buffer.alloc(size);
      try {
        readSync(fd, chunk, 0, size, position);
      } catch (error) {
        throw withPath(error, path);
      }
      let lineEnd = size;
      for (let newline = chunk.lastIndexOf(0x0a, lineEnd - 1); newline >= 0; newline = lineEnd > 0 ? chunk.lastIndexOf(0x0a, lineEnd - 1) : -1) {
        const line = Buffer.concat([chunk.subarray(newline + 1, lineEnd), ...carry]);
        carry = [];
        if (line.length > 0) yield line.toString('utf8');
        lineEnd = newline;
      }
      if (lineEnd > 0) carry.unshift(chunk.subarray(0, lineEnd));
    }
    if (carry.length > 0) yield Buffer.concat(carry).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** How many lines are read between two turns of the event loop (a served proxy reads its log too). */
const LINES_PER_TURN = 500;

/**
 * The last `count` lines that pass `filter`, oldest first, from the log and then its rotated files.
 * `endOfCurrent` stops the current file at that size (a follower reads on from there). Asynchronous
 * only to give the event loop a turn every few hundred lines: a filter that matches little may read
 * every rotated file, and the proxy serving `GET /v1/logs` must go on serving meanwhile.
 */
export async function lastLogLines(path: string, count: number, filter: LogFilter, endOfCurrent?: number): Promise<LogLine[]> {
  const found: LogLine[] = [];
  let read = 0;
  for (const file of logFilesNewestFirst(path)) {
    for (const raw of linesBackward(file, file === path ? endOfCurrent : undefined)) {
      if (++read % LINES_PER_TURN === 0) await new Promise((resolve) => setImmediate(resolve));
      const line = parseLogLine(raw);
      // Older files hold older entries only: once one is before --since, nothing earlier can pass.
      if (filter.sinceMs !== undefined && line.entry && Date.parse(line.entry.time) < filter.sinceMs) return found.reverse();
      if (!lineMatches(line, filter)) continue;
      found.push(line);
      if (found.length >= count) return found.reverse();
    }
  }
  return found.reverse();
}

const SPAN = /^(\d+(?:\.\d+)?)\s*(s|m|h|d)$/;
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** What `parseSince` takes, for error messages. */
export const SINCE_FORMS = 'expected a span back from now (30s, 10m, 2h, 1d) or a date and time (2026-12-06T10:00)';

/**
 * A "since" as people write it: a span back from now ("30m", "2h", "1d") or a date and time
 * ("2026-12-06T10:00", "2026-12-06"), local unless it names its zone; undefined when it is neither.
 */
export function parseSince(text: string, now = Date.now()): number | undefined {
  const trimmed = text.trim();
  const span = SPAN.exec(trimmed);
  if (span) return now - Number(span[1]) * UNIT_MS[span[2] as keyof typeof UNIT_MS];
  // A date alone is its local midnight, as a date and time without a zone is local time: JavaScript
  // reads "2026-12-06" as UTC, hours off from the local times `metaclaw logs` prints.
  const time = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(trimmed) ? `${trimmed}T00:00` : trimmed);
  return /^\d{4}-\d{2}-\d{2}/.test(trimmed) && Number.isFinite(time) ? time : undefined;
}

/** Complete lines read from `fd` at `position` on, and where reading stopped; `partial` is a line begun before. */
function readLinesFrom(fd: number, position: number, partial: Buffer): { lines: string[]; position: number; partial: Buffer } {
  const lines: string[] = [];
  const buffer = Buffer.alloc(CHUNK);
  // Pieces of a line not yet ended, joined once its newline comes: a line longer than a chunk is not copied again per read.
  let pieces = partial.length > 0 ? [partial] : [];
  for (;;) {
    const read = readSync(fd, buffer, 0, CHUNK, position);
    if (read === 0) break;
    position += read;
    // Bytes, not text, until a newline: a read may end inside a character.
    const data = buffer.subarray(0, read);
    let start = 0;
    for (let newline = data.indexOf(0x0a); newline >= 0; newline = data.indexOf(0x0a, start)) {
      const line = Buffer.concat([...pieces, data.subarray(start, newline)]);
      pieces = [];
      if (line.length > 0) lines.push(line.toString('utf8'));
      start = newline + 1;
    }
    if (start < read) pieces.push(Buffer.from(data.subarray(start)));
  }
  return { lines, position, partial: Buffer.concat(pieces) };
}

/** Every line of a file that is no longer written (a rotated one), its unended last line included. */
function allLinesOf(fd: number, position: number, partial: Buffer): string[] {
  const read = readLinesFrom(fd, position, partial);
  return read.partial.length > 0 ? [...read.lines, read.partial.toString('utf8')] : read.lines;
}

/**
 * Reads the lines written to the log from now on (`start` bytes into the current file), following it
 * across rotation: when `metaclaw.log` is renamed to `.1` and a new one opened, the old file is read
 * to its end through the descriptor still open on it, then any file rotated after it (the log may
 * rotate more than once between two polls: the one that was current in between is `.1` by then),
 * then the new one from its start.
 */
export class LogFollower {
  private fd: number | undefined;
  private position: number;
  private partial: Buffer = Buffer.alloc(0);

  /** Where following starts in the current file: its size when the follower was made (0 when it did not exist). */
  readonly start: number;

  constructor(private readonly path: string) {
    this.fd = this.open();
    this.position = this.fd === undefined ? 0 : fstatSync(this.fd).size;
    this.start = this.position;
  }

  /** The complete lines written since the last call. */
  poll(): string[] {
    if (this.fd === undefined) {
      this.fd = this.open();
      if (this.fd === undefined) return [];
    }
    const lines = this.drain();
    const current = this.identity();
    const held = fstatSync(this.fd);
    if (current !== undefined && current.ino !== held.ino) {
      // Rotated: the old file is read to its end again (lines may have come after the read above), and
      // its last line is complete by now.
      lines.push(...allLinesOf(this.fd, this.position, this.partial));
      const next = this.open();
      lines.push(...this.rotatedSince(held.ino, next === undefined ? undefined : fstatSync(next).ino));
      closeSync(this.fd);
      this.fd = next;
      this.position = 0;
      this.partial = Buffer.alloc(0);
      if (this.fd !== undefined) lines.push(...this.drain());
    } else if (current !== undefined && current.size < this.position) {
      // Cut short in place (someone emptied it): read it again from its start.
      this.position = 0;
      this.partial = Buffer.alloc(0);
      lines.push(...this.drain());
    }
    return lines;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  /**
   * The lines of the rotated files newer than the one held (inode `held`), oldest first: `.1`, `.2` …
   * are opened newest first until the held one; when it is gone (dropped past log.max_files), every
   * rotated file is newer. `current` (the file now followed) is skipped should it have rotated meanwhile.
   */
  private rotatedSince(held: number, current: number | undefined): string[] {
    const newer: number[] = [];
    try {
      for (const file of logFilesNewestFirst(this.path).filter((file) => file !== this.path)) {
        let fd: number;
        try {
          fd = openSync(file, 'r');
        } catch {
          continue;
        }
        const ino = fstatSync(fd).ino;
        if (ino === held) {
          closeSync(fd);
          break;
        }
        if (ino === current) closeSync(fd);
        else newer.push(fd);
      }
      return newer.reverse().flatMap((fd) => allLinesOf(fd, 0, Buffer.alloc(0)));
    } finally {
      for (const fd of newer) closeSync(fd);
    }
  }

  private drain(): string[] {
    const read = readLinesFrom(this.fd!, this.position, this.partial);
    this.position = read.position;
    this.partial = read.partial;
    return read.lines;
  }

  private open(): number | undefined {
    try {
      return openSync(this.path, 'r');
    } catch {
      return undefined;
    }
  }

  private identity(): { ino: number; size: number } | undefined {
    try {
      const { ino, size } = statSync(this.path);
      return { ino, size };
    } catch {
      return undefined;
    }
  }
}
