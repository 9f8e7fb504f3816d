import { randomUUID } from 'node:crypto';
import type { StateStore } from '../store/index.js';
import { SHARED_SCOPE } from './types.js';
import type { MemoryStore } from './store.js';

/** The state key every process sets when it changes memory: the writer's id and a counter. */
const REVISION_KEY = 'memory.revision';
/** How often the proxy looks for another process's change (one indexed read). */
const LOOK_EVERY_MS = 1_000;

/**
 * Memory is written by more than one process: the proxy, and `metaclaw memory …` or `metaclaw team
 * remove-member --forget` while it runs. Each process caches what it read (scope sizes, the core
 * block, whole context sections), and only its own writes invalidated those caches, so a rule added
 * from the CLI waited for a restart. Every write now also sets a shared revision; the proxy looks
 * at it at most once a second, and when another process set it, drops its caches as a write of its
 * own would have.
 */
export class SharedMemoryRevision {
  private readonly me = randomUUID();
  private count = 0;
  private seen: string | undefined;
  private lookedAt = 0;
  /** Set while this process applies another's change (its listeners must not announce it again). */
  private applying = false;

  constructor(
    private readonly state: StateStore,
    private readonly store: MemoryStore,
  ) {
    this.seen = state.get(REVISION_KEY);
    store.onChange(() => this.announce());
  }

  /** At most once a second: has another process changed memory since? Then every cache here is stale. */
  look(now = Date.now()): void {
    if (now - this.lookedAt < LOOK_EVERY_MS) return;
    this.lookedAt = now;
    this.catchUp();
  }

  private announce(): void {
    if (this.applying) return;
    // Another process's change not seen yet must not be hidden by this one's revision.
    this.catchUp();
    this.seen = `${this.me}:${++this.count}`;
    this.state.set(REVISION_KEY, this.seen);
  }

  private catchUp(): void {
    const current = this.state.get(REVISION_KEY);
    if (current === this.seen) return;
    this.seen = current;
    this.applying = true;
    try {
      this.store.changedElsewhere([SHARED_SCOPE]);
    } finally {
      this.applying = false;
    }
  }
}
