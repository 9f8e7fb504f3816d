import type { LoadedConfig } from '../config/index.js';
import { lastRecordedMainTurn } from '../conversation/index.js';
import type { Db } from '../store/index.js';
import type { CalendarStatus } from './calendar.js';
import { calendarFor } from './calendars.js';
import { probeKeyboardIdle } from './keyboard-idle.js';
import { schedulerSettings } from './settings.js';
import { SleepHours } from './sleep-hours.js';
import { SchedulerStateStore, type PersistedScheduler } from './state-store.js';
import { systemClock, type ExpectedWindow, type WindowDecision } from './types.js';
import { decideWindow, expectWindows, type KeyboardReading } from './window.js';

export interface SchedulePreview {
  decision: WindowDecision;
  expected: ExpectedWindow[];
  keyboard: KeyboardReading;
  calendar: CalendarStatus | null;
  /** what the last run persisted, when a database was given and holds it */
  persisted: PersistedScheduler | undefined;
}

/**
 * What the scheduler would see on this machine now, without a running proxy: the keyboard probed
 * once, the calendar loaded once, the last main turn and the persisted state read from the store
 * (read-only). For `metaclaw scheduler next-window` while stopped and for `metaclaw doctor`.
 */
export async function previewSchedule(config: LoadedConfig, db: Db | undefined): Promise<SchedulePreview> {
  const settings = schedulerSettings(config);
  const calendar = calendarFor(settings, systemClock);
  const [probe] = await Promise.all([probeKeyboardIdle(), calendar?.refresh()]);
  let keyboard: KeyboardReading;
  if (!probe.available) keyboard = { available: false, reason: probe.reason };
  else {
    try {
      keyboard = { available: true, method: probe.method, idleMs: await probe.read(), error: null };
    } catch (error) {
      keyboard = { available: true, method: probe.method, idleMs: null, error: (error as Error).message };
    }
  }
  let lastMainTurnAt: number | null = null;
  let persisted: PersistedScheduler | undefined;
  if (db) {
    lastMainTurnAt = lastRecordedMainTurn(db);
    const hasTable = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'scheduler_state'").get() !== undefined;
    persisted = hasTable ? new SchedulerStateStore(db).read() : undefined;
  }
  const inputs = {
    sleep: new SleepHours(settings.sleepStart, settings.sleepEnd),
    keyboard,
    proxy: { lastMainTurnAt, active: 0 },
    calendar,
    idleThresholdMs: settings.idleThresholdMs,
    minWindowMs: settings.minWindowMs,
  };
  const now = Date.now();
  return { decision: decideWindow(now, inputs, false), expected: expectWindows(now, inputs), keyboard, calendar: calendar?.status() ?? null, persisted };
}
