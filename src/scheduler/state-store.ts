import { z } from 'zod';
import type { Db } from '../store/index.js';
import type { SchedulerStateName, StepOutcome, StepRecord, WindowSourceName } from './types.js';

/** The scheduler's persisted row (migration 11), read back with its columns checked. */
export interface PersistedScheduler {
  state: SchedulerStateName;
  since: number;
  reason: string;
  windowSources: WindowSourceName[];
  windowUntil: number | null;
  step: (StepRecord & { pending: boolean }) | null;
  lastStep: { id: string; outcome: StepOutcome; endedAt: number } | null;
  stepsDone: number;
  stepsAbandoned: number;
}

const rowSchema = z.object({
  state: z.enum(['IDLE_WAIT', 'WINDOW_OPEN', 'UPDATING', 'PAUSING']),
  since: z.number(),
  reason: z.string(),
  window_sources: z.string().nullable(),
  window_until: z.number().nullable(),
  step_id: z.string().nullable(),
  step_batch: z.string().nullable(),
  step_started_at: z.number().nullable(),
  step_pending: z.number(),
  last_step_id: z.string().nullable(),
  last_step_outcome: z.enum(['done', 'abandoned', 'failed', 'interrupted']).nullable(),
  last_step_ended_at: z.number().nullable(),
  steps_done: z.number(),
  steps_abandoned: z.number(),
});
const sourcesSchema = z.array(z.enum(['sleep_hours', 'keyboard_idle', 'proxy_idle', 'calendar']));

/**
 * Where the scheduler keeps its state and its window history: the personal install's database
 * (SchedulerStateStore), or a team node's memory (MemorySchedulerState: on a node the team store's
 * `rl_steps` and sample claims already keep a cut step's batch, so nothing here must outlive it).
 */
export interface SchedulerState {
  /** the persisted state, or undefined on a first start */
  read(): PersistedScheduler | undefined;
  /** writes the state; a window that opens or closes with it is added to (or ended in) the history */
  write(state: PersistedScheduler, at: number): void;
  /** the windows that overlap [from, to], oldest first (at most `limit`, the latest) */
  windows(from: number, to: number, limit?: number): SchedulerWindow[];
}

/** Reads and writes the one scheduler row; every transition is written before it takes effect. */
export class SchedulerStateStore implements SchedulerState {
  private readonly readStatement;
  private readonly writeStatement;
  private readonly openWindow;
  private readonly closeWindow;
  private readonly writeWithWindow;

  constructor(private readonly db: Db) {
    this.openWindow = db.prepare<[number, string]>('INSERT INTO scheduler_windows (opened_at, sources) VALUES (?, ?)');
    this.closeWindow = db.prepare<[number, string]>('UPDATE scheduler_windows SET closed_at = ?, close_reason = ? WHERE closed_at IS NULL');
    this.readStatement = db.prepare<[], unknown>('SELECT * FROM scheduler_state WHERE id = 1');
    this.writeStatement = db.prepare(`
      INSERT INTO scheduler_state (id, state, since, reason, window_sources, window_until, step_id, step_batch, step_started_at, step_pending,
                                   last_step_id, last_step_outcome, last_step_ended_at, steps_done, steps_abandoned, updated_at)
      VALUES (1, @state, @since, @reason, @window_sources, @window_until, @step_id, @step_batch, @step_started_at, @step_pending,
              @last_step_id, @last_step_outcome, @last_step_ended_at, @steps_done, @steps_abandoned, @updated_at)
      ON CONFLICT(id) DO UPDATE SET state = excluded.state, since = excluded.since, reason = excluded.reason,
        window_sources = excluded.window_sources, window_until = excluded.window_until, step_id = excluded.step_id,
        step_batch = excluded.step_batch, step_started_at = excluded.step_started_at, step_pending = excluded.step_pending,
        last_step_id = excluded.last_step_id, last_step_outcome = excluded.last_step_outcome, last_step_ended_at = excluded.last_step_ended_at,
        steps_done = excluded.steps_done, steps_abandoned = excluded.steps_abandoned, updated_at = excluded.updated_at`);
    this.writeWithWindow = db.transaction((state: PersistedScheduler, at: number) => {
      const before = this.readStatement.get() as { state?: string } | undefined;
      const wasOpen = isOpenState(before?.state);
      const open = isOpenState(state.state);
      if (wasOpen && !open) this.closeWindow.run(at, state.reason);
      if (!wasOpen && open) {
        this.closeWindow.run(at, 'a new window opened');
        this.openWindow.run(at, JSON.stringify(state.windowSources));
      }
      this.writeRow(state, at);
    });
  }

  /** The persisted row, or undefined on a first start. A row this build cannot read throws. */
  read(): PersistedScheduler | undefined {
    const raw = this.readStatement.get();
    if (raw === undefined) return undefined;
    const row = rowSchema.parse(raw);
    return {
      state: row.state,
      since: row.since,
      reason: row.reason,
      windowSources: row.window_sources ? sourcesSchema.parse(JSON.parse(row.window_sources)) : [],
      windowUntil: row.window_until,
      step:
        row.step_id === null
          ? null
          : {
              id: row.step_id,
              batch: row.step_batch === null ? null : (JSON.parse(row.step_batch) as unknown),
              startedAt: row.step_started_at ?? row.since,
              pending: row.step_pending === 1,
            },
      lastStep:
        row.last_step_id === null || row.last_step_outcome === null
          ? null
          : { id: row.last_step_id, outcome: row.last_step_outcome, endedAt: row.last_step_ended_at ?? 0 },
      stepsDone: row.steps_done,
      stepsAbandoned: row.steps_abandoned,
    };
  }

  /**
   * Writes the state; a window that opens or closes with it is added to (or ended in) the window
   * history in the same transaction.
   */
  write(state: PersistedScheduler, at: number): void {
    this.writeWithWindow(state, at);
  }

  /** The windows that overlap [from, to], oldest first (the dashboard's timeline). */
  windows(from: number, to: number, limit?: number): SchedulerWindow[] {
    return schedulerWindows(this.db, from, to, limit);
  }

  private writeRow(state: PersistedScheduler, at: number): void {
    this.writeStatement.run({
      state: state.state,
      since: state.since,
      reason: state.reason,
      window_sources: JSON.stringify(state.windowSources),
      window_until: state.windowUntil,
      step_id: state.step?.id ?? null,
      step_batch: state.step ? JSON.stringify(state.step.batch ?? null) : null,
      step_started_at: state.step?.startedAt ?? null,
      step_pending: state.step?.pending ? 1 : 0,
      last_step_id: state.lastStep?.id ?? null,
      last_step_outcome: state.lastStep?.outcome ?? null,
      last_step_ended_at: state.lastStep?.endedAt ?? null,
      steps_done: state.stepsDone,
      steps_abandoned: state.stepsAbandoned,
      updated_at: at,
    });
  }
}

/** UPDATING is a step inside an open window; PAUSING is the window closing under a step. */
export function isOpenState(state: string | undefined): boolean {
  return state === 'WINDOW_OPEN' || state === 'UPDATING';
}

export interface SchedulerWindow {
  opened_at: number;
  /** null: still open */
  closed_at: number | null;
  sources: WindowSourceName[];
  close_reason: string | null;
}

/** The recorded windows that overlap [from, to], oldest first (at most `limit`, the latest). */
export function schedulerWindows(db: Db, from: number, to: number, limit = 1_000): SchedulerWindow[] {
  const rows = db
    .prepare<[number, number, number], { opened_at: number; closed_at: number | null; sources: string; close_reason: string | null }>(
      `SELECT opened_at, closed_at, sources, close_reason FROM scheduler_windows
       WHERE opened_at <= ? AND (closed_at IS NULL OR closed_at >= ?) ORDER BY opened_at DESC LIMIT ?`,
    )
    .all(to, from, limit);
  return rows.reverse().map((row) => ({ ...row, sources: sourcesSchema.catch([]).parse(parseOrNull(row.sources)) }));
}

function parseOrNull(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
