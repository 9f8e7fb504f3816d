import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { browserMissing, screenshot, withPage } from './support/browser.js';
import { askRecorded, startDashboardProxy, type DashboardProxy } from './support/dashboard.js';
import type { ProxyHandle } from './support/proxy.js';
import type { ScriptedUpstream } from './support/upstream.js';

const skip = browserMissing();

const SESSION = 'dash-sessions-git';
const OTHER = 'dash-sessions-later';
const MEMORY = 'The user squashes git commits with an interactive rebase before pushing them.';

interface Added {
  sections: Array<{
    provider: string;
    details: { skills?: Array<{ name: string; relevance: number }>; recalled?: Array<{ id: string; score: number }> };
  }>;
}

/** The page's data requests (its `/v1/` URLs), without the origin. */
const dataRequests = (requested: string[], origin: string) => requested.filter((url) => url.includes('/v1/')).map((url) => url.slice(origin.length));

/**
 * The sessions page and a session's turns, in Chromium, against a proxy with the starter skills
 * and a remembered preference that served real OpenAI SDK requests: what the page says was
 * injected is what the proxy's own record of the turn (`GET /v1/requests/{id}`) says.
 */
describe('dashboard: sessions and their turns', { skip }, () => {
  let dashboard: DashboardProxy;
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let browser: Browser;
  let squashTurn: string;
  let added: Added;

  before(async () => {
    dashboard = await startDashboardProxy({ starterSkills: true });
    ({ upstream, proxy, browser } = dashboard);
    const remembered = await fetch(`${proxy.url}/v1/memory`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'preference', content: MEMORY }),
    });
    assert.equal(remembered.status, 201);
    const squash = await askRecorded(proxy, SESSION, 'How do I squash my last three git commits into one?');
    squashTurn = squash.id;
    added = squash.added;
    await askRecorded(proxy, SESSION, 'Thanks. What is the capital of France?');
    const ended = await fetch(`${proxy.url}/v1/sessions/${SESSION}/end`, { method: 'POST' });
    assert.equal(ended.status, 200);
    await askRecorded(proxy, OTHER, 'Hello there');
  });
  after(() => dashboard?.close());

  test('the list shows the sessions newest first with client, scope, end and turn counts; a session shows its turns and, for the chosen turn, the injected skills and memories with their scores, from one data request per page', async () => {
    const skills = added.sections.find((section) => section.provider === 'skills')?.details.skills ?? [];
    const recalled = added.sections.find((section) => section.provider === 'memory')?.details.recalled ?? [];
    assert.ok(skills.length > 0, 'a starter skill was injected into the question about squashing');
    assert.equal(recalled.length, 1, 'the remembered preference was recalled');

    await withPage(browser, {}, async ({ page, requested }) => {
      await page.goto(`${proxy.url}/ui#/sessions`);
      await page.getByRole('heading', { name: 'Sessions' }).waitFor();
      const rows = page.locator('table.sessions tbody tr');
      await rows.first().waitFor();
      assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-session'))), [OTHER, SESSION], 'newest first');
      const row = page.locator(`tr[data-session="${SESSION}"]`);
      const cells = await row.locator('td').allInnerTexts();
      assert.match(cells[1]!, /openai/, 'the client format');
      assert.equal(cells[2], 'default', 'the memory scope');
      assert.match(cells[5]!, /\(agent\)$/, 'ended, and why');
      assert.equal(cells[6], '2 (2)', 'turns (main turns)');
      assert.equal(await page.locator(`tr[data-session="${OTHER}"] td`).nth(5).innerText(), 'open');
      assert.ok(statSync(await screenshot(page, 'sessions')).size > 10_000);
      assert.deepEqual(dataRequests(requested, proxy.url), ['/v1/dashboard/sessions'], 'one data request renders the list');

      await row.getByRole('link', { name: SESSION }).click();
      await page.getByRole('heading', { name: 'Turns' }).waitFor();
      assert.equal(await page.locator('details.turn').count(), 2);
      const turn = page.locator(`details.turn[data-turn="${squashTurn}"]`);
      assert.match(
        await turn.locator(':scope > summary').innerText(),
        new RegExp(`squash my last three git commits.*${skills.length} skills?, 1 memory injected`, 's'),
      );
      await turn.locator(':scope > summary').click();
      const skillRows = turn.locator('table.injected-skills tbody tr');
      await skillRows.first().waitFor();
      assert.deepEqual(
        await skillRows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-skill'))),
        skills.map((skill) => skill.name),
      );
      for (const skill of skills) {
        assert.equal(
          await turn.locator(`tr[data-skill="${skill.name}"] [data-score="relevance"]`).innerText(),
          skill.relevance.toFixed(3),
          `${skill.name}'s score`,
        );
      }
      const memory = turn.locator(`tr[data-memory="${recalled[0]!.id}"]`);
      assert.match(await memory.innerText(), new RegExp(MEMORY.slice(0, 40)));
      assert.equal(await memory.locator('[data-score="score"]').innerText(), recalled[0]!.score.toFixed(3));

      await turn.getByText('The injected text, in full').click();
      const sent = upstream.requests.find((request) => JSON.stringify(request.body).includes('squash my last three'));
      const system = sent?.body.messages[0];
      assert.equal(system?.role, 'system', 'the proxy added a system message');
      assert.equal(await turn.locator('details.injected-text pre').innerText(), system.content, 'the text the proxy added, in full');
      await turn.locator('tr[data-job="memory.record_turn"]').waitFor();
      assert.ok((await page.locator('h2 + .table-wrap table.jobs tr[data-job="skills.evolve"]').count()) === 1, 'ending the session queued skill evolution');

      assert.ok(statSync(await screenshot(page, 'session')).size > 10_000);
      assert.deepEqual(dataRequests(requested, proxy.url), ['/v1/dashboard/sessions', `/v1/dashboard/sessions/${SESSION}`], 'one data request per page');
      assert.deepEqual(
        requested.filter((url) => !url.startsWith(proxy.url)),
        [],
        'nothing is fetched from another origin',
      );
    });
  });

  test('a turn named in the address opens at once and fits a narrow window', async () => {
    await withPage(browser, { width: 380, height: 800 }, async ({ page }) => {
      await page.goto(`${proxy.url}/ui#/sessions/${SESSION}?turn=${squashTurn}`);
      await page.locator(`details.turn[data-turn="${squashTurn}"] table.injected-skills`).waitFor();
      assert.equal(await page.locator('details.turn[open]').count(), 1, 'only the named turn is open');
      const width = await page.evaluate('document.documentElement.scrollWidth');
      assert.ok(Number(width) <= 380, `no sideways scrolling in a narrow window (${String(width)} px)`);
      await screenshot(page, 'session-narrow');
    });
  });

  test("the overview's learning events link to the session that caused them", async () => {
    await withPage(browser, {}, async ({ page, requested }) => {
      await page.goto(`${proxy.url}/ui`);
      const event = page.locator('[data-event="job"]', { hasText: 'memory.record_turn done' }).first();
      const target = event.getByRole('link', { name: 'session' });
      const session = decodeURIComponent((await target.getAttribute('href'))!.replace('#/sessions/', ''));
      assert.ok([SESSION, OTHER].includes(session), session);
      await target.click();
      await page.getByRole('heading', { name: 'Turns' }).waitFor();
      assert.equal(await page.locator('.session-facts code').innerText(), session);
      assert.deepEqual(dataRequests(requested, proxy.url), ['/v1/dashboard/overview', `/v1/dashboard/sessions/${session}`]);
    });
  });

  test('an unknown session shows that it is unknown, and its data route answers 404 in the API error format', async () => {
    await withPage(browser, { allowErrors: /status of 404/ }, async ({ page }) => {
      // Chromium logs every failed fetch; that 404 is the only error allowed here.
      await page.goto(`${proxy.url}/ui#/sessions/no-such-session`);
      const alert = page.getByRole('alert');
      await alert.waitFor();
      assert.match(await alert.innerText(), /No session no-such-session has been recorded/);
      assert.ok(await page.getByRole('link', { name: 'All sessions' }).isVisible());
      await screenshot(page, 'session-unknown');
    });
    const response = await fetch(`${proxy.url}/v1/dashboard/sessions/no-such-session`);
    assert.equal(response.status, 404);
    const body = (await response.json()) as { error: { type: string; code: string } };
    assert.equal(body.error.code, 'session_not_found');
  });

  test('the list pages back by its cursor; a malformed cursor or turn number is a 400 naming the parameter', async () => {
    const first = (await (await fetch(`${proxy.url}/v1/dashboard/sessions`)).json()) as {
      sessions: Array<{ id: string; last_turn_at: string }>;
      next: string | null;
    };
    assert.equal(first.next, null, 'two sessions fit one page');
    const newest = first.sessions[0]!;
    const cursor = `${Date.parse(newest.last_turn_at)}:${newest.id}`;
    const older = (await (await fetch(`${proxy.url}/v1/dashboard/sessions?before=${encodeURIComponent(cursor)}`)).json()) as {
      sessions: Array<{ id: string }>;
    };
    assert.deepEqual(
      older.sessions.map((session) => session.id),
      [SESSION],
    );
    for (const path of ['/v1/dashboard/sessions?before=yesterday', `/v1/dashboard/sessions/${SESSION}?after=-1`]) {
      const response = await fetch(`${proxy.url}${path}`);
      assert.equal(response.status, 400, path);
      const body = (await response.json()) as { error: { type: string; param?: string } };
      assert.equal(body.error.type, 'invalid_request_error');
      assert.match(body.error.param ?? '', /before|after/);
    }
  });
});
