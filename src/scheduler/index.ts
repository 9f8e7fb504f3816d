export { Scheduler, type SchedulerDeps, type SchedulerStatus, type StepResult, type MainTurns } from './scheduler.js';
export { schedulerEnabled, schedulerSettings, schedulerOffReason } from './settings.js';
export { probeKeyboardIdle, type KeyboardIdleProbe, type KeyboardIdleReader } from './keyboard-idle.js';
export { IcsCalendar, busyIntervals, describeSource, type CalendarStatus } from './calendar.js';
export { SleepHours } from './sleep-hours.js';
export { decideWindow, expectWindows, type WindowInputs, type KeyboardReading } from './window.js';
export { systemClock } from './types.js';
export type * from './types.js';
export { previewSchedule, type SchedulePreview } from './preview.js';
