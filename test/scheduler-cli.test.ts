import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

const FIXTURE = join(import.meta.dirname, 'fixtures', 'scheduler', 'weekly-exdate.ics');

/**
 * The fixture's weekly meeting (Mondays 10:00–11:00 Berlin time) moved to the weekday two days from
 * now, and one-minute sleep hours twelve hours from now: no run of these tests falls in or next to
 * either, so proxy idle is the only source whatever the day and hour (on Mondays from 09:00 UTC the
 * meeting opened its own window). Its other events are in the past.
 */
const inTwoDays = new Date(Date.now() + 2 * 86_400_000);
const MEETING_DAY = new Intl.DateTimeFormat('en-US', { timeZone: 'Europe/Berlin', weekday: 'short' }).format(inTwoDays).slice(0, 2).toUpperCase();
const clock = (at: number) => new Date(at).toTimeString().slice(0, 5);
const SLEEP_START = clock(Date.now() + 12 * 3_600_000);
const SLEEP_END = clock(Date.now() + 12 * 3_600_000 + 60_000);

describe('metaclaw scheduler against a started proxy', () => {
  let upstream: ScriptedUpstream;
  let calendarServer: http.Server;
  let proxy: ProxyHandle;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    const text = readFileSync(FIXTURE, 'utf8').replace('RRULE:FREQ=WEEKLY;BYDAY=MO', `RRULE:FREQ=WEEKLY;BYDAY=${MEETING_DAY}`);
    assert.match(text, new RegExp(`BYDAY=${MEETING_DAY}`));
    calendarServer = http.createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/calendar' }).end(text));
    await new Promise<void>((resolve) => calendarServer.listen(0, '127.0.0.1', resolve));
    const icsUrl = `http://127.0.0.1:${(calendarServer.address() as AddressInfo).port}/private/calendar.ics`;
    proxy = await startProxy({
      config: {
        llm: { api_base: `${upstream.url}/v1`, api_key: 'k' },
        // A one-minute threshold; the sleep hours are one minute long, half a day away.
        scheduler: { enabled: true, idle_threshold_minutes: 1, sleep_start: SLEEP_START, sleep_end: SLEEP_END, calendar: { ics_url: icsUrl } },
      },
    });
  });
  after(async () => {
    await proxy.dispose();
    await upstream.close();
    calendarServer.close();
  });

  const status = async () => {
    const result = await proxy.cli(['scheduler', 'status', '--json']);
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout);
  };

  test('status --json: with no keyboard to read (no display here) and no main turn yet, proxy idle opens a window; the ICS calendar is loaded', async () => {
    const report = await waitFor(async () => {
      const current = await status();
      return current.state === 'WINDOW_OPEN' && current.calendar?.loaded_at ? current : undefined;
    });
    assert.equal(report.running, true);
    assert.equal(report.enabled, true);
    assert.deepEqual(report.window.sources, ['proxy_idle']);
    assert.equal(report.keyboard_idle.available, false);
    assert.match(report.keyboard_idle.reason, /DISPLAY/);
    assert.equal(report.calendar.events, 4);
    assert.equal(report.calendar.error, null);
    assert.match(report.calendar.source, /^http:\/\/127\.0\.0\.1:\d+\/…$/, 'the private path of the calendar URL is not shown');
    assert.deepEqual(report.settings, { sleep_hours: `${SLEEP_START}–${SLEEP_END}`, idle_threshold_minutes: 1, min_window_minutes: 15 });
    const whole = JSON.parse((await proxy.cli(['status', '--json'])).stdout);
    assert.equal(whole.scheduler.state, 'WINDOW_OPEN', '/status carries the same section');
  });

  test('a main turn through the proxy closes the window at once (the user is chatting); next-window says when proxy idle reopens it', async () => {
    const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'k' });
    const before = Date.now();
    const answer = await client.chat.completions.create(
      { model: 'm', messages: [{ role: 'user', content: 'Plan my week.' }] },
      { headers: { 'x-session-id': 'sched-cli' } },
    );
    assert.ok(answer.choices[0]?.message.content);
    const report = await waitFor(async () => {
      const current = await status();
      return current.state === 'IDLE_WAIT' ? current : undefined;
    }, 5_000);
    assert.match(report.window.blocked_by, /chatting through the proxy/);
    assert.match(report.reason, /window closed: chatting through the proxy/);

    const next = await proxy.cli(['scheduler', 'next-window', '--json']);
    assert.equal(next.code, 0, next.stderr);
    const expected = JSON.parse(next.stdout);
    assert.equal(expected.next_window[0].source, 'proxy_idle');
    const at = Date.parse(expected.next_window[0].at);
    assert.ok(at >= before + 60_000 && at <= Date.now() + 60_000, `reopens a minute after the turn (${expected.next_window[0].at})`);
    const text = await proxy.cli(['scheduler', 'next-window']);
    assert.match(text.stdout, /No window now: chatting through the proxy/);
    assert.match(text.stdout, /Next window: .* by proxy_idle/);
  });

  test('doctor reports which idle sources work on this machine', async () => {
    const doctor = await proxy.cli(['doctor', '--json', '--no-canary']);
    const check = JSON.parse(doctor.stdout).checks.find((entry: { name: string }) => entry.name === 'scheduler');
    assert.equal(check.verdict, 'pass', JSON.stringify(check));
    assert.match(
      check.detail,
      new RegExp(
        `sleep hours ${SLEEP_START}–${SLEEP_END}; keyboard idle unavailable \\(.*\\), proxy idle stands in; proxy idle after 1 min; calendar http://127\\.0\\.0\\.1:\\d+/…: 4 events`,
      ),
    );
  });

  test('stopped, status shows the last persisted state and next-window still answers from the config and the store', async () => {
    await proxy.stop();
    const report = await status();
    assert.equal(report.running, false);
    assert.equal(report.last_state.state, 'IDLE_WAIT');
    assert.match(report.last_state.reason, /chatting through the proxy/);
    const next = await proxy.cli(['scheduler', 'next-window', '--json']);
    assert.equal(next.code, 0, next.stderr);
    assert.equal(JSON.parse(next.stdout).running, false);
    assert.ok(JSON.parse(next.stdout).next_window.length > 0);
  });
});

describe('metaclaw scheduler when it is off', () => {
  test('status --json says it is off and why; /status carries the same', async () => {
    const upstream = await ScriptedUpstream.start();
    const proxy = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' } } });
    try {
      const result = await proxy.cli(['scheduler', 'status', '--json']);
      assert.equal(result.code, 0, result.stderr);
      const report = JSON.parse(result.stdout);
      assert.equal(report.enabled, false);
      assert.match(report.reason, /scheduler\.enabled is false/);
      const whole = JSON.parse((await proxy.cli(['status', '--json'])).stdout);
      assert.deepEqual(whole.scheduler, { enabled: false, reason: report.reason });
    } finally {
      await proxy.dispose();
      await upstream.close();
      rmSync(proxy.home, { recursive: true, force: true });
    }
  });
});

describe('metaclaw scheduler with a calendar URL that holds a user and password', () => {
  test('the calendar is fetched with basic auth, and neither the password nor the secret path shows in status, doctor or the log', async () => {
    const upstream = await ScriptedUpstream.start();
    const text = readFileSync(FIXTURE, 'utf8');
    const expected = `Basic ${Buffer.from('me:PASSWORD-XYZ').toString('base64')}`;
    const calendarServer = http.createServer((request, response) => {
      if (request.headers.authorization !== expected) response.writeHead(401).end('who are you');
      else response.writeHead(200, { 'content-type': 'text/calendar' }).end(text);
    });
    await new Promise<void>((resolve) => calendarServer.listen(0, '127.0.0.1', resolve));
    const port = (calendarServer.address() as AddressInfo).port;
    const icsUrl = `http://me:PASSWORD-XYZ@127.0.0.1:${port}/private/SECRET-PATH/calendar.ics`;
    const proxy = await startProxy({
      config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, scheduler: { enabled: true, calendar: { ics_url: icsUrl } } },
    });
    try {
      const report = await waitFor(async () => {
        const current = JSON.parse((await proxy.cli(['scheduler', 'status', '--json'])).stdout);
        return (current.calendar?.loaded_at || current.calendar?.error) && current;
      });
      assert.equal(report.calendar.error, null);
      assert.equal(report.calendar.events, 4);
      const shown = [
        JSON.stringify(report),
        (await proxy.cli(['scheduler', 'status'])).stdout,
        (await proxy.cli(['doctor'])).stdout,
        await (await fetch(`${proxy.url}/status`)).text(),
        readFileSync(join(proxy.home, 'logs', 'metaclaw.log'), 'utf8'),
      ].join('\n');
      assert.doesNotMatch(shown, /PASSWORD-XYZ|SECRET-PATH/);
    } finally {
      await proxy.dispose();
      await upstream.close();
      calendarServer.close();
    }
  });

  test('a calendar that cannot be fetched is reported without its secret path', async () => {
    const upstream = await ScriptedUpstream.start();
    // A URL fetch cannot construct: its own message quotes the whole URL.
    const icsUrl = 'https://calendar.example:99999/private/SECRET-PATH/basic.ics';
    const proxy = await startProxy({
      config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, scheduler: { enabled: true, calendar: { ics_url: icsUrl } } },
    });
    try {
      const report = await waitFor(async () => {
        const current = JSON.parse((await proxy.cli(['scheduler', 'status', '--json'])).stdout);
        return current.calendar?.error && current;
      });
      const shown = [JSON.stringify(report), (await proxy.cli(['doctor'])).stdout, readFileSync(join(proxy.home, 'logs', 'metaclaw.log'), 'utf8')].join('\n');
      assert.doesNotMatch(shown, /SECRET-PATH/);
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });
});
