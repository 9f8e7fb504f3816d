import type { Db } from '../store/index.js';
import type { TurnType } from './signals.js';

/**
 * When the user last talked to their agent through the proxy: when the latest main turn started
 * or was answered, and how many main turns are being answered now. Kept in memory on the proxy's thread (a counter
 * and a time, nothing on the request path waits), seeded at start from the turn records, and read
 * by the scheduler: no training window opens while the user is chatting, wherever from.
 */
export class MainTurnActivity {
  private last: number | null;
  private running = 0;
  private readonly listeners: Array<() => void> = [];

  constructor(lastRecorded: number | null) {
    this.last = lastRecorded;
  }

  /** A request of `turnType` started at `at`; call the returned function with the time it was answered. */
  begin(turnType: TurnType, at: number): (endedAt: number) => void {
    if (turnType !== 'main') return () => {};
    this.running++;
    this.touch(at);
    for (const listener of this.listeners) listener();
    let ended = false;
    return (endedAt) => {
      if (ended) return;
      ended = true;
      this.running--;
      // A long answer (a stream of minutes) counts from its end: the user was reading it.
      this.touch(endedAt);
      // The scheduler re-decides then too: its status would count the answered turn until its next tick.
      for (const listener of this.listeners) listener();
    };
  }

  private touch(at: number): void {
    this.last = Math.max(this.last ?? 0, at);
  }

  /** When the latest main turn started or was answered (ms since the epoch), or null when there has never been one. */
  get lastMainTurnAt(): number | null {
    return this.last;
  }

  /** Main turns being answered now. */
  get active(): number {
    return this.running;
  }

  /** Called (synchronously, so keep it cheap) whenever a main turn starts or is answered. */
  onMainTurn(listener: () => void): void {
    this.listeners.push(listener);
  }
}

/** When the newest recorded main turn (by the started_at index) was answered, or null; a side turn (a title, a summary) is not the user. */
export function lastRecordedMainTurn(db: Db): number | null {
  const row = db
    .prepare<[], { at: number }>("SELECT started_at + COALESCE(duration_ms, 0) AS at FROM turns WHERE turn_type = 'main' ORDER BY started_at DESC LIMIT 1")
    .get();
  return row ? Math.round(row.at) : null;
}
