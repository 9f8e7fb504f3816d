import { closeSync, ftruncateSync, openSync, readdirSync, readFileSync, readSync, rmdirSync, rmSync, writevSync } from 'node:fs';
import { join } from 'node:path';
import { makeFolders } from '../shared/make-folders.js';

/**
 * The turn journal: what a turn's record needs, appended with one plain write just before the
 * client gets the last bytes of its answer. A turn record is written a few milliseconds later, in
 * a batch, on another thread; a process that dies in between (kill -9, a crash, the OOM killer)
 * would lose the turns of that window. The journal closes it: once the client has its whole answer,
 * the turn is in the operating system's page cache, which outlives the process (a power cut can
 * still lose the last seconds: there is no fsync per turn). The next start records every turn
 * still in the journal that the database does not hold.
 *
 * Entries: `MCJ1 <header bytes> <request bytes> <answer bytes>\n` then the three parts. A torn last
 * entry (the process died mid-write) is ignored. Each segment is emptied once every turn written
 * to it is committed (it holds requests as received, secrets included, which the record redacts);
 * a segment that grew past `rotateBytes` is replaced and deleted once its turns are committed.
 */
export class TurnJournal {
  private segment: Segment | undefined;
  /** Where each turn not yet committed sits: a turn the recorder let go from memory is read back from there. */
  private readonly segmentOf = new Map<string, Placed>();
  private sequence = 0;

  constructor(
    private readonly directory: string,
    private readonly rotateBytes = 8 * 1024 * 1024,
  ) {}

  /** Appends one turn. Throws what the file system threw (a full disk): the caller decides. */
  append(id: string, header: unknown, request: Buffer, answer: readonly Buffer[]): void {
    const segment = this.current();
    const headerBytes = Buffer.from(JSON.stringify(header));
    let answerLength = 0;
    for (const part of answer) answerLength += part.length;
    const prefix = Buffer.from(`${MAGIC} ${headerBytes.length} ${request.length} ${answerLength}\n`);
    const parts = [prefix, headerBytes, request, ...answer];
    const total = prefix.length + headerBytes.length + request.length + answerLength;
    let written = writevSync(segment.fd, parts);
    // A short write (rare: a signal, a nearly full disk) is completed or reported, never left half.
    if (written < total) {
      const rest = Buffer.concat(parts).subarray(written);
      written += writevSync(segment.fd, [rest]);
      if (written < total) throw Object.assign(new Error('short write to the turn journal'), { code: 'ENOSPC' });
    }
    this.segmentOf.set(id, { segment, offset: segment.size, length: total });
    segment.size += total;
    segment.pending++;
  }

  /** The turn's record is committed: its entry is no longer needed. */
  committed(id: string): void {
    const segment = this.segmentOf.get(id)?.segment;
    if (!segment) return;
    this.segmentOf.delete(id);
    segment.pending--;
    if (segment.pending > 0) return;
    // Emptied at once: the journal holds requests as received, secrets included (the record redacts them).
    if (segment !== this.segment) this.remove(segment);
    else if (segment.size > 0) {
      try {
        ftruncateSync(segment.fd, 0);
        segment.size = 0;
      } catch {
        // kept: its turns are in the database, so a replay skips them
      }
    }
  }

  /** Whether the turn is journaled by this run and not yet committed (so it can be read back). */
  holds(id: string): boolean {
    return this.segmentOf.has(id);
  }

  /**
   * The entry of a turn this run journaled and has not committed; undefined when there is none or
   * it cannot be read back. Its bytes were written with one plain write, so they are readable here.
   */
  entry(id: string): JournalEntry | undefined {
    const placed = this.segmentOf.get(id);
    if (!placed) return undefined;
    const bytes = Buffer.alloc(placed.length);
    let fd: number | undefined;
    try {
      fd = openSync(placed.segment.path, 'r');
      let read = 0;
      while (read < bytes.length) {
        const got = readSync(fd, bytes, read, bytes.length - read, placed.offset + read);
        if (got === 0) return undefined;
        read += got;
      }
    } catch {
      return undefined;
    } finally {
      if (fd !== undefined) closeQuietly(fd);
    }
    return parseSegment(bytes)[0];
  }

  /** Turns still journaled and not yet committed. */
  get pendingTurns(): number {
    return this.segmentOf.size;
  }

  /** At a clean stop: a segment whose turns are all committed is deleted, and the folder if that empties it. */
  close(): void {
    const segment = this.segment;
    this.segment = undefined;
    if (segment) {
      if (segment.pending === 0) this.remove(segment);
      else closeQuietly(segment.fd);
    }
    try {
      rmdirSync(this.directory);
    } catch {
      // not empty (turns still to record at the next start) or never created
    }
  }

  /**
   * The segments left by earlier runs and the entries in them. Call before the first append (at
   * start, holding the pid lock); `removeRecovered` deletes them once their turns are recorded.
   */
  readEarlier(): RecoveredJournal {
    let names: string[];
    try {
      names = readdirSync(this.directory)
        .filter((name) => name.endsWith(SUFFIX))
        .sort();
    } catch {
      return { entries: [], files: [] };
    }
    const entries: JournalEntry[] = [];
    const files = names.map((name) => join(this.directory, name));
    for (const file of files) entries.push(...parseSegment(readFileSync(file)));
    return { entries, files };
  }

  removeRecovered(recovered: RecoveredJournal): void {
    for (const file of recovered.files) rmSync(file, { force: true });
  }

  private current(): Segment {
    if (this.segment && this.segment.size < this.rotateBytes) return this.segment;
    const previous = this.segment;
    makeFolders(this.directory, 0o700);
    const name = `turns-${Date.now().toString(36)}-${process.pid}-${this.sequence++}${SUFFIX}`;
    const path = join(this.directory, name);
    this.segment = { path, fd: openSync(path, 'a', 0o600), size: 0, pending: 0 };
    if (previous && previous.pending === 0) this.remove(previous);
    return this.segment;
  }

  private remove(segment: Segment): void {
    closeQuietly(segment.fd);
    rmSync(segment.path, { force: true });
  }
}

interface Segment {
  path: string;
  fd: number;
  size: number;
  pending: number;
}

interface Placed {
  segment: Segment;
  offset: number;
  length: number;
}

export interface JournalEntry {
  header: unknown;
  request: Buffer;
  answer: Buffer;
}

export interface RecoveredJournal {
  entries: JournalEntry[];
  files: string[];
}

const MAGIC = 'MCJ1';
const SUFFIX = '.journal';

/** Entries of one segment, up to the first torn or unreadable one. */
export function parseSegment(bytes: Buffer): JournalEntry[] {
  const entries: JournalEntry[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    const lineEnd = bytes.indexOf(10, offset);
    if (lineEnd === -1 || lineEnd - offset > 64) break;
    const fields = bytes.toString('latin1', offset, lineEnd).split(' ');
    if (fields.length !== 4 || fields[0] !== MAGIC) break;
    const [headerLength, requestLength, answerLength] = fields.slice(1).map(Number) as [number, number, number];
    const start = lineEnd + 1;
    const end = start + headerLength + requestLength + answerLength;
    if (![headerLength, requestLength, answerLength].every(Number.isSafeInteger) || end > bytes.length) break;
    let header: unknown;
    try {
      header = JSON.parse(bytes.toString('utf8', start, start + headerLength));
    } catch {
      break;
    }
    entries.push({
      header,
      request: bytes.subarray(start + headerLength, start + headerLength + requestLength),
      answer: bytes.subarray(start + headerLength + requestLength, end),
    });
    offset = end;
  }
  return entries;
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
}
