/**
 * Runs synchronous code written against a synchronous store (the recall and core-choice code of
 * src/memory, written for SQLite) over reads that are asynchronous (PostgreSQL), without a second
 * copy of that code. The code runs; the first read it asks for that is not known yet stops it
 * (a thrown marker), the read is made, and the code runs again from the start, now finding that
 * answer, until it completes. The code is deterministic given its reads and costs well under a
 * millisecond, while each read is a round trip: replaying costs nothing next to the wait, and the
 * ranking stays exactly the SQLite path's.
 *
 * Code run this way must not keep effects of a run that was stopped: recall and chooseCore only
 * compute (they fill caches of pure functions at most).
 */

/** Thrown by a read not known yet: caught by `run`, never seen by the caller (one instance: no stack to capture per stop). */
class NotReadYet extends Error {}
const NOT_YET = new NotReadYet('not read yet');

export class ReplayedReads {
  private readonly known = new Map<string, unknown>();
  /** Reads under way: runs side by side (one per scope) that ask the same question share one round trip. */
  private readonly inflight = new Map<string, Promise<void>>();
  /** What the run now computing waits for (compute is synchronous: one run at a time is in it). */
  private missing: Array<Promise<void>> | undefined;
  /** Reads made (round trips started), for tests. */
  reads = 0;

  /** The answer of `key` if it was read; otherwise starts `load` and stops the run. */
  read<T>(key: string, load: () => Promise<T>): T {
    if (this.known.has(key)) return this.known.get(key) as T;
    let pending = this.inflight.get(key);
    if (!pending) {
      this.reads++;
      pending = load()
        .then((value) => void this.known.set(key, value))
        .finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
    }
    this.missing?.push(pending);
    throw NOT_YET;
  }

  /** An answer known without a read of its own (one read may answer several questions). */
  learn(key: string, value: unknown): void {
    if (!this.known.has(key)) this.known.set(key, value);
  }

  /** Runs `compute` until it completes, reading what it asks for between runs. A failed read rejects. */
  async run<T>(compute: () => T): Promise<T> {
    for (;;) {
      const missing: Array<Promise<void>> = [];
      this.missing = missing;
      try {
        return compute();
      } catch (error) {
        if (error !== NOT_YET) throw error;
      } finally {
        this.missing = undefined;
      }
      await Promise.all(missing);
    }
  }
}
