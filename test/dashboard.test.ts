import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { browserMissing, screenshot, withPage } from './support/browser.js';
import { askRecorded, startDashboardProxy, type DashboardProxy } from './support/dashboard.js';
import type { ProxyHandle } from './support/proxy.js';

const skip = browserMissing();

/**
 * The dashboard's overview and its sign-in, in Debian's Chromium driven by playwright-core, against
 * a started proxy that has served real SDK requests (the upstream is the scripted one).
 */
describe('dashboard: overview', { skip }, () => {
  let dashboard: DashboardProxy;
  let proxy: ProxyHandle;
  let browser: Browser;

  before(async () => {
    dashboard = await startDashboardProxy({ starterSkills: true });
    ({ proxy, browser } = dashboard);
    for (const question of ['How do I squash my git commits?', 'And then push them?', 'Thanks, what about rebasing?']) {
      await askRecorded(proxy, 'dash-overview', question);
    }
  });
  after(() => dashboard?.close());

  test('the overview shows requests, sessions, skills and added latency from one data request, without console errors, and nothing from another origin', async () => {
    await withPage(browser, {}, async ({ page, requested }) => {
      await page.goto(`${proxy.url}/ui`);
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
      const stat = (label: string) => page.locator(`[data-stat="${label}"] .stat-value`).innerText();
      await page.locator('[data-stat="Requests"]').waitFor();
      assert.equal(await stat('Requests'), '3');
      assert.equal(await stat('Sessions'), '1');
      assert.match(await stat('Skills'), /^\d+$/);
      assert.ok(Number(await stat('Skills')) >= 40, 'the starter skills');
      assert.match(await stat('Added latency p50'), /ms$/);
      const data = requested.filter((url) => url.includes('/v1/'));
      assert.deepEqual(data, [`${proxy.url}/v1/dashboard/overview`], 'one data request renders the page');
      assert.deepEqual(
        requested.filter((url) => !url.startsWith(proxy.url)),
        [],
        'nothing is fetched from another origin',
      );
      assert.ok(statSync(await screenshot(page, 'overview')).size > 10_000);
    });
  });

  test('the overview fits a narrow window and follows a dark system theme', async () => {
    await withPage(browser, { width: 380, height: 800, colorScheme: 'dark' }, async ({ page }) => {
      await page.goto(`${proxy.url}/ui`);
      await page.locator('[data-stat="Requests"]').waitFor();
      const width = await page.evaluate<number>('document.documentElement.scrollWidth');
      assert.ok(width <= 380, `no sideways scrolling in a narrow window (${width} px)`);
      const background = await page.evaluate<string>('getComputedStyle(document.body).backgroundColor');
      assert.equal(background, 'rgb(17, 20, 24)', 'the dark theme follows the system setting');
      await screenshot(page, 'overview-narrow-dark');
    });
  });
});

describe('dashboard: sign-in when the proxy requires a key', { skip }, () => {
  let dashboard: DashboardProxy;
  let proxy: ProxyHandle;
  let browser: Browser;
  const key = 'mc-dashboard-test-key-0123456789';

  before(async () => {
    dashboard = await startDashboardProxy({ env: { METACLAW_PROXY_API_KEY: key } });
    ({ proxy, browser } = dashboard);
  });
  after(() => dashboard?.close());

  test('the pages and their data are refused without the key; a wrong key is refused and changes nothing', async () => {
    const data = await fetch(`${proxy.url}/v1/dashboard/overview`);
    assert.equal(data.status, 401);
    assert.equal(((await data.json()) as { error: { type: string } }).error.type, 'authentication_error');
    for (const path of ['/ui', '/ui/assets/app.js']) {
      const page = await fetch(`${proxy.url}${path}`, { redirect: 'manual' });
      assert.equal(page.status, 303, path);
      assert.equal(page.headers.get('location'), '/ui/login');
    }
    const wrong = await fetch(`${proxy.url}/ui/login`, { method: 'POST', body: new URLSearchParams({ key: 'not-the-key' }), redirect: 'manual' });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.headers.get('set-cookie'), null);
    assert.match(await wrong.text(), /not the proxy key/);
  });

  test('a browser signs in once with the key and then sees the overview; the cookie is HttpOnly and SameSite=Strict, never the key', async () => {
    await withPage(browser, {}, async ({ page }) => {
      await page.goto(`${proxy.url}/ui`);
      await page.getByLabel('Proxy key').fill(key);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.locator('[data-stat="Requests"]').waitFor();
      assert.equal(new URL(page.url()).pathname, '/ui');
      const [cookie] = await page.context().cookies();
      assert.equal(cookie?.name, 'metaclaw_ui');
      assert.equal(cookie?.httpOnly, true);
      assert.equal(cookie?.sameSite, 'Strict');
      assert.ok(!cookie?.value.includes(key));
    });
  });

  test('requests refused for want of the key count as refused, not as errors of the proxy or the upstream', async () => {
    for (let n = 0; n < 3; n++) assert.equal((await fetch(`${proxy.url}/v1/models`)).status, 401);
    const overview = (await (await fetch(`${proxy.url}/v1/dashboard/overview`, { headers: { authorization: `Bearer ${key}` } })).json()) as {
      requests: { errors_total: number; refused_total: number; errors: { auth: number } };
    };
    assert.ok(overview.requests.errors.auth >= 3);
    assert.equal(overview.requests.errors_total, 0);
    assert.equal(overview.requests.refused_total, overview.requests.errors.auth);
    await withPage(browser, {}, async ({ page }) => {
      await page.goto(`${proxy.url}/ui`);
      await page.getByLabel('Proxy key').fill(key);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.locator('[data-stat="Errors"]').waitFor();
      const stat = (label: string) => page.locator(`[data-stat="${label}"]`).innerText();
      assert.match(await stat('Errors'), /^Errors\s+0\s+none from the upstream or the proxy$/);
      const refused = /^Refused\s+(\d+)\s+(.*)$/.exec(await stat('Refused'));
      assert.ok(refused && Number(refused[1]) >= overview.requests.errors.auth, await stat('Refused'));
      assert.match(refused[2]!, /\bauth \d+/);
    });
  });
});
