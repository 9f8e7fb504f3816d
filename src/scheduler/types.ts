/**
 * The scheduler's vocabulary (issue 14, part 9): where a training window comes from, what the
 * scheduler decided and why. The runtime composes the sources; `Scheduler` drives the states.
 */

/** Wall-clock time in ms since the epoch; injectable so the state machine runs on a fake clock. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** What can open a window. */
export type WindowSourceName = 'sleep_hours' | 'keyboard_idle' | 'proxy_idle' | 'calendar';

/** A stretch of time [start, end), in ms since the epoch. */
export interface Interval {
  start: number;
  end: number;
}

export type SchedulerStateName = 'IDLE_WAIT' | 'WINDOW_OPEN' | 'UPDATING' | 'PAUSING';

export interface SchedulerSettings {
  /** HH:MM, local time; start after end wraps midnight */
  sleepStart: string;
  sleepEnd: string;
  idleThresholdMs: number;
  minWindowMs: number;
  /** scheduler.calendar.ics_url: a file path or an http(s)/webcal URL; empty: no calendar */
  icsUrl: string;
  /** Google Calendar's token file, when it is the calendar (no ICS URL, Google keys set) */
  googleTokenPath?: string | undefined;
}

/** One source's answer at one moment. */
export interface SourceReading {
  source: WindowSourceName;
  /** this source alone would open a window now */
  open: boolean;
  /** when the window it opens is expected to end; null when unknown (idle lasts until input) */
  until: number | null;
  /** false when the source cannot be read on this machine (then `detail` says why) */
  available: boolean;
  detail: string;
}

/** What the scheduler decided at one moment, from every source. */
export interface WindowDecision {
  at: number;
  open: boolean;
  /** the sources holding the window open */
  sources: WindowSourceName[];
  /** expected end, when every source holding it open has a known end; null: until activity */
  until: number | null;
  /** why it is closed when a source could open it: chatting through the proxy (always a veto), or too short a window */
  blockedBy: string | null;
  readings: SourceReading[];
}

/** When a window is expected next, by which source. */
export interface ExpectedWindow {
  source: WindowSourceName;
  /** ms since the epoch */
  at: number;
  /** expected end, when known */
  until: number | null;
  detail: string;
}

/** A training step the trainer asked to run in the window: its id and the batch it covers. */
export interface StepRecord {
  id: string;
  /** opaque to the scheduler (e.g. the sample turn ids): persisted so a restart loses nothing */
  batch: unknown;
  startedAt: number;
}

export type StepOutcome = 'done' | 'abandoned' | 'failed' | 'interrupted';
