import { IcsCalendar, type BusyCalendar } from './calendar.js';
import { GoogleCalendar } from './google-calendar.js';
import type { Clock } from './types.js';

/** The calendar the settings name: an ICS URL or file, Google Calendar, or none. */
export function calendarFor(settings: { icsUrl: string; googleTokenPath?: string | undefined }, clock: Clock): BusyCalendar | null {
  if (settings.icsUrl) return new IcsCalendar(settings.icsUrl, clock);
  if (settings.googleTokenPath) return new GoogleCalendar(settings.googleTokenPath, clock);
  return null;
}
