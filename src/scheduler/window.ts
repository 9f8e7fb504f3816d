import type { BusyCalendar } from './calendar.js';
import type { SleepHours } from './sleep-hours.js';
import type { ExpectedWindow, Interval, SourceReading, WindowDecision, WindowSourceName } from './types.js';

/** The last keyboard-idle reading: idle ms when the machine can tell, else why not. */
export type KeyboardReading = { available: true; method: string; idleMs: number | null; error: string | null } | { available: false; reason: string };

/**
 * Why the idle sources are not read on a team node: a server has no keyboard, and one node sees only
 * its share of the team's main turns, so neither tells whether the team is away.
 */
export const NODE_IDLE_REASON = 'not read on a team node: keyboard idle is a desktop signal, and one node sees only its share of the team’s turns';

/** Everything a decision reads, at one moment. */
export interface WindowInputs {
  sleep: SleepHours;
  keyboard: KeyboardReading;
  /**
   * main turns through the proxy: the start of the latest, and how many are being answered; null on
   * a team node, where idle time neither opens a window nor (main turns) vetoes one
   */
  proxy: { lastMainTurnAt: number | null; active: number } | null;
  calendar: BusyCalendar | null;
  idleThresholdMs: number;
  minWindowMs: number;
}

/**
 * Whether a training window is open at `now`. It opens when any source says so: sleep hours, a
 * calendar event (the user is in a meeting), or idle time (the keyboard's where the machine can
 * tell; no main turns through the proxy where it cannot). No main turn through the proxy for
 * `idleThresholdMs` is also required of every source: a user chatting from a phone at 2 a.m. is
 * not asleep. A window whose end is known (sleep hours, a meeting) opens only when it has at least
 * `minWindowMs` left; once open (`wasOpen`) it stays open until that end. Idle time has no known
 * end, so it opens a window as soon as the threshold is reached. On a team node (`proxy` null)
 * only sleep hours and the calendar count, and main turns do not veto.
 */
export function decideWindow(now: number, inputs: WindowInputs, wasOpen: boolean): WindowDecision {
  const readings = readSources(now, inputs);
  const open = readings.filter((reading) => reading.available && reading.open);
  const proxy = readings.find((reading) => reading.source === 'proxy_idle')!;
  const base = { at: now, readings };
  if (!proxyQuiet(now, inputs)) return { ...base, open: false, sources: [], until: null, blockedBy: `chatting through the proxy (${proxy.detail})` };
  if (open.length === 0) return { ...base, open: false, sources: [], until: null, blockedBy: null };
  const unbounded = open.filter((reading) => reading.until === null);
  if (unbounded.length > 0) return { ...base, open: true, sources: open.map((reading) => reading.source), until: null, blockedBy: null };
  const until = knownEnd(now, inputs);
  if (!wasOpen && until - now < inputs.minWindowMs)
    return {
      ...base,
      open: false,
      sources: [],
      until: null,
      blockedBy: `the window would last ${minutes(until - now)} (until ${clockTime(until)}), less than scheduler.min_window_minutes (${minutes(inputs.minWindowMs)})`,
    };
  return { ...base, open: true, sources: open.map((reading) => reading.source), until, blockedBy: null };
}

/** When windows are expected next, soonest first (assuming no input meanwhile, for idle sources). */
export function expectWindows(now: number, inputs: WindowInputs): ExpectedWindow[] {
  const expected: ExpectedWindow[] = [];
  // No window opens before the proxy has been quiet for the threshold.
  const quietFrom = quietSince(now, inputs);
  const bounded = (source: WindowSourceName, interval: Interval, what: string) => {
    const at = Math.max(interval.start, quietFrom);
    const until = knownEnd(at, inputs, interval.end);
    if (until - at >= inputs.minWindowMs)
      expected.push({
        source,
        at,
        until,
        detail: `${what} ${clockTime(interval.start)}–${timeOfDay(interval.end)}${at > interval.start ? ', once the proxy is quiet' : ''}`,
      });
  };
  const sleepNow = inputs.sleep.intervalAt(now);
  if (sleepNow) bounded('sleep_hours', sleepNow, 'sleep hours');
  const sleepNext = inputs.sleep.nextAfter(now);
  if (sleepNext) bounded('sleep_hours', sleepNext, 'sleep hours');
  if (inputs.calendar) {
    const busyNow = inputs.calendar.intervalAt(now);
    const candidates = [...(busyNow ? [busyNow] : []), ...inputs.calendar.startingAfter(now)];
    for (const interval of candidates.slice(0, 8)) bounded('calendar', interval, 'calendar busy');
  }
  const keyboard = inputs.keyboard;
  if (keyboard.available && keyboard.idleMs !== null) {
    const at = Math.max(now + Math.max(0, inputs.idleThresholdMs - keyboard.idleMs), quietFrom);
    expected.push({ source: 'keyboard_idle', at, until: null, detail: `after ${minutes(inputs.idleThresholdMs)} without keyboard or mouse input` });
  } else if (!keyboard.available && inputs.proxy) {
    expected.push({
      source: 'proxy_idle',
      at: quietFrom,
      until: null,
      detail: `after ${minutes(inputs.idleThresholdMs)} without a main turn through the proxy`,
    });
  }
  return expected
    .sort((a, b) => a.at - b.at)
    .filter((window, index, all) => all.findIndex((other) => other.source === window.source && other.at === window.at) === index);
}

function proxyQuiet(now: number, inputs: WindowInputs): boolean {
  if (!inputs.proxy) return true;
  const { lastMainTurnAt, active } = inputs.proxy;
  return active === 0 && (lastMainTurnAt === null || now - lastMainTurnAt >= inputs.idleThresholdMs);
}

/** When the proxy will have been quiet for the threshold (assuming no turn meanwhile). */
function quietSince(now: number, inputs: WindowInputs): number {
  if (!inputs.proxy) return now;
  const { lastMainTurnAt, active } = inputs.proxy;
  return active > 0 ? now + inputs.idleThresholdMs : lastMainTurnAt === null ? now : Math.max(now, lastMainTurnAt + inputs.idleThresholdMs);
}

function readSources(now: number, inputs: WindowInputs): SourceReading[] {
  const readings: SourceReading[] = [];
  const sleep = inputs.sleep.intervalAt(now);
  readings.push({
    source: 'sleep_hours',
    open: sleep !== null,
    until: sleep?.end ?? null,
    available: true,
    detail: sleep ? `${inputs.sleep.label}, until ${clockTime(sleep.end)}` : `${inputs.sleep.label} (not now)`,
  });
  const keyboard = inputs.keyboard;
  if (!keyboard.available) readings.push({ source: 'keyboard_idle', open: false, until: null, available: false, detail: keyboard.reason });
  else if (keyboard.idleMs === null)
    readings.push({ source: 'keyboard_idle', open: false, until: null, available: true, detail: `${keyboard.method}: ${keyboard.error ?? 'not read yet'}` });
  else
    readings.push({
      source: 'keyboard_idle',
      open: keyboard.idleMs >= inputs.idleThresholdMs,
      until: null,
      available: true,
      detail: `${keyboard.method}: idle ${minutes(keyboard.idleMs)} (threshold ${minutes(inputs.idleThresholdMs)})`,
    });
  if (!inputs.proxy) readings.push({ source: 'proxy_idle', open: false, until: null, available: false, detail: NODE_IDLE_REASON });
  else {
    const { lastMainTurnAt, active } = inputs.proxy;
    const quiet = proxyQuiet(now, inputs);
    const since = lastMainTurnAt === null ? 'no main turn recorded yet' : `last main turn ${minutes(now - lastMainTurnAt)} ago`;
    readings.push({
      source: 'proxy_idle',
      // Proxy idle opens a window only where the keyboard cannot be read; elsewhere it only vetoes.
      open: quiet && !keyboard.available,
      until: null,
      available: true,
      detail: `${active > 0 ? `${active} main turn(s) being answered; ` : ''}${since}${keyboard.available ? ' (a veto only: the keyboard is read)' : ''}`,
    });
  }
  if (inputs.calendar) {
    const status = inputs.calendar.status();
    const busy = inputs.calendar.intervalAt(now);
    readings.push({
      source: 'calendar',
      open: busy !== null,
      until: busy?.end ?? null,
      available: inputs.calendar.loaded,
      detail: !inputs.calendar.loaded
        ? `${status.source}: ${status.error ?? 'not loaded yet'}`
        : `${status.source}: ${busy ? `busy until ${clockTime(busy.end)}` : 'free now'}${status.skipped_events > 0 ? `; ${status.skipped_events} event(s) left out (a recurrence too dense to expand)` : ''}${status.error ? ` (last load failed: ${status.error})` : ''}`,
    });
  }
  return readings;
}

/** The end of the known-end window from `t`: sleep hours and busy time chained while they touch. */
function knownEnd(t: number, inputs: WindowInputs, atLeast = t): number {
  let end = atLeast;
  for (let guard = 0; guard < 32; guard++) {
    const next = [inputs.sleep.intervalAt(end), inputs.calendar?.intervalAt(end) ?? null].reduce((far, interval) => Math.max(far, interval?.end ?? 0), end);
    if (next <= end) break;
    end = next;
  }
  return Math.max(end, t);
}

export function minutes(ms: number): string {
  const total = Math.round(ms / 60_000);
  return total < 120 ? `${total} min` : `${Math.floor(total / 60)} h ${total % 60} min`;
}

/** Local time of day, with the date when it is not today. */
export function clockTime(t: number): string {
  const date = new Date(t);
  const day = `${date.getFullYear()}-${String(date.getMonth() + 1).padStart(2, '0')}-${String(date.getDate()).padStart(2, '0')}`;
  return date.toDateString() === new Date().toDateString() ? timeOfDay(t) : `${day} ${timeOfDay(t)}`;
}

/** Local HH:MM. */
function timeOfDay(t: number): string {
  const date = new Date(t);
  return `${String(date.getHours()).padStart(2, '0')}:${String(date.getMinutes()).padStart(2, '0')}`;
}
