import type { Db } from '../store/index.js';
import type { TurnType } from './signals.js';

/**
 * When the user last talked to their agent through the proxy: the start of the latest main turn
 * and how many main turns are being answered now. Kept in memory on the proxy's thread (a counter
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

  /** A request of `turnType` started at `at`; call the returned function once it is answered. */
  begin(turnType: TurnType, at: number): () => void {
    if (turnType !== 'main') return () => {};
    this.running++;
    this.last = Math.max(this.last ?? 0, at);
    for (const listener of this.listeners) listener();
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.running--;
    };
  }

  /** Start of the latest main turn (ms since the epoch), or null when there has never been one. */
  get lastMainTurnAt(): number | null {
    return this.last;
  }

  /** Main turns being answered now. */
  get active(): number {
    return this.running;
  }

  /** Called (synchronously, so keep it cheap) whenever a main turn starts. */
  onMainTurn(listener: () => void): void {
    this.listeners.push(listener);
  }
}

/** Start of the newest recorded main turn (by the started_at index), or null; a side turn (a title, a summary) is not the user. */
export function lastRecordedMainTurn(db: Db): number | null {
  return (
    db.prepare<[], { started_at: number }>("SELECT started_at FROM turns WHERE turn_type = 'main' ORDER BY started_at DESC LIMIT 1").get()?.started_at ?? null
  );
}
