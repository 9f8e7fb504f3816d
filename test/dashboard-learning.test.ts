import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import type { Browser } from 'playwright-core';
import { browserMissing, launchBrowser, screenshot, withPage } from './support/browser.js';
import { startDashboardProxy, type DashboardProxy } from './support/dashboard.js';
import { DEPLOY_SKILL, learningAwareUpstream, session, statusWhen } from './support/evolver.js';
import { waitFor, type ProxyHandle } from './support/proxy.js';
import { opened, sendTurns, startRlProxy, stepDone, type RlProxy } from './support/rl-proxy.js';

const skip = browserMissing();

/** Sleep hours from an hour ago to two hours ahead (local time): the scheduler opens a window at start. */
function clock(offsetHours: number): string {
  const at = new Date(Date.now() + offsetHours * 3_600_000);
  return `${String(at.getHours()).padStart(2, '0')}:${String(at.getMinutes()).padStart(2, '0')}`;
}

/**
 * The learning page in Chromium: skills and memories over time and the scheduler's windows, from
 * a proxy whose library, memories and scheduler were filled the way a user fills them.
 */
describe('dashboard: learning curves', { skip }, () => {
  let dashboard: DashboardProxy;
  let proxy: ProxyHandle;
  let browser: Browser;

  before(async () => {
    dashboard = await startDashboardProxy({
      starterSkills: true,
      config: { scheduler: { enabled: true, sleep_start: clock(-1), sleep_end: clock(2) } },
    });
    ({ proxy, browser } = dashboard);
    for (const [content, core] of [
      ['Always write commit messages in the imperative mood.', true],
      ['The user works on the billing service in Go.', false],
    ] as const) {
      const added = await fetch(`${proxy.url}/v1/memory`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: core ? 'preference' : 'semantic', content, core }),
      });
      assert.equal(added.status, 201, await added.text());
    }
  });
  after(() => dashboard?.close());

  test("the data route counts today's skills and memories and the open sleep-hours window; a bad range is a 400 that names it", async () => {
    const data = (await (await fetch(`${proxy.url}/v1/dashboard/learning?days=7`)).json()) as any;
    assert.equal(data.days.length, 7);
    assert.equal(data.skills.at(-1), 42, 'the starter bank');
    assert.equal(data.skills.at(0), 0, 'none a week ago');
    assert.deepEqual([data.memories.learned.at(-1), data.memories.standing.at(-1)], [2, 1]);
    assert.equal(data.windows.length, 1);
    assert.equal(data.windows[0].closed_at, null);
    assert.ok(data.windows[0].sources.includes('sleep_hours'), JSON.stringify(data.windows));
    for (const days of ['0', 'abc', '2.5', '366']) {
      const bad = await fetch(`${proxy.url}/v1/dashboard/learning?days=${days}`);
      assert.equal(bad.status, 400);
      assert.match(((await bad.json()) as { error: { message: string } }).error.message, /days: must be a whole number of days from 1 to 365$/, days);
    }
  });

  test('the page draws the skills and memories charts and the window timeline from one data request, without console errors, in a narrow window too', async () => {
    for (const [width, name] of [
      [1280, 'learning'],
      [380, 'learning-narrow'],
    ] as const) {
      await withPage(browser, { width }, async ({ page, requested }) => {
        await page.goto(`${proxy.url}/ui#/learning`);
        await page.getByRole('heading', { name: 'Learning' }).waitFor();
        await page.locator('[data-chart="Skills in the library"] canvas').waitFor();
        await page.locator('[data-chart="Memories"] canvas').waitFor();
        assert.equal(await page.locator('.timeline .window[data-window*="sleep_hours"]').count(), 1);
        assert.match(await page.getByText('No turn has been scored by the judge').innerText(), /RL modes/);
        assert.deepEqual(requested.filter((url) => url.includes('/v1/')).sort(), [
          `${proxy.url}/v1/dashboard/learning?days=30`,
          `${proxy.url}/v1/learning/jobs?status=dead&limit=50`,
        ]);
        assert.equal(await page.getByRole('heading', { name: 'Failed learning jobs' }).count(), 0, 'no failed job: no section');
        const scrollWidth = await page.evaluate<number>('document.documentElement.scrollWidth');
        assert.ok(scrollWidth <= width, `no sideways scrolling (${scrollWidth} px)`);
        await screenshot(page, name);
      });
    }
  });
});

describe('dashboard: learning curves with RL (mode rl, Tinker double)', { skip }, () => {
  let rl: RlProxy;
  let browser: Browser;

  before(async () => {
    rl = await startRlProxy({ rl: { batch_size: 2, learning_rate: 0.05, prm_m: 1 }, ready: true });
    // The judge's votes alternate 1, -1: a batch of two has a reward spread, so a step trains.
    await sendTurns(rl.proxy, 'dash-rl', ['first', 'second', 'third'], 16);
    await stepDone(rl.proxy, 60_000, 500);
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await rl?.dispose();
  });

  test('judged turns show as reward per day and per skill generation, and the training step with its loss', async () => {
    const data = (await (await fetch(`${rl.proxy.url}/v1/dashboard/learning`)).json()) as any;
    const scored = data.judge.per_generation.reduce((sum: number, row: { scored: number }) => sum + row.scored, 0);
    assert.ok(scored >= 2, JSON.stringify(data.judge));
    assert.equal(data.judge.per_day.length, 1, 'all scored today');
    const step = data.training.find((row: { status: string }) => row.status === 'done');
    assert.equal(step.step, 1);
    assert.equal(typeof step.loss, 'number');

    await withPage(browser, {}, async ({ page }) => {
      await page.goto(`${rl.proxy.url}/ui#/learning`);
      await page.locator('[data-chart="Judge reward per day"] canvas').waitFor();
      await page.locator('[data-chart="Training loss per step"] canvas').waitFor();
      assert.equal(await page.locator('.bars li').count(), data.judge.per_generation.length);
      assert.match(await page.locator('.bars li').first().innerText(), new RegExp(`generation ${data.judge.per_generation[0].generation}`));
      assert.match(await page.getByRole('table', { name: 'Training steps' }).innerText(), /\bdone\b/);
      await screenshot(page, 'learning-rl');
    });
  });
});

describe('dashboard: RL training that cannot train (mode rl, Tinker double)', { skip }, () => {
  let rl: RlProxy;
  let browser: Browser;

  before(async () => {
    // A model the service does not offer: the backend does not open, and the proxy keeps serving through the upstream.
    rl = await startRlProxy({ rl: { model: 'tiny/typo' } });
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await rl?.dispose();
  });

  test('the overview warns that training cannot open its backend, with the reason and the next try, as rl status does', async () => {
    assert.equal((await opened(rl.proxy)).state, 'failed');
    const overview = (await (await fetch(`${rl.proxy.url}/v1/dashboard/overview`)).json()) as { warnings: Array<{ code: string; message: string }> };
    const warning = overview.warnings.find((found) => found.code === 'training_failed');
    assert.ok(warning, JSON.stringify(overview.warnings));
    assert.match(
      warning.message,
      /^RL training cannot open the tinker at http:\/\/127\.0\.0\.1:\d+: .*tiny\/typo.*; trying again at .*\(1 failed try since .*\)\.$/,
    );
    assert.ok(!warning.message.includes(rl.double.apiKey), 'never the training key');

    await withPage(browser, {}, async ({ page }) => {
      await page.goto(`${rl.proxy.url}/ui`);
      const banner = page.locator('[data-warning="training_failed"]');
      await banner.waitFor();
      assert.match(await banner.innerText(), /RL training cannot open the tinker at .*tiny\/typo/);
      await screenshot(page, 'overview-training-failed');
    });
  });
});

describe('dashboard: failed learning jobs', { skip }, () => {
  let dashboard: DashboardProxy;
  let evolverBroken = true;

  before(async () => {
    dashboard = await startDashboardProxy({
      upstreamHandler: learningAwareUpstream({
        evolver: () => (evolverBroken ? 'I would rather not answer in JSON.' : JSON.stringify({ changes: [DEPLOY_SKILL] })),
        extractor: () => JSON.stringify({ memories: [] }),
      }),
      config: { learning: { max_attempts: 1 }, skills: { evolution_every_n_turns: 0 } },
    });
    const client = new OpenAI({ baseURL: `${dashboard.proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
    await session(client, 'failed-one', ['How do I deploy the billing service?', 'No, with the blue-green script, and never on Fridays.']);
    await session(client, 'failed-two', ['How do I roll back?', 'No, switch the colors back.']);
    await statusWhen(dashboard.proxy, (report) => report.queue.dead >= 2, 30_000);
  });
  after(() => dashboard?.close());

  test('the learning page lists them with why; Dismiss deletes one, and Retry, once the model answers, runs the other to a new skill', async () => {
    const { proxy, browser } = dashboard;
    await withPage(browser, {}, async ({ page }) => {
      await page.goto(`${proxy.url}/ui`);
      await page.getByRole('link', { name: '2 failed for good' }).click();
      const table = page.getByRole('table', { name: 'Failed learning jobs' });
      await table.waitFor();
      const rows = table.locator('tbody tr');
      assert.equal(await rows.count(), 2);
      const text = await table.innerText();
      assert.match(text, /skills\.evolve #\d+/);
      assert.match(text, /sessionId failed-two/);
      assert.match(text, /the model's answer holds no JSON: I would rather not answer in JSON\./);
      await screenshot(page, 'learning-failed-jobs');

      const dismissed = rows.filter({ hasText: 'failed-two' });
      const dismissedId = await dismissed.getAttribute('data-job-id');
      await dismissed.getByRole('button', { name: 'Dismiss' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: `Dismissed: 1 of 1 job #${dismissedId}.` })
        .waitFor();
      await waitFor(async () => (await rows.count()) === 1);

      evolverBroken = false;
      const retried = rows.filter({ hasText: 'failed-one' });
      const retriedId = await retried.getAttribute('data-job-id');
      await retried.getByRole('button', { name: 'Retry' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: `Queued again: 1 of 1 job #${retriedId}.` })
        .waitFor();
      await page.getByText('No failed learning job is left.').waitFor();
      await waitFor(() => existsSync(join(proxy.home, 'skills', DEPLOY_SKILL.name, 'SKILL.md')), 20_000);
      const jobs = (await (await fetch(`${proxy.url}/v1/learning/jobs?status=all&kind=skills.evolve`)).json()) as {
        data: Array<{ id: number; status: string }>;
      };
      assert.deepEqual(
        jobs.data.map((job) => [String(job.id), job.status]),
        [[retriedId, 'done']],
        'the dismissed job is gone, the retried one done',
      );
    });
  });
});
