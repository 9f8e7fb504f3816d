import { join } from 'node:path';
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
    googleTokenPath: googleTokenPath(config),
  };
}

/** Google Calendar is read when no ICS URL is set and its client file or token path is (MetaClaw's keys). */
export function googleTokenPath(config: LoadedConfig): string | undefined {
  const { values } = config;
  if (values['scheduler.calendar.ics_url'].trim()) return undefined;
  if (!values['scheduler.calendar.credentials_path'] && !values['scheduler.calendar.token_path']) return undefined;
  return values['scheduler.calendar.token_path'] || join(config.paths.home, 'calendar_token.json');
}

/** Why the scheduler is off, for /status and the CLI. */
export function schedulerOffReason(config: LoadedConfig): string {
  const { values } = config;
  return `off: mode is ${values['mode']} and scheduler.enabled is false (set scheduler.enabled: true, or mode: auto)`;
}
