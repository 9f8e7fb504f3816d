import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import ical from 'node-ical';
import { errorMessage } from '../errors.js';
import type { Clock, Interval } from './types.js';

const DAY_MS = 86_400_000;
/** Busy time is expanded this far ahead of each load (the next window may be days away). */
const HORIZON_MS = 8 * DAY_MS;
const MAX_BYTES = 10 * 1024 * 1024;
const FETCH_TIMEOUT_MS = 30_000;

export interface CalendarStatus {
  source: string;
  loaded_at: string | null;
  events: number;
  busy_intervals: number;
  /** events left out of the last good load: their recurrence could not be expanded (e.g. every minute) */
  skipped_events: number;
  error: string | null;
}

/** Where busy time comes from: an ICS document, or Google Calendar's free/busy API. */
export interface BusySource {
  /** how the source is shown (never a secret URL path) */
  readonly label: string;
  /** busy stretches between `from` and `to`, merged and sorted, and how many events they came from */
  busy(from: number, to: number): Promise<Busy>;
}

/** Busy time, merged and sorted; `skipped`: events whose recurrence could not be expanded, left out. */
export interface Busy {
  intervals: Interval[];
  events: number;
  skipped?: number;
}

/**
 * Busy time from a calendar, loaded in the background and kept between loads. A failed load keeps
 * the last good busy time and says why in `status()`.
 */
export class BusyCalendar {
  private busy: Interval[] = [];
  private events = 0;
  private skipped = 0;
  private loadedAt: number | null = null;
  private error: string | null = null;
  private loading: Promise<void> | undefined;

  constructor(
    private readonly from: BusySource,
    private readonly clock: Clock,
  ) {}

  /** Loads the calendar now (one load at a time); never throws. */
  refresh(): Promise<void> {
    this.loading ??= this.load().finally(() => (this.loading = undefined));
    return this.loading;
  }

  /** The busy stretch containing `t` (overlapping events merged), or null. */
  intervalAt(t: number): Interval | null {
    return this.busy.find((interval) => interval.start <= t && t < interval.end) ?? null;
  }

  /** Busy stretches that start after `t`, in order. */
  startingAfter(t: number): Interval[] {
    return this.busy.filter((interval) => interval.start > t);
  }

  get loaded(): boolean {
    return this.loadedAt !== null;
  }

  status(): CalendarStatus {
    return {
      source: this.from.label,
      loaded_at: this.loadedAt === null ? null : new Date(this.loadedAt).toISOString(),
      events: this.events,
      busy_intervals: this.busy.length,
      skipped_events: this.skipped,
      error: this.error,
    };
  }

  private async load(): Promise<void> {
    try {
      const now = this.clock.now();
      const { intervals, events, skipped } = await this.from.busy(now - DAY_MS, now + HORIZON_MS);
      this.busy = intervals;
      this.events = events;
      this.skipped = skipped ?? 0;
      this.loadedAt = now;
      this.error = null;
    } catch (error) {
      this.error = errorMessage(error);
    }
  }
}

/**
 * An ICS calendar (a file path, or an http(s) or webcal URL: any calendar app can publish one).
 * Recurring events are expanded with their exceptions (EXDATE) and moved instances (RECURRENCE-ID);
 * all-day events cover the local day; times carry their TZID. Cancelled and free
 * (TRANSP:TRANSPARENT) events are not busy.
 */
export class IcsCalendar extends BusyCalendar {
  constructor(source: string, clock: Clock) {
    super(new IcsSource(source), clock);
  }
}

/**
 * An ICS document, read at every load and parsed again only when its text changed since the last
 * good parse: every node reloads its calendar every 15 minutes, node-ical parses synchronously, and
 * a calendar mostly stays the same. Its busy time is still expanded at every load (the window moves).
 */
class IcsSource implements BusySource {
  readonly label: string;
  private parsed: { sha256: string; calendar: ical.CalendarResponse } | undefined;

  constructor(private readonly source: string) {
    this.label = describeSource(source);
  }

  async busy(from: number, to: number): Promise<Busy> {
    const text = await readCalendar(this.source);
    const sha256 = createHash('sha256').update(text).digest('hex');
    if (this.parsed?.sha256 !== sha256) this.parsed = { sha256, calendar: ical.sync.parseICS(text) };
    return busyOf(this.parsed.calendar, from, to);
  }
}

/** The busy time of an ICS document between `from` and `to`, merged and sorted. */
export function busyIntervals(text: string, from: number, to: number): Busy {
  return busyOf(ical.sync.parseICS(text), from, to);
}

/** The busy time of a parsed calendar between `from` and `to` (it is only read: a parse serves many loads). */
function busyOf(parsed: ical.CalendarResponse, from: number, to: number): Busy {
  const raw: Interval[] = [];
  let events = 0;
  let skipped = 0;
  for (const event of Object.values(parsed)) {
    if (!event || event.type !== 'VEVENT') continue;
    // A file from anywhere: an event without a start (node-ical types it as always there) is skipped.
    if (!((event.start as unknown) instanceof Date)) continue;
    events++;
    if (event.recurrenceid) continue; // a moved instance: expanded through its base event
    let instances: ReturnType<typeof ical.expandRecurringEvent>;
    try {
      instances = ical.expandRecurringEvent(event, { from: new Date(from), to: new Date(to), expandOngoing: true });
    } catch {
      // One event the expander gives up on (a rule every minute or second passes its iteration
      // cap) must not cost the whole calendar: it is left out and counted.
      skipped++;
      continue;
    }
    for (const instance of instances) {
      if (!isBusy(instance.event)) continue;
      const start = instance.start.getTime();
      // An event without an end lasts no time (RFC 5545), an all-day one without an end, its day.
      let end = instance.end.getTime();
      if (!(end > start) && instance.isFullDay) end = start + DAY_MS;
      if (end > start && end > from && start < to) raw.push({ start, end });
    }
  }
  return { intervals: merge(raw), events, skipped };
}

function isBusy(event: { status?: string; transparency?: string }): boolean {
  return event.status !== 'CANCELLED' && event.transparency !== 'TRANSPARENT';
}

export function merge(intervals: Interval[]): Interval[] {
  const sorted = [...intervals].sort((a, b) => a.start - b.start);
  const merged: Interval[] = [];
  for (const interval of sorted) {
    const last = merged.at(-1);
    if (last && interval.start <= last.end) last.end = Math.max(last.end, interval.end);
    else merged.push({ ...interval });
  }
  return merged;
}

async function readCalendar(source: string): Promise<string> {
  if (!/^(https?|webcal):\/\//i.test(source)) {
    const text = await readFile(source.startsWith('file://') ? new URL(source) : source, 'utf8');
    if (text.length > MAX_BYTES) throw new Error(`the calendar file is larger than ${MAX_BYTES / 1024 / 1024} MiB`);
    return text;
  }
  const { url, headers } = calendarRequest(source);
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), headers });
  } catch (error) {
    // fetch's own messages can quote the whole URL, secret path and all; they go to the log and
    // /status, so neither the message nor the error itself (as a cause) is passed on.
    // eslint-disable-next-line preserve-caught-error
    throw new Error(`${describeSource(source)} could not be fetched: ${redactUrl(errorMessage(error), source, url)}`);
  }
  if (!response.ok) throw new Error(`${describeSource(source)} answered HTTP ${response.status}`);
  const declared = Number(response.headers.get('content-length') ?? 0);
  if (declared > MAX_BYTES) throw new Error(`the calendar is larger than ${MAX_BYTES / 1024 / 1024} MiB`);
  const text = await response.text();
  if (text.length > MAX_BYTES) throw new Error(`the calendar is larger than ${MAX_BYTES / 1024 / 1024} MiB`);
  if (!text.includes('BEGIN:VCALENDAR')) throw new Error(`${describeSource(source)} did not answer with an ICS calendar`);
  return text;
}

/**
 * The URL fetched and its headers. A user and password in the URL (a private feed behind basic
 * auth: Nextcloud, Fastmail, a self-hosted server) go in an Authorization header: fetch refuses a
 * URL that carries them.
 */
function calendarRequest(source: string): { url: string; headers: Record<string, string> } {
  const headers: Record<string, string> = { accept: 'text/calendar, */*' };
  const text = source.replace(/^webcal:/i, 'https:');
  if (!URL.canParse(text)) throw new Error('scheduler.calendar.ics_url is not a valid URL');
  const url = new URL(text);
  if (url.username || url.password) {
    const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
    headers['authorization'] = `Basic ${Buffer.from(credentials).toString('base64')}`;
    url.username = '';
    url.password = '';
  }
  return { url: url.href, headers };
}

/** `message` with the calendar URL (as configured, or as fetched) replaced by its shown form. */
function redactUrl(message: string, source: string, fetched: string): string {
  return [source, fetched].reduce((text, secret) => text.split(secret).join(describeSource(source)), message);
}

/** A calendar URL often holds a secret token (Google's "secret address"): only its host is shown. */
export function describeSource(source: string): string {
  if (!/^(https?|webcal):\/\//i.test(source)) return source;
  try {
    const url = new URL(source.replace(/^webcal:/i, 'https:'));
    return `${url.protocol}//${url.host}/…`;
  } catch {
    return 'an unreadable URL';
  }
}
