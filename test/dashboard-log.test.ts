import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { browserMissing, screenshot, withPage } from './support/browser.js';
import { askRecorded, startDashboardProxy, type DashboardProxy } from './support/dashboard.js';
import { logLineWith } from './support/log.js';
import { waitFor } from './support/proxy.js';
import { errorReply } from './support/upstream.js';

const skip = browserMissing();
const SESSION = 'log-page';

/** The log page in Chromium: reached from a turn, filtered by its form, and linked request by request. */
describe('dashboard: the log page', { skip }, () => {
  let dashboard: DashboardProxy;
  let turnId: string;
  let failedId: string;

  before(async () => {
    dashboard = await startDashboardProxy();
    turnId = (await askRecorded(dashboard.proxy, SESSION, 'How do I rotate the deploy keys?')).id as string;
    // An upstream that fails three times (the first try and both retries): warnings in the log.
    const down = errorReply(500, { error: { message: 'the model is down', type: 'server_error' } });
    dashboard.upstream.reply(down, down, down);
    const client = new OpenAI({ baseURL: `${dashboard.proxy.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const failure = await client.chat.completions
      .create({ model: 'gpt-test', messages: [{ role: 'user', content: 'and now?' }] })
      .catch((error: unknown) => error);
    failedId = (failure as InstanceType<typeof OpenAI.APIError>).headers!.get('x-metaclaw-request-id')!;
    assert.ok(failedId);
    // Each request's last line is logged once the proxy is idle after answering, and the file is
    // written every half second: the pages below load once, so the lines must be there first.
    for (const id of [turnId, failedId]) await logLineWith(dashboard.proxy.home, id, (line) => line['msg'] === 'request finished');
  });
  after(() => dashboard?.close());

  test("a turn links to its request's log lines; the level filter keeps warnings; a request id in a row links to that request alone", async () => {
    const { proxy, browser } = dashboard;
    await withPage(browser, {}, async ({ page }) => {
      await page.goto(`${proxy.url}/ui#/sessions/${SESSION}?turn=${turnId}`); // the turn opens
      await page.locator(`details[data-turn="${turnId}"]`).getByRole('link', { name: 'what the proxy logged' }).click();
      await page.waitForURL(new RegExp(`#/log\\?request=${turnId}$`));
      const rows = page.locator('table.log-lines tbody tr');
      await rows.first().waitFor();
      const requestCells = await page.locator('table.log-lines .log-field', { hasText: 'request_id' }).allInnerTexts();
      assert.ok(requestCells.length > 0);
      assert.ok(
        requestCells.every((text) => text.includes(turnId)),
        'only lines of that request',
      );
      assert.ok((await page.locator('table.log-lines').innerText()).includes('request finished'));

      // Clear, then warnings and above through the form.
      await page.getByRole('link', { name: 'Clear' }).click();
      await page.waitForURL(/#\/log$/);
      await page.getByLabel('Level').selectOption('warn');
      const filtered = page.waitForResponse((response) => /\/v1\/logs\?.*level=warn/.test(response.url()));
      await page.getByRole('button', { name: 'Show' }).click();
      await page.waitForURL(/#\/log\?level=warn$/);
      await filtered;
      // The unfiltered table stays on the page until the filtered answer is rendered (it holds warnings
      // too): wait for that render, which a filter that kept info lines would never make.
      const shownLevels = () => page.locator('table.log-lines tbody tr').evaluateAll((found) => found.map((row) => row.getAttribute('data-level')));
      await waitFor(async () => {
        const levels = await shownLevels();
        return levels.length > 0 && levels.every((level) => level !== 'info');
      });
      await page.locator('table.log-lines tbody tr', { hasText: 'upstream attempt failed' }).first().waitFor();
      const levels = await shownLevels();
      assert.ok(levels.length >= 3, 'three failed attempts');
      assert.ok(
        levels.every((level) => level === 'warn' || level === 'error'),
        JSON.stringify(levels),
      );
      await screenshot(page, 'log-warnings');

      // The failed request's id links to its lines alone.
      await page.locator('table.log-lines a', { hasText: failedId }).first().click();
      await page.waitForURL(new RegExp(`#/log\\?request=${failedId}$`));
      await page.locator('table.log-lines tbody tr', { hasText: 'request finished' }).waitFor();
      const ids = await page.locator('table.log-lines .log-field', { hasText: 'request_id' }).allInnerTexts();
      assert.ok(ids.length >= 4, 'three warnings and the request line');
      assert.ok(ids.every((text) => text.includes(failedId)));
    });
  });

  test("a bad filter shows the proxy's 400 on the page, not a blank table", async () => {
    const { proxy, browser } = dashboard;
    await withPage(browser, { allowErrors: /400/ }, async ({ page }) => {
      await page.goto(`${proxy.url}/ui#/log?since=yesterday`);
      await page.getByRole('alert').waitFor();
      assert.match(await page.getByRole('alert').innerText(), /Could not load: .*since/);
    });
  });
});
