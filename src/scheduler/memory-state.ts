import { isOpenState, type PersistedScheduler, type SchedulerState, type SchedulerWindow } from './state-store.js';

/** The windows a node keeps: a day of windows every 15 min is about 100, so a week fits. */
const MAX_WINDOWS = 1_000;

/**
 * The scheduler's state in memory, for a node of a team store: the window logic is the personal
 * install's, but a node has no SQLite database, and a step the window cut is kept by the team
 * store (its samples go back to the buffer when the step is recorded abandoned). The history is
 * this node's since it started.
 */
export class MemorySchedulerState implements SchedulerState {
  private state: PersistedScheduler | undefined;
  private readonly history: SchedulerWindow[] = [];

  read(): PersistedScheduler | undefined {
    return this.state;
  }

  write(state: PersistedScheduler, at: number): void {
    const wasOpen = isOpenState(this.state?.state);
    const open = isOpenState(state.state);
    const current = this.history.at(-1);
    if (wasOpen && !open && current && current.closed_at === null) Object.assign(current, { closed_at: at, close_reason: state.reason });
    if (!wasOpen && open) {
      if (current && current.closed_at === null) Object.assign(current, { closed_at: at, close_reason: 'a new window opened' });
      this.history.push({ opened_at: at, closed_at: null, sources: [...state.windowSources], close_reason: null });
      if (this.history.length > MAX_WINDOWS) this.history.shift();
    }
    this.state = state;
  }

  windows(from: number, to: number, limit = MAX_WINDOWS): SchedulerWindow[] {
    return this.history
      .filter((window) => window.opened_at <= to && (window.closed_at === null || window.closed_at >= from))
      .slice(-limit)
      .map((window) => ({ ...window, sources: [...window.sources] }));
  }
}
