import type { LoadedConfig } from '../config/index.js';
import type { SchedulerSettings } from './types.js';

/** Whether the scheduler runs: `scheduler.enabled`, or mode `auto`. */
export function schedulerEnabled(config: LoadedConfig): boolean {
  const { values } = config;
  return values['scheduler.enabled'] || values['mode'] === 'auto';
}

export function schedulerSettings(config: LoadedConfig): SchedulerSettings {
  const { values } = config;
  return {
    sleepStart: values['scheduler.sleep_start'],
    sleepEnd: values['scheduler.sleep_end'],
    idleThresholdMs: values['scheduler.idle_threshold_minutes'] * 60_000,
    minWindowMs: values['scheduler.min_window_minutes'] * 60_000,
    icsUrl: values['scheduler.calendar.ics_url'].trim(),
  };
}

/** Why the scheduler is off, for /status and the CLI. */
export function schedulerOffReason(config: LoadedConfig): string {
  const { values } = config;
  return `off: mode is ${values['mode']} and scheduler.enabled is false (set scheduler.enabled: true, or mode: auto)`;
}
