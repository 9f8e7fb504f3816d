import assert from 'node:assert/strict';
import { readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, describe, mock, test } from 'node:test';
import ical from 'node-ical';
import { MainTurnActivity } from '../src/conversation/index.js';
import {
  IcsCalendar,
  probeKeyboardIdle,
  Scheduler,
  SchedulerStateStore,
  SleepHours,
  type KeyboardIdleProbe,
  type SchedulerSettings,
} from '../src/scheduler/index.js';
import { openDatabase, type Db } from '../src/store/index.js';
import { tempHome } from './support/proxy.js';

const MINUTE = 60_000;
const FIXTURE = join(import.meta.dirname, 'fixtures', 'scheduler', 'weekly-exdate.ics');

const folders: string[] = [];
after(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});
function databasePath(): string {
  const folder = tempHome('metaclaw-scheduler-');
  folders.push(folder);
  return join(folder, 'metaclaw.db');
}

class FakeClock {
  constructor(public t: number) {}
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

const noKeyboard = async (): Promise<KeyboardIdleProbe> => ({ available: false, reason: 'no keyboard in this test' });
/** A keyboard whose idle time the test sets. */
function keyboard(idle: { ms: number }) {
  return async (): Promise<KeyboardIdleProbe> => ({ available: true, method: 'test keyboard', read: async () => idle.ms });
}

function settings(overrides: Partial<SchedulerSettings> = {}): SchedulerSettings {
  // Sleep hours that never include the test's times unless a test says so.
  return { sleepStart: '03:00', sleepEnd: '03:01', idleThresholdMs: 30 * MINUTE, minWindowMs: 15 * MINUTE, icsUrl: '', ...overrides };
}

function scheduler(
  db: Db,
  clock: FakeClock,
  activity: MainTurnActivity,
  options: { settings?: Partial<SchedulerSettings>; keyboard?: () => Promise<KeyboardIdleProbe> } = {},
) {
  return new Scheduler({ state: new SchedulerStateStore(db), clock, activity, settings: settings(options.settings), keyboard: options.keyboard ?? noKeyboard });
}

/** Noon on a Monday, no main turn ever, no keyboard: proxy idle has opened a window. */
async function openAtNoon(path = databasePath()) {
  const clock = new FakeClock(new Date(2026, 10, 2, 12, 0).getTime());
  const db = openDatabase(path);
  const activity = new MainTurnActivity(null);
  const s = scheduler(db, clock, activity);
  await s.initialise();
  return { clock, db, activity, s };
}

/** A step that runs until the test lets it end, or until the window's signal aborts it (then it abandons). */
function controllableStep() {
  let finish!: () => void;
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const step = (signal: AbortSignal) =>
    new Promise<string>((resolve, reject) => {
      started();
      finish = () => resolve('trained');
      signal.addEventListener('abort', () => reject(signal.reason as Error));
    });
  return { step, running, finish: () => finish() };
}

describe('scheduler state machine (fake clock, real SQLite store)', () => {
  test('IDLE_WAIT → WINDOW_OPEN → UPDATING → WINDOW_OPEN: a step that ends inside the window is done and nothing waits', async () => {
    const clock = new FakeClock(new Date(2026, 10, 2, 12, 0).getTime());
    const db = openDatabase(databasePath());
    const activity = new MainTurnActivity(clock.t - 5 * MINUTE);
    const s = scheduler(db, clock, activity);
    await s.initialise();
    assert.equal(s.state, 'IDLE_WAIT');
    assert.equal(s.isOpen(), false, 'a main turn 5 minutes ago: the user is chatting');
    clock.advance(26 * MINUTE);
    assert.equal(s.isOpen(), true);
    assert.equal(s.state, 'WINDOW_OPEN');
    assert.match(s.describe(), /proxy_idle/);
    const result = await s.runStep({ id: 'step-1', batch: ['t1', 't2'] }, async () => {
      assert.equal(s.state, 'UPDATING');
      return 'ok';
    });
    assert.deepEqual(result, { ran: true, outcome: 'done', value: 'ok' });
    assert.equal(s.state, 'WINDOW_OPEN');
    assert.equal(s.pendingStep(), null);
    assert.deepEqual(s.status().steps, { done: 1, abandoned: 0 });
    db.close();
  });

  test('a window that closes mid-step (the user chats again): PAUSING, the step is told and abandons, its batch waits and runs in the next window', async () => {
    const { clock, db, activity, s } = await openAtNoon();
    assert.equal(s.state, 'WINDOW_OPEN', 'no main turn ever and no keyboard: proxy idle opens');
    const { step, running } = controllableStep();
    const outcome = s.runStep({ id: 'step-7', batch: { turns: ['a', 'b', 'c', 'd'] } }, step);
    await running;
    assert.equal(s.state, 'UPDATING');
    assert.deepEqual(await s.runStep({ id: 'other', batch: null }, async () => 1), { ran: false, reason: s.describe() }, 'one step at a time');

    clock.advance(MINUTE);
    const end = activity.begin('main', clock.now());
    s.tick();
    const result = await outcome;
    assert.equal(result.ran && result.outcome, 'abandoned');
    assert.equal(s.state, 'IDLE_WAIT', 'PAUSING ends once the step has let go');
    const status = s.status();
    assert.equal(status.last_step?.outcome, 'abandoned');
    assert.match(status.window.blocked_by ?? '', /chatting through the proxy/);
    assert.deepEqual(s.pendingStep()?.batch, { turns: ['a', 'b', 'c', 'd'] });
    assert.equal(s.isOpen(), false);
    end(clock.now());

    clock.advance(29 * MINUTE);
    assert.equal(s.isOpen(), false, 'still within the threshold of the last main turn');
    clock.advance(2 * MINUTE);
    assert.equal(s.isOpen(), true);
    const pending = s.pendingStep()!;
    const other = await s.runStep({ id: 'step-8', batch: [] }, async () => 'trained');
    assert.equal(other.ran, false, 'the pending batch comes first');
    assert.match(other.ran ? '' : other.reason, /step step-7 is pending/);
    const again = await s.runStep({ id: pending.id, batch: pending.batch }, async () => 'trained');
    assert.equal(again.ran && again.outcome, 'done');
    assert.equal(s.pendingStep(), null);
    assert.deepEqual(s.status().steps, { done: 1, abandoned: 1 });
    db.close();
  });

  test('every window is kept in the history with its sources and why it closed; a restart inside a window ends it', async () => {
    const path = databasePath();
    const { clock, db, activity, s } = await openAtNoon(path);
    const noon = clock.now();
    clock.advance(MINUTE);
    const end = activity.begin('main', clock.now());
    s.tick();
    end(clock.now());
    clock.advance(31 * MINUTE);
    assert.equal(s.isOpen(), true, 'proxy idle again after the threshold');
    const reopened = clock.now();
    assert.deepEqual(
      s.windowHistory(noon - MINUTE, clock.now()).map((window) => ({ ...window, close_reason: window.close_reason?.replace(/:.*/, '') ?? null })),
      [
        { opened_at: noon, closed_at: noon + MINUTE, sources: ['proxy_idle'], close_reason: 'window closed' },
        { opened_at: reopened, closed_at: null, sources: ['proxy_idle'], close_reason: null },
      ],
    );
    assert.deepEqual(s.windowHistory(noon + 2 * MINUTE, noon + 3 * MINUTE), [], 'nothing overlaps the gap between them');
    db.close();

    clock.advance(5 * MINUTE);
    const second = openDatabase(path);
    const restarted = scheduler(second, clock, new MainTurnActivity(null));
    const [, last] = restarted.windowHistory(noon, clock.now());
    assert.equal(last?.closed_at, clock.now(), 'the window the process died in ends at the restart');
    assert.match(last?.close_reason ?? '', /restarted in WINDOW_OPEN/);
    second.close();
  });

  test('a step past its point of no return may finish after the window closed: done, then IDLE_WAIT', async () => {
    const { clock, db, activity, s } = await openAtNoon();
    let aborted = false;
    let finish!: () => void;
    const outcome = s.runStep({ id: 'step-2', batch: [] }, (signal) => {
      signal.addEventListener('abort', () => (aborted = true));
      return new Promise<string>((resolve) => (finish = () => resolve('saved')));
    });
    activity.begin('main', clock.now());
    s.tick();
    assert.equal(s.state, 'PAUSING');
    assert.equal(aborted, true);
    assert.equal(s.isOpen(), false);
    finish();
    const result = await outcome;
    assert.equal(result.ran && result.outcome, 'done');
    assert.equal(s.state, 'IDLE_WAIT');
    assert.equal(s.pendingStep(), null);
    db.close();
  });

  test('a restart in PAUSING keeps the cut step pending with its batch, starts over in IDLE_WAIT and resumes it in the next window', async () => {
    const path = databasePath();
    const { clock, db: first, activity, s: before } = await openAtNoon(path);
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    // A step that never reports back, even when told the window closed: the process dies first.
    void before.runStep({ id: 'step-9', batch: ['x', 'y'] }, () => {
      started();
      return new Promise<never>(() => {});
    });
    await running;
    activity.begin('main', clock.now());
    before.tick();
    assert.equal(before.state, 'PAUSING');
    first.close();

    clock.advance(10 * MINUTE);
    const second = openDatabase(path);
    const restartedActivity = new MainTurnActivity(clock.t - 10 * MINUTE);
    const after = scheduler(second, clock, restartedActivity);
    assert.equal(after.state, 'IDLE_WAIT');
    assert.match(after.describe(), /restarted during step step-9 \(PAUSING\)/);
    assert.deepEqual(after.pendingStep(), { id: 'step-9', batch: ['x', 'y'], startedAt: new Date(2026, 10, 2, 12, 0).getTime() });
    assert.equal(after.status().last_step?.outcome, 'interrupted');
    await after.initialise();
    assert.equal(after.isOpen(), false);
    clock.advance(21 * MINUTE);
    assert.equal(after.isOpen(), true);
    const pending = after.pendingStep()!;
    const result = await after.runStep(pending, async () => 'trained');
    assert.equal(result.ran && result.outcome, 'done');
    assert.equal(after.pendingStep(), null);
    second.close();
  });

  test('a restart in UPDATING does the same: the step is interrupted, not lost, and the state is decided again; a stale pending step can be discarded for good', async () => {
    const path = databasePath();
    const { clock, db: first, s: before } = await openAtNoon(path);
    const { step, running } = controllableStep();
    void before.runStep({ id: 'step-3', batch: [1, 2, 3] }, step);
    await running;
    assert.equal(before.state, 'UPDATING');
    first.close();

    const second = openDatabase(path);
    const after = scheduler(second, clock, new MainTurnActivity(null));
    assert.equal(after.state, 'IDLE_WAIT');
    assert.equal(after.pendingStep()?.id, 'step-3');
    await after.initialise();
    assert.equal(after.state, 'WINDOW_OPEN', 'nothing keeps the window closed: it reopens at once');
    assert.equal(after.discardPendingStep('its samples went stale'), true);
    assert.equal(after.pendingStep(), null);
    second.close();
    const third = openDatabase(path);
    assert.equal(scheduler(third, clock, new MainTurnActivity(null)).pendingStep(), null, 'the discard is persisted');
    third.close();
  });
});

describe('window sources', () => {
  test('sleep hours wrap midnight: 23:00–07:00 holds 23:30, 03:00 and 06:59, not 07:00 or noon, and ends the next morning', () => {
    const sleep = new SleepHours('23:00', '07:00');
    const at = (day: number, hour: number, minute = 0) => new Date(2026, 10, day, hour, minute).getTime();
    assert.deepEqual(sleep.intervalAt(at(2, 23, 30)), { start: at(2, 23), end: at(3, 7) });
    assert.deepEqual(sleep.intervalAt(at(3, 3)), { start: at(2, 23), end: at(3, 7) });
    assert.ok(sleep.intervalAt(at(3, 6, 59)));
    assert.equal(sleep.intervalAt(at(3, 7)), null);
    assert.equal(sleep.intervalAt(at(3, 12)), null);
    assert.deepEqual(sleep.nextAfter(at(3, 12)), { start: at(3, 23), end: at(4, 7) });
    const afternoon = new SleepHours('13:00', '14:00');
    assert.deepEqual(afternoon.intervalAt(at(3, 13, 30)), { start: at(3, 13), end: at(3, 14) });
    assert.equal(afternoon.intervalAt(at(3, 14, 30)), null);
    assert.equal(new SleepHours('09:00', '09:00').intervalAt(at(3, 9)), null, 'start equal to end: no window');
  });

  test('sleep hours open a window while the keyboard is in use elsewhere, and close it at their end', async () => {
    const clock = new FakeClock(new Date(2026, 10, 2, 23, 30).getTime());
    const db = openDatabase(':memory:');
    const idle = { ms: 0 };
    const s = scheduler(db, clock, new MainTurnActivity(null), { settings: { sleepStart: '23:00', sleepEnd: '07:00' }, keyboard: keyboard(idle) });
    await s.initialise();
    assert.equal(s.state, 'WINDOW_OPEN');
    assert.deepEqual(s.status().window.sources, ['sleep_hours']);
    assert.equal(s.status().window.until, new Date(2026, 10, 3, 7, 0).toISOString());
    clock.t = new Date(2026, 10, 3, 7, 0).getTime();
    await s.evaluate();
    assert.equal(s.state, 'IDLE_WAIT');
    const next = s.nextWindow().find((window) => window.source === 'sleep_hours');
    assert.equal(next?.at, new Date(2026, 10, 3, 23, 0).getTime());
  });

  test('keyboard idle opens a window only once it reaches the threshold, and input closes it', async () => {
    const clock = new FakeClock(new Date(2026, 10, 2, 12, 0).getTime());
    const db = openDatabase(':memory:');
    const idle = { ms: 10 * MINUTE };
    const s = scheduler(db, clock, new MainTurnActivity(null), { keyboard: keyboard(idle) });
    await s.initialise();
    assert.equal(s.state, 'IDLE_WAIT', 'proxy idle alone does not open a window where the keyboard can be read');
    assert.equal(s.nextWindow()[0]?.source, 'keyboard_idle');
    assert.equal(s.nextWindow()[0]?.at, clock.t + 20 * MINUTE);
    idle.ms = 31 * MINUTE;
    await s.evaluate();
    assert.equal(s.state, 'WINDOW_OPEN');
    assert.deepEqual(s.status().window.sources, ['keyboard_idle']);
    idle.ms = 2_000;
    await s.evaluate();
    assert.equal(s.state, 'IDLE_WAIT');
  });

  test('proxy idle opens a window where the keyboard cannot be read; a main turn vetoes it at once and until the threshold after its answer (a side turn does not), even in sleep hours', async () => {
    const clock = new FakeClock(new Date(2026, 10, 2, 12, 0).getTime());
    const db = openDatabase(':memory:');
    const activity = new MainTurnActivity(clock.t - 40 * MINUTE);
    const s = scheduler(db, clock, activity);
    await s.initialise();
    assert.equal(s.state, 'WINDOW_OPEN');
    assert.deepEqual(s.status().window.sources, ['proxy_idle']);
    activity.begin('side', clock.now())(clock.now());
    assert.equal(s.isOpen(), true, "an agent's own side request is not the user");
    const end = activity.begin('main', clock.now());
    assert.equal(s.isOpen(), false);
    assert.match(s.status().reason, /chatting through the proxy \(1 main turn\(s\) being answered/);
    clock.advance(10 * MINUTE);
    assert.equal(s.isOpen(), false, 'a ten-minute answer is still being streamed');
    end(clock.now());
    clock.advance(MINUTE);
    assert.equal(s.isOpen(), false, 'answered a minute ago: still chatting');
    assert.equal(s.nextWindow()[0]?.at, clock.t + 29 * MINUTE, 'the threshold counts from the end of the answer, not its start');

    // Sleep hours do not override the veto: a user chatting from a phone at night is not asleep.
    const night = new FakeClock(new Date(2026, 10, 2, 23, 30).getTime());
    const chatting = new MainTurnActivity(night.t - 2 * MINUTE);
    const nightly = scheduler(openDatabase(':memory:'), night, chatting, { settings: { sleepStart: '23:00', sleepEnd: '07:00' } });
    await nightly.initialise();
    assert.equal(nightly.state, 'IDLE_WAIT');
    night.advance(28 * MINUTE);
    assert.equal(nightly.isOpen(), true);
  });

  test('status stops counting a main turn as being answered once it is answered, not at the next tick', async () => {
    const clock = new FakeClock(new Date(2026, 10, 2, 12, 0).getTime());
    const activity = new MainTurnActivity(clock.t - 40 * MINUTE);
    const s = scheduler(openDatabase(':memory:'), clock, activity);
    s.start();
    try {
      const settle = () => new Promise((resolve) => setImmediate(resolve));
      const answering = () => s.status().sources.some((reading) => /being answered/.test(reading.detail));
      await settle();
      const end = activity.begin('main', clock.now());
      await settle();
      assert.equal(answering(), true);
      clock.advance(MINUTE);
      end(clock.now());
      await settle();
      assert.equal(answering(), false, 'the answered turn is no longer counted');
      assert.equal(s.isOpen(), false, 'answered a minute ago: still chatting');
    } finally {
      s.stop();
    }
  });

  test('min_window_minutes: a sleep window with 10 minutes left does not open, one with 20 does and stays open to its end', async () => {
    const db = openDatabase(':memory:');
    const clock = new FakeClock(new Date(2026, 10, 3, 6, 50).getTime());
    const idle = { ms: 0 };
    const late = scheduler(db, clock, new MainTurnActivity(null), { settings: { sleepStart: '23:00', sleepEnd: '07:00' }, keyboard: keyboard(idle) });
    await late.initialise();
    assert.equal(late.state, 'IDLE_WAIT');
    assert.match(late.status().window.blocked_by ?? '', /would last 10 min .*less than scheduler\.min_window_minutes \(15 min\)/);

    const early = new FakeClock(new Date(2026, 10, 3, 6, 40).getTime());
    const s = scheduler(openDatabase(':memory:'), early, new MainTurnActivity(null), {
      settings: { sleepStart: '23:00', sleepEnd: '07:00' },
      keyboard: keyboard(idle),
    });
    await s.initialise();
    assert.equal(s.state, 'WINDOW_OPEN');
    early.advance(15 * MINUTE);
    assert.equal(s.isOpen(), true, 'once open, a window stays open until its end');
    early.advance(5 * MINUTE);
    assert.equal(s.isOpen(), false);
  });
});

describe('keyboard idle probes', () => {
  test('each platform probe reports why it cannot read the keyboard here, naming every method tried, and never throws', async () => {
    const path = { PATH: process.env['PATH'] ?? '' };
    const mac = await probeKeyboardIdle('darwin', path);
    assert.deepEqual(mac, { available: false, reason: 'ioreg HIDIdleTime: not installed' });
    const windows = await probeKeyboardIdle('win32', path);
    assert.deepEqual(windows, { available: false, reason: 'GetLastInputInfo (PowerShell): not installed' });
    const headless = await probeKeyboardIdle('linux', path);
    assert.equal(headless.available, false);
    assert.match(
      headless.available ? '' : headless.reason,
      /^xprintidle \(X11\): no X display \(DISPLAY is not set\); GNOME idle monitor \(gdbus\): no desktop session bus$/,
    );
    // A display and a session bus named, but nothing answering on them: each failure is reported.
    const broken = await probeKeyboardIdle('linux', { ...path, DISPLAY: ':97', DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent/bus' });
    assert.equal(broken.available, false);
    assert.match(broken.available ? '' : broken.reason, /^xprintidle \(X11\): .+; GNOME idle monitor \(gdbus\): .+$/);
  });
});

describe('ICS calendar busy time (node-ical)', () => {
  const text = readFileSync(FIXTURE, 'utf8');
  const at = (iso: string) => new Date(iso).getTime();

  async function calendarScheduler(icsUrl: string, iso: string) {
    const clock = new FakeClock(at(iso));
    const idle = { ms: 0 };
    const s = scheduler(openDatabase(':memory:'), clock, new MainTurnActivity(null), { settings: { icsUrl }, keyboard: keyboard(idle) });
    await s.initialise();
    return { s, clock };
  }

  test('a weekly recurring event with an EXDATE exception: busy on its Mondays in its own time zone, free on the excluded one', async () => {
    // Loaded on 8 November: busy time is expanded a day back and eight days ahead (to 16 November noon).
    const calendar = new IcsCalendar(FIXTURE, { now: () => at('2026-11-08T12:00:00Z') });
    await calendar.refresh();
    assert.equal(calendar.status().error, null);
    assert.equal(calendar.status().events, 4);
    // 10:00–11:00 Europe/Berlin is 09:00–10:00 UTC in November.
    assert.deepEqual(calendar.intervalAt(at('2026-11-09T09:30:00Z')), { start: at('2026-11-09T09:00:00Z'), end: at('2026-11-09T10:00:00Z') });
    assert.equal(calendar.intervalAt(at('2026-11-16T09:30:00Z')), null, 'the EXDATE removes 16 November');
    assert.equal(calendar.intervalAt(at('2026-11-09T10:00:00Z')), null, 'the end is exclusive');
    const starts = calendar.startingAfter(at('2026-11-08T12:00:00Z')).map((interval) => new Date(interval.start).toISOString());
    assert.ok(starts.includes('2026-11-09T09:00:00.000Z'));
    assert.ok(!starts.includes('2026-11-16T09:00:00.000Z'));
    const early = new IcsCalendar(FIXTURE, { now: () => at('2026-11-02T00:00:00Z') });
    await early.refresh();
    assert.deepEqual(
      early.intervalAt(at('2026-11-02T09:30:00Z')),
      { start: at('2026-11-02T09:00:00Z'), end: at('2026-11-02T10:00:00Z') },
      'the first occurrence',
    );
    assert.equal(early.intervalAt(at('2026-11-03T15:00:00Z')), null, 'a TRANSP:TRANSPARENT event is free time');
    // The all-day event covers the local day.
    const offsite = new Date(2026, 10, 20, 12, 0).getTime();
    const later = new IcsCalendar(FIXTURE, { now: () => at('2026-11-19T00:00:00Z') });
    await later.refresh();
    assert.deepEqual(later.intervalAt(offsite), { start: new Date(2026, 10, 20).getTime(), end: new Date(2026, 10, 21).getTime() });
  });

  test('served over HTTP: a meeting opens a window until its end, and a failed reload keeps it; the excluded Monday and a 10-minute standup (under min_window) do not', async () => {
    let served = 0;
    let failing = false;
    const server = http.createServer((request, response) => {
      served++;
      if (failing) response.writeHead(503).end('down');
      else if (request.url === '/secret-token/basic.ics') response.writeHead(200, { 'content-type': 'text/calendar' }).end(text);
      else response.writeHead(404).end('no');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/secret-token/basic.ics`;
    try {
      const meeting = await calendarScheduler(url, '2026-11-09T09:10:00Z');
      assert.equal(meeting.s.state, 'WINDOW_OPEN');
      assert.deepEqual(meeting.s.status().window.sources, ['calendar']);
      assert.equal(meeting.s.status().window.until, '2026-11-09T10:00:00.000Z');
      assert.equal(meeting.s.status().calendar?.source, `http://127.0.0.1:${(server.address() as AddressInfo).port}/…`, 'the secret path is not shown');
      // A reload that fails keeps the last good busy time and says why.
      failing = true;
      await meeting.s.initialise();
      failing = false;
      assert.equal(meeting.s.state, 'WINDOW_OPEN', 'the meeting still holds the window after a failed reload');
      assert.match(meeting.s.status().calendar?.error ?? '', /HTTP 503/);
      const reading = meeting.s.status().sources.find((source) => source.source === 'calendar');
      assert.equal(reading?.available, true);
      assert.match(reading?.detail ?? '', /busy until .*\(last load failed: .*HTTP 503\)/);
      meeting.clock.t = at('2026-11-09T10:00:00Z');
      await meeting.s.evaluate();
      assert.equal(meeting.s.state, 'IDLE_WAIT');

      const excluded = await calendarScheduler(url, '2026-11-16T09:10:00Z');
      assert.equal(excluded.s.state, 'IDLE_WAIT');
      const next = excluded.s.nextWindow().find((window) => window.source === 'calendar');
      assert.equal(next?.at, new Date(2026, 10, 20).getTime(), 'next: the all-day offsite (the 10-minute standup and the excluded Monday are skipped)');

      const standup = await calendarScheduler(url, '2026-11-04T12:01:00Z');
      assert.equal(standup.s.state, 'IDLE_WAIT');
      assert.match(standup.s.status().window.blocked_by ?? '', /less than scheduler\.min_window_minutes/);
      assert.ok(served >= 3);

      const missing = await calendarScheduler(url.replace('basic', 'gone'), '2026-11-09T09:10:00Z');
      assert.equal(missing.s.state, 'IDLE_WAIT', 'an unreadable calendar opens nothing and throws nothing');
      assert.match(missing.s.status().calendar?.error ?? '', /HTTP 404/);
      assert.equal(missing.s.status().sources.find((reading) => reading.source === 'calendar')?.available, false);
    } finally {
      server.close();
    }
  });

  test('reloads of a calendar file: an unchanged one keeps its busy time as the days move on without being parsed again; a changed one is read anew, even at the same size and time stamp', async () => {
    const parses = mock.method(ical.sync, 'parseICS');
    after(() => parses.mock.restore());
    const path = join(tempHome('metaclaw-calendar-'), 'work.ics');
    folders.push(join(path, '..'));
    // A weekly Monday meeting and a one-off review; the edit moves the review to the afternoon.
    const ics = (review: string) =>
      [
        'BEGIN:VCALENDAR',
        'VERSION:2.0',
        'PRODID:-//metaclaw test//EN',
        'BEGIN:VEVENT',
        'UID:weekly@test',
        'DTSTART:20261102T090000Z',
        'DTEND:20261102T100000Z',
        'RRULE:FREQ=WEEKLY;BYDAY=MO',
        'SUMMARY:Weekly',
        'END:VEVENT',
        'BEGIN:VEVENT',
        'UID:review@test',
        `DTSTART:20261110T${review}00Z`,
        `DTEND:20261110T${String(Number(review.slice(0, 2)) + 1).padStart(2, '0')}${review.slice(2)}00Z`,
        'SUMMARY:Review',
        'END:VEVENT',
        'END:VCALENDAR',
        '',
      ].join('\r\n');
    writeFileSync(path, ics('0900'));
    const clock = new FakeClock(at('2026-11-08T12:00:00Z'));
    const calendar = new IcsCalendar(path, clock);
    await calendar.refresh();
    assert.equal(calendar.status().error, null);
    assert.deepEqual(calendar.intervalAt(at('2026-11-10T09:30:00Z')), { start: at('2026-11-10T09:00:00Z'), end: at('2026-11-10T10:00:00Z') });
    assert.equal(calendar.intervalAt(at('2026-11-23T09:30:00Z')), null, 'beyond the eight days expanded ahead');

    // Unchanged, reloaded twelve days on: the busy time is expanded for the new days.
    clock.t = at('2026-11-20T12:00:00Z');
    await calendar.refresh();
    assert.equal(calendar.status().loaded_at, '2026-11-20T12:00:00.000Z');
    assert.equal(calendar.status().events, 2);
    assert.deepEqual(calendar.intervalAt(at('2026-11-23T09:30:00Z')), { start: at('2026-11-23T09:00:00Z'), end: at('2026-11-23T10:00:00Z') });
    assert.equal(parses.mock.callCount(), 1, 'an unchanged text is not parsed again');

    // Changed: the review moved from 09:00 to 13:00 on 10 November (the same bytes count, the time stamp put back).
    clock.t = at('2026-11-08T12:00:00Z');
    const stamp = statSync(path);
    const moved = ics('1300');
    assert.equal(moved.length, ics('0900').length);
    writeFileSync(path, moved);
    utimesSync(path, stamp.atime, stamp.mtime);
    await calendar.refresh();
    assert.equal(calendar.intervalAt(at('2026-11-10T09:30:00Z')), null, 'the old time is free after the reload');
    assert.deepEqual(calendar.intervalAt(at('2026-11-10T13:30:00Z')), { start: at('2026-11-10T13:00:00Z'), end: at('2026-11-10T14:00:00Z') });
    assert.equal(calendar.status().events, 2);
    assert.equal(parses.mock.callCount(), 2);

    // Changed back: read anew again.
    writeFileSync(path, ics('0900'));
    await calendar.refresh();
    assert.equal(parses.mock.callCount(), 3);
    assert.equal(calendar.status().error, null);
    assert.deepEqual(calendar.intervalAt(at('2026-11-10T09:30:00Z')), { start: at('2026-11-10T09:00:00Z'), end: at('2026-11-10T10:00:00Z') });
  });

  test('read from a file path: the same busy time', async () => {
    const { s } = await calendarScheduler(FIXTURE, '2026-11-02T09:30:00Z');
    assert.equal(s.state, 'WINDOW_OPEN');
    assert.deepEqual(s.status().window.sources, ['calendar']);
  });
});

describe('a calendar with an event the expander gives up on', () => {
  const at = (iso: string) => new Date(iso).getTime();
  test('an event repeating every minute is left out and counted; the other events still make busy time', async () => {
    const folder = tempHome('metaclaw-ics-');
    const path = join(folder, 'dense.ics');
    const event = (uid: string, start: string, end: string, rule?: string) => [
      'BEGIN:VEVENT',
      `UID:${uid}`,
      `DTSTART:${start}`,
      `DTEND:${end}`,
      ...(rule ? [rule] : []),
      'SUMMARY:x',
      'END:VEVENT',
    ];
    const lines = [
      'BEGIN:VCALENDAR',
      'VERSION:2.0',
      ...event('ticker@test', '20261101T000000Z', '20261101T000010Z', 'RRULE:FREQ=MINUTELY'),
      ...event('review@test', '20261110T090000Z', '20261110T100000Z'),
      'END:VCALENDAR',
      '',
    ];
    writeFileSync(path, lines.join('\r\n'));
    try {
      const calendar = new IcsCalendar(path, { now: () => at('2026-11-08T12:00:00Z') });
      await calendar.refresh();
      assert.equal(calendar.status().error, null);
      assert.equal(calendar.loaded, true);
      assert.equal(calendar.status().skipped_events, 1);
      assert.deepEqual(calendar.intervalAt(at('2026-11-10T09:30:00Z')), { start: at('2026-11-10T09:00:00Z'), end: at('2026-11-10T10:00:00Z') });
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
