import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { browserMissing, screenshot, withPage } from './support/browser.js';
import { askRecorded, startDashboardProxy, type DashboardProxy } from './support/dashboard.js';
import { searchMemory, waitFor, type ProxyHandle } from './support/proxy.js';
import { openAIReply } from './support/upstream.js';

const skip = browserMissing();
const SESSION = 'dash-memory-session';
const QUESTION = 'Our staging database runs Postgres 16 on the host called kestrel.';

interface Unit {
  id: string;
  scope: string;
  type: string;
  content: string;
  status: string;
  superseded_by: string | null;
  importance: number;
  pinned: boolean;
  core: boolean;
  origin: string;
  source: { session_id: string | null; turn_ids: string[] };
}

/**
 * The dashboard's memory page in Debian's Chromium against a started proxy: memories added through
 * `POST /v1/memory` in two scopes, and raw turns recorded from a real SDK request (so a unit has a
 * session and a turn as provenance). Every change made through the page is checked in the store
 * through the memory HTTP API.
 */
describe('dashboard: memory', { skip }, () => {
  let dashboard: DashboardProxy;
  let proxy: ProxyHandle;
  let browser: Browser;
  const ids: Record<'edit' | 'supersede' | 'forget' | 'keep' | 'other', string> = { edit: '', supersede: '', forget: '', keep: '', other: '' };
  let turnId = '';

  const api = (path: string, init: RequestInit = {}) => fetch(`${proxy.url}${path}`, init);
  const unit = async (id: string) => (await api(`/v1/memory/${id}`)).json() as Promise<Unit>;
  const add = async (body: Record<string, unknown>, scope?: string): Promise<string> => {
    const response = await api('/v1/memory', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(scope ? { 'x-memory-scope': scope } : {}) },
      body: JSON.stringify(body),
    });
    assert.equal(response.status, 201);
    return ((await response.json()) as Unit).id;
  };
  /** The page's requests for data (everything under /v1/). */
  const dataRequests = (requested: string[]) => requested.filter((url) => new URL(url).pathname.startsWith('/v1/')).map((url) => url.slice(proxy.url.length));

  before(async () => {
    dashboard = await startDashboardProxy({
      upstreamHandler: openAIReply({ text: 'Noted: Postgres 16 on kestrel.' }),
      config: { memory: { auto_extract: false }, skills: { auto_evolve: false } },
    });
    ({ proxy, browser } = dashboard);
    turnId = (await askRecorded(proxy, SESSION, QUESTION)).id;
    // The raw turns are written by a learning job once the turn is recorded.
    await waitFor(async () => {
      const stats = (await (await api('/v1/memory/stats')).json()) as { scopes: Array<{ by_origin: Record<string, number> }> };
      return (stats.scopes[0]?.by_origin['raw_turn'] ?? 0) >= 2;
    });
    ids.edit = await add({ type: 'preference', content: 'The user prefers tabs in Makefiles.', importance: 0.5 });
    ids.supersede = await add({ type: 'project_state', content: 'The release branch is release-2026-10.' });
    ids.forget = await add({ type: 'semantic', content: 'The office cat is called Biscuit.' });
    ids.keep = await add({ type: 'semantic', content: 'Deploys go out on Thursdays after lunch.' });
    ids.other = await add({ type: 'semantic', content: 'Team blue owns the billing service.' }, 'team-blue');
  });
  after(() => dashboard?.close());

  async function openMemory(page: Page, id: string): Promise<void> {
    await page.goto(`${proxy.url}/ui#/memory/${id}`);
    await page.locator(`article[data-memory="${id}"]`).waitFor();
  }

  test('the memory page lists every scope with its counts and finds a memory with the scope’s search, one data request per render, without console errors', async () => {
    await withPage(browser, {}, async ({ page, requested }) => {
      await page.goto(`${proxy.url}/ui#/memory`);
      await page.getByRole('heading', { name: 'Memory' }).waitFor();
      await page.locator(`[data-memory="${ids.keep}"]`).waitFor();
      const options = await page.getByLabel('Scope').locator('option').allInnerTexts();
      assert.deepEqual(options, ['default (6 active)', 'team-blue (1 active)'], 'both scopes, the larger first, with their counts');
      // The newest units first; the other scope's never.
      assert.equal(await page.locator('[data-memory]').first().getAttribute('data-memory'), ids.keep);
      assert.equal(await page.locator(`[data-memory="${ids.other}"]`).count(), 0);
      assert.deepEqual(dataRequests(requested), ['/v1/dashboard/memory'], 'one data request renders the list');

      await page.getByLabel('Search').fill('Biscuit');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.waitForURL((url) => url.hash.includes('q=Biscuit'));
      await page.locator('.memory-summary', { hasText: 'match(es) for “Biscuit”' }).waitFor();
      const found = await page.locator('.memory-results [data-memory]').evaluateAll((items) => items.map((item) => item.getAttribute('data-memory')));
      assert.deepEqual(found, [ids.forget], 'the search finds the memory about the cat, and only it');
      assert.match(await page.locator(`[data-memory="${ids.forget}"] .memory-tags`).innerText(), /semantic[\s\S]*active[\s\S]*score/);
      assert.deepEqual(
        dataRequests(requested),
        ['/v1/dashboard/memory', '/v1/dashboard/memory?scope=default&q=Biscuit'],
        'one more data request for the search',
      );
      assert.deepEqual(
        requested.filter((url) => !url.startsWith(proxy.url)),
        [],
        'nothing is fetched from another origin',
      );
      assert.ok(statSync(await screenshot(page, 'memory-search')).size > 10_000);

      // The other scope is one choice away, and its search stays inside it.
      await page.getByLabel('Scope').selectOption('team-blue');
      await page.getByLabel('Search').fill('');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.locator(`[data-memory="${ids.other}"]`).waitFor();
      assert.equal(await page.locator('.memory-results [data-memory]').count(), 1);
    });
  });

  test('a raw turn’s detail shows its provenance: the session and the recorded turn it came from, linked to the sessions page', async () => {
    const list = (await (await api('/v1/dashboard/memory?scope=default&type=episodic')).json()) as { results: Unit[] };
    const raw = list.results.find((item) => item.origin === 'raw_turn' && item.content.includes('kestrel') && item.content.includes('staging'));
    assert.ok(raw, 'the user’s raw turn was recorded as a memory');
    await withPage(browser, {}, async ({ page, requested }) => {
      await openMemory(page, raw.id);
      const session = page.locator(`.memory-provenance a[data-session="${SESSION}"]`);
      assert.equal(await session.getAttribute('href'), `#/sessions/${SESSION}`);
      const turn = page.locator(`.memory-provenance li[data-turn="${turnId}"]`);
      assert.match(await turn.innerText(), /turn 1[\s\S]*Postgres 16 on the host called kestrel/);
      assert.equal(await turn.locator('a').getAttribute('href'), `#/sessions/${SESSION}`);
      assert.deepEqual(dataRequests(requested), [`/v1/dashboard/memory/${raw.id}`], 'one data request renders a memory');
      await screenshot(page, 'memory-detail');
    });
  });

  test('editing a memory in the page changes its content, importance and flags in the store', async () => {
    await withPage(browser, {}, async ({ page }) => {
      await openMemory(page, ids.edit);
      const form = page.locator('form[data-action="edit"]');
      await form.getByLabel('Content').fill('The user prefers tabs in Makefiles and spaces everywhere else.');
      await form.getByLabel('Importance').fill('0.9');
      await form.getByLabel('pinned').check();
      await form.getByRole('button', { name: 'Save changes' }).click();
      await form.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
      const stored = await unit(ids.edit);
      assert.equal(stored.content, 'The user prefers tabs in Makefiles and spaces everywhere else.');
      assert.equal(stored.importance, 0.9);
      assert.equal(stored.pinned, true);
      assert.equal(stored.type, 'preference');
      // The page shows what the store now holds.
      await page.locator('.memory-full', { hasText: 'spaces everywhere else' }).waitFor();
      await page.locator('.memory-tags [data-tag="pinned"]').waitFor();
    });
  });

  test('superseding a memory keeps the old one, superseded and linked to the new active one, which keeps its scope and type', async () => {
    await withPage(browser, {}, async ({ page }) => {
      await openMemory(page, ids.supersede);
      const form = page.locator('form[data-action="supersede"]');
      await form.getByLabel('New content').fill('The release branch is release-2026-12.');
      await form.getByRole('button', { name: 'Supersede' }).click();
      await page.waitForURL((url) => /^#\/memory\/[^/]+$/.test(url.hash) && !url.hash.endsWith(ids.supersede));
      const newId = decodeURIComponent(new URL(page.url()).hash.slice('#/memory/'.length));
      const [old, replacement] = await Promise.all([unit(ids.supersede), unit(newId)]);
      assert.equal(old.status, 'superseded');
      assert.equal(old.superseded_by, newId);
      assert.equal(old.content, 'The release branch is release-2026-10.', 'the old unit is kept as it was');
      assert.equal(replacement.status, 'active');
      assert.equal(replacement.content, 'The release branch is release-2026-12.');
      assert.equal(replacement.scope, 'default');
      assert.equal(replacement.type, 'project_state');
      // The new memory's page links back to what it replaced; the old one's to its replacement.
      await page.locator(`article[data-memory="${newId}"]`).waitFor();
      assert.equal(await page.locator('.memory-brief a').getAttribute('href'), `#/memory/${ids.supersede}`);
      await openMemory(page, ids.supersede);
      assert.equal(await page.locator(`[data-superseded-by="${newId}"] a`).getAttribute('href'), `#/memory/${newId}`);
      assert.equal(await page.locator('form[data-action="supersede"]').count(), 0, 'a superseded memory cannot be superseded again');
    });
  });

  test('the list shows superseded memories only when asked, and filters by type', async () => {
    await withPage(browser, {}, async ({ page }) => {
      const shown = () => page.locator('.memory-results [data-memory]').evaluateAll((items) => items.map((item) => item.getAttribute('data-memory')));
      await page.goto(`${proxy.url}/ui#/memory?scope=default`);
      await page.locator('.memory-results [data-memory]').first().waitFor();
      assert.ok(!(await shown()).includes(ids.supersede), 'a superseded memory is hidden by default');
      await page.getByLabel('include superseded').check();
      await page.getByRole('button', { name: 'Search' }).click();
      await page.locator(`[data-memory="${ids.supersede}"] [data-tag="status"]`, { hasText: 'superseded' }).waitFor();

      await page.getByLabel('Type').selectOption('episodic');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.waitForURL((url) => url.hash.includes('type=episodic'));
      await page.locator('.memory-summary', { hasText: 'of type episodic' }).waitFor();
      const types = await page.locator('.memory-results [data-tag="type"]').allInnerTexts();
      assert.deepEqual(types, ['episodic', 'episodic'], 'the two raw turns of the SDK request, nothing else');
    });
  });

  test('forgetting asks for a confirmation: cancelling keeps the memory; confirming deletes it from the store and from search', async () => {
    await withPage(browser, {}, async ({ page }) => {
      await openMemory(page, ids.keep);
      await page.getByRole('button', { name: 'Forget…' }).click();
      const dialog = page.getByRole('alertdialog', { name: 'Confirm forgetting' });
      await dialog.waitFor();
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'detached' });
      assert.equal((await api(`/v1/memory/${ids.keep}`)).status, 200, 'cancelled: the memory is still there');

      // Another memory in the same page (a hash change): its own text in the forms, never the last one's.
      await openMemory(page, ids.forget);
      assert.equal(await page.locator('form[data-action="edit"] textarea').inputValue(), 'The office cat is called Biscuit.');
      await page.getByRole('button', { name: 'Forget…' }).click();
      await screenshot(page, 'memory-forget-confirmation');
      await page.getByRole('alertdialog').getByRole('button', { name: 'Forget for good' }).click();
      await page.getByRole('status').filter({ hasText: ids.forget }).waitFor();
      assert.equal((await api(`/v1/memory/${ids.forget}`)).status, 404);
      assert.deepEqual(await searchMemory(proxy, 'Biscuit'), [], 'the memory service no longer finds it');

      await page.getByLabel('Search').fill('Biscuit');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.locator('.memory-summary', { hasText: '0 match(es) for “Biscuit”' }).waitFor();
    });
  });

  test('export downloads the chosen scope’s memories as JSONL, and only that scope’s', async () => {
    await withPage(browser, {}, async ({ page }) => {
      await page.goto(`${proxy.url}/ui#/memory?scope=default`);
      await page.locator('.memory-results [data-memory]').first().waitFor();
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export JSONL' }).click()]);
      assert.equal(download.suggestedFilename(), 'metaclaw-memory-default.jsonl');
      const lines = readFileSync(await download.path(), 'utf8')
        .trim()
        .split('\n');
      const units = lines.map((line) => JSON.parse(line) as Unit);
      const expected = (await (await api('/v1/memory/export')).text()).trim().split('\n');
      assert.equal(lines.length, expected.length, 'every unit of the scope');
      assert.ok(
        units.every((item) => item.scope === 'default'),
        'no unit of another scope',
      );
      const exported = new Set(units.map((item) => item.id));
      for (const id of [ids.edit, ids.supersede, ids.keep]) assert.ok(exported.has(id), id);
      assert.ok(!exported.has(ids.forget), 'a forgotten memory is not exported');
      assert.ok(units.some((item) => item.origin === 'raw_turn' && item.source.turn_ids.includes(turnId)));
    });
  });

  test('the list and a memory fit a 380 px window in the dark theme', async () => {
    await withPage(browser, { width: 380, height: 800, colorScheme: 'dark' }, async ({ page }) => {
      const scrollWidth = () => page.evaluate<number>('document.documentElement.scrollWidth');
      await page.goto(`${proxy.url}/ui#/memory`);
      await page.locator('.memory-results [data-memory]').first().waitFor();
      assert.ok((await scrollWidth()) <= 380, `list: no sideways scrolling (${await scrollWidth()} px)`);
      await screenshot(page, 'memory-narrow-dark');
      await openMemory(page, ids.edit);
      assert.ok((await scrollWidth()) <= 380, `detail: no sideways scrolling (${await scrollWidth()} px)`);
      await screenshot(page, 'memory-detail-narrow-dark');
    });
  });

  test('bad input is refused in the API’s error format and changes nothing', async () => {
    const json = { 'content-type': 'application/json' };
    const before = await unit(ids.edit);
    const patch = await api(`/v1/memory/${ids.edit}`, { method: 'PATCH', headers: json, body: JSON.stringify({ importance: 2 }) });
    assert.equal(patch.status, 400);
    assert.equal(((await patch.json()) as { error: { param: string } }).error.param, 'importance');
    assert.deepEqual(await unit(ids.edit), before);

    const empty = await api(`/v1/memory/${ids.keep}/supersede`, { method: 'POST', headers: json, body: JSON.stringify({ content: '   ' }) });
    assert.equal(empty.status, 400);
    assert.equal((await unit(ids.keep)).status, 'active');

    const again = await api(`/v1/memory/${ids.supersede}/supersede`, { method: 'POST', headers: json, body: JSON.stringify({ content: 'Another branch.' }) });
    assert.equal(again.status, 409, 'a superseded memory is not superseded twice');

    const otherScope = await api(`/v1/memory/${ids.keep}/supersede`, {
      method: 'POST',
      headers: { ...json, 'x-memory-scope': 'team-blue' },
      body: JSON.stringify({ content: 'Deploys go out on Fridays.' }),
    });
    assert.equal(otherScope.status, 404, 'another scope’s memory is as missing as one that never existed');
    assert.equal((await unit(ids.keep)).status, 'active');
    assert.deepEqual(await searchMemory(proxy, 'Fridays'), []);

    const badType = await api('/v1/dashboard/memory?type=gossip');
    assert.equal(badType.status, 400);
    assert.equal((await api('/v1/dashboard/memory/mem_missing')).status, 404);
  });

  test('a scope with more memories than a page shows older pages through a cursor, each memory once, and a search shows more matches on request', async () => {
    const scope = 'archive-notes';
    const added = new Set<string>();
    for (let n = 1; n <= 120; n++)
      added.add(await add({ type: 'semantic', content: `Archive shelf note number ${n}: box ${n} holds the ${n % 2 ? 'red' : 'blue'} folders.` }, scope));
    await withPage(browser, {}, async ({ page }) => {
      const shown = () => page.locator('.memory-results [data-memory]').evaluateAll((items) => items.map((item) => item.getAttribute('data-memory')!));
      const seen: string[] = [];
      await page.goto(`${proxy.url}/ui#/memory?scope=${scope}`);
      await page.getByRole('link', { name: 'Older memories' }).waitFor();
      seen.push(...(await shown()));
      assert.equal(seen.length, 50);
      await page.getByRole('link', { name: 'Older memories' }).click();
      await page.getByRole('link', { name: 'Newest memories' }).waitFor();
      seen.push(...(await shown()));
      await page.getByRole('link', { name: 'Older memories' }).click();
      // (No string predicates here: the page's CSP forbids evaluating them.)
      await page.getByText('20 older memories').waitFor();
      seen.push(...(await shown()));
      assert.equal(await page.getByRole('link', { name: 'Older memories' }).count(), 0, 'the last page offers no older one');
      assert.equal(new Set(seen).size, 120, 'every memory shown once');
      assert.deepEqual(new Set(seen), added);

      await page.goto(`${proxy.url}/ui#/memory?scope=${scope}&q=${encodeURIComponent('archive shelf folders')}`);
      await page.getByRole('link', { name: 'Show more matches' }).waitFor();
      assert.equal((await shown()).length, 50);
      await page.getByRole('link', { name: 'Show more matches' }).click();
      await page.locator('.memory-results [data-memory]').nth(99).waitFor();
      assert.equal((await shown()).length, 100);
    });
    const badCursor = await api(`/v1/dashboard/memory?scope=${scope}&before=yesterday`);
    assert.equal(badCursor.status, 400, 'a cursor no page gave is refused');
    for (const limit of ['9999', 'abc', '0', '2.5']) {
      const bad = await api(`/v1/dashboard/memory?scope=${scope}&q=x&limit=${limit}`);
      assert.equal(bad.status, 400, limit);
      const error = ((await bad.json()) as { error: { param: string; message: string } }).error;
      assert.equal(error.param, 'limit');
      assert.match(error.message, /limit: must be a whole number from 1 to 500$/, `limit=${limit} is refused with the rule itself`);
    }
  });
});
