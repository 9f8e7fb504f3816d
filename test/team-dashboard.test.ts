/**
 * The dashboard on a node of a team store: the same pages and data routes as a personal install,
 * read from the team's PostgreSQL. A real `metaclaw start` node, a member's turn through the real
 * OpenAI client, then the owner's key (and a browser signed in with it) reads what the team holds;
 * a member's key is refused.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { openDatabase } from '../src/store/index.js';
import { browserMissing, launchBrowser, withPage } from './support/browser.js';
import { sendJson } from './support/http.js';
import { postgresSkip } from './support/postgres.js';
import { startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { teamForTests, teamHelpers } from './support/team.js';

const OWNER_KEY = 'owner-key-for-the-team-dashboard-test';
const SKILL = 'release-notes';
const BODY = '# Release Notes\n\n1. **Group by audience.** Users first, operators second.';
const QUESTION = 'Which port does the staging gateway listen on? (dashboard marker 7f3a)';

const team = teamForTests('team_dashboard');
let node: ProxyHandle;
const keys: Record<string, string> = {};

const { teamEnv, cli, client, rows, addMembers } = teamHelpers(() => team, OWNER_KEY, keys);

function owner(path: string) {
  return sendJson(`${node.url}${path}`, 'GET', { headers: { authorization: `Bearer ${OWNER_KEY}` } });
}

describe('team mode: a node serves the dashboard over the team store', { skip: postgresSkip() }, () => {
  let sessionId: string;

  before(async () => {
    mkdirSync(join(team.seed, 'skills', SKILL), { recursive: true });
    writeFileSync(
      join(team.seed, 'skills', SKILL, 'SKILL.md'),
      `---\nname: ${SKILL}\ndescription: "Use when writing release notes or a changelog entry for a version."\n---\n\n${BODY}\n`,
    );
    openDatabase(join(team.seed, 'metaclaw.db')).close();
    await cli(['store', 'migrate']);
    await cli(['store', 'import-sqlite', team.seed]);
    await addMembers(['alice']);
    node = await startProxy({
      env: teamEnv(),
      config: { llm: { api_base: `${team.upstream.url}/v1`, api_key: 'upstream-key' }, memory: { auto_extract: false } },
    });
    team.nodes.push(node);
    await client(node, 'alice').chat.completions.create({ model: 'm', messages: [{ role: 'user', content: QUESTION }] });
    // The turn reaches the store through the node's spool.
    sessionId = await waitFor(async () => (await rows<{ id: string }>("SELECT id FROM sessions WHERE id LIKE 'alice~%' AND turn_count > 0"))[0]?.id, 15_000);
  });

  test("the sessions list and the overview count the team's sessions, turns, skills and queue from the team store", async () => {
    const sessions = await owner('/v1/dashboard/sessions');
    assert.equal(sessions.status, 200, JSON.stringify(sessions.body));
    assert.ok(sessions.body.sessions.some((session: { id: string }) => session.id === sessionId));
    const overview = await owner('/v1/dashboard/overview');
    assert.equal(overview.status, 200, JSON.stringify(overview.body));
    assert.ok(overview.body.sessions.total >= 1 && overview.body.sessions.turns >= 1, JSON.stringify(overview.body.sessions));
    assert.equal(overview.body.skills.count, 1);
    assert.equal(overview.body.skills.enabled, true);
    assert.equal(typeof overview.body.queue.queued, 'number');
    assert.equal(typeof overview.body.learning.spend.tokens_today, 'number');
    assert.ok(overview.body.requests.total >= 1);
    assert.equal(overview.body.activity.main_turns_last_day, 1);
    assert.ok(Array.isArray(overview.body.events) && Array.isArray(overview.body.warnings));
    assert.ok(
      overview.body.events.some((event: { what: string; title: string }) => event.what === 'skill' && event.title.includes(SKILL)),
      'the imported skill is a learning event',
    );
  });

  test("a member's session and its turn, as the node recorded them, on the sessions pages", async () => {
    const detail = await owner(`/v1/dashboard/sessions/${encodeURIComponent(sessionId)}`);
    assert.equal(detail.status, 200, JSON.stringify(detail.body));
    assert.equal(detail.body.session.id, sessionId);
    assert.equal(detail.body.session.scope, 'user:alice');
    const [turn] = detail.body.turns;
    assert.equal(turn.query, QUESTION);
    assert.equal(turn.turn_type, 'main');
    assert.equal(turn.status, 200);
    assert.ok(typeof turn.response_text === 'string' && turn.response_text.length > 0, 'the answer is recorded');
    assert.ok(Array.isArray(detail.body.session_jobs));
    const missing = await owner('/v1/dashboard/sessions/no-such-session');
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'session_not_found');
  });

  test("a member's memory is listed in their scope and opens with where it came from", async () => {
    const added = await sendJson(`${node.url}/v1/memory`, 'POST', {
      headers: { authorization: `Bearer ${keys['alice']}` },
      body: { type: 'preference', content: 'Alice deploys the staging gateway on Tuesdays.' },
    });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    const list = await owner('/v1/dashboard/memory?scope=user%3Aalice');
    assert.equal(list.status, 200, JSON.stringify(list.body));
    assert.ok(list.body.scopes.some((scope: { scope: string; active: number }) => scope.scope === 'user:alice' && scope.active >= 1));
    assert.ok(list.body.results.some((unit: { id: string }) => unit.id === added.body.id));
    const searched = await owner('/v1/dashboard/memory?scope=user%3Aalice&q=Tuesdays');
    assert.equal(searched.body.results[0]?.id, added.body.id);
    const detail = await owner(`/v1/dashboard/memory/${added.body.id}`);
    assert.equal(detail.status, 200, JSON.stringify(detail.body));
    assert.equal(detail.body.memory.content, 'Alice deploys the staging gateway on Tuesdays.');
    assert.deepEqual(detail.body.supersedes, []);
  });

  test("a scope's memory list shows its newest 50 units newest first, and the next page the rest", async () => {
    const fruits = ['apricots', 'bananas', 'cherries', 'dates', 'elderberries', 'figs', 'grapes', 'kiwis', 'lemons', 'mangoes', 'olives'];
    const places = ['Oslo', 'Lima', 'Quito', 'Hanoi', 'Cairo'];
    for (const fruit of fruits)
      for (const place of places) {
        const added = await sendJson(`${node.url}/v1/memory`, 'POST', {
          headers: { authorization: `Bearer ${keys['alice']}` },
          body: { type: 'semantic', content: `Alice buys ${fruit} in ${place}.` },
        });
        assert.equal(added.status, 201, JSON.stringify(added.body));
      }
    const newest = (await rows<{ id: string }>("SELECT id FROM memory_units WHERE scope = 'user:alice' ORDER BY observed_at DESC, id DESC")).map(
      (row) => row.id,
    );
    assert.ok(newest.length > 55, `${newest.length} units`);
    const first = await owner('/v1/dashboard/memory?scope=user%3Aalice');
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.deepEqual(
      first.body.results.map((unit: { id: string }) => unit.id),
      newest.slice(0, 50),
    );
    const second = await owner(`/v1/dashboard/memory?scope=user%3Aalice&before=${encodeURIComponent(first.body.next)}`);
    assert.deepEqual(
      second.body.results.map((unit: { id: string }) => unit.id),
      newest.slice(50, 100),
    );
  });

  test('a turn given a skill and a memory shows both on its session page, with the injected text cut from the stored forwarded body', async () => {
    const question = 'Write the release notes for the staging gateway deploys on Tuesdays.';
    await client(node, 'alice').chat.completions.create({ model: 'm', messages: [{ role: 'user', content: question }] });
    type Turn = { query: string; injected: { text: string | null; skills: Array<{ name: string }>; memories: Array<{ content: string | null }> } | null };
    const turn = await waitFor(async () => {
      const sessions = (await owner('/v1/dashboard/sessions')).body.sessions as Array<{ id: string }>;
      for (const session of sessions) {
        const detail = await owner(`/v1/dashboard/sessions/${encodeURIComponent(session.id)}`);
        const found = (detail.body.turns as Turn[]).find((candidate) => candidate.query === question);
        if (found) return found;
      }
      return undefined;
    }, 15_000);
    assert.ok(turn.injected, 'the injection record is shown');
    assert.deepEqual(
      turn.injected.skills.map((skill) => skill.name),
      [SKILL],
    );
    assert.ok(
      turn.injected.memories.some((memory) => memory.content === 'Alice deploys the staging gateway on Tuesdays.'),
      'the recalled memory with its stored text',
    );
    assert.ok(turn.injected.text?.startsWith('<metaclaw-context>'), String(turn.injected.text));
    assert.ok((turn.injected.text ?? '').includes('Group by audience'), 'the skill as it was sent upstream');
  });

  test("the team's skills, one skill's text and versions, and the learning curves", async () => {
    const list = await owner('/v1/dashboard/skills');
    assert.equal(list.status, 200, JSON.stringify(list.body));
    assert.equal(list.body.total, 1);
    assert.equal(list.body.skills[0].name, SKILL);
    assert.deepEqual(list.body.invalid_files, []);
    assert.ok(list.body.skills[0].credit?.injected >= 1, 'the turn that was given the skill counts in its credit');
    const detail = await owner(`/v1/dashboard/skills/${SKILL}`);
    assert.equal(detail.status, 200, JSON.stringify(detail.body));
    assert.equal(detail.body.exists, true);
    assert.ok(detail.body.text.includes(BODY), 'the stored SKILL.md');
    assert.ok(detail.body.versions.length >= 1);
    const learning = await owner('/v1/dashboard/learning?days=7');
    assert.equal(learning.status, 200, JSON.stringify(learning.body));
    assert.equal(learning.body.days.length, 7);
    assert.equal(learning.body.skills.at(-1), 1);
    assert.deepEqual(learning.body.windows, []);
  });

  test("a member's key is refused the dashboard (403, in the API's error format); the owner's key gets the page", async () => {
    for (const path of ['/v1/dashboard/overview', '/v1/dashboard/memory', '/ui']) {
      const refused = await sendJson(`${node.url}${path}`, 'GET', { headers: { authorization: `Bearer ${keys['alice']}` } });
      assert.equal(refused.status, 403, path);
      assert.equal(refused.body.error.type, 'permission_error', path);
      assert.equal(refused.body.error.code, 'member_not_allowed', path);
    }
    const page = await fetch(`${node.url}/ui`, { headers: { authorization: `Bearer ${OWNER_KEY}` } });
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /text\/html/);
    assert.match(await page.text(), /<script/);
    const memberLogin = await fetch(`${node.url}/ui/login`, { method: 'POST', body: new URLSearchParams({ key: keys['alice']! }), redirect: 'manual' });
    assert.equal(memberLogin.status, 401, 'a member key does not sign a browser in');
  });

  describe('in a browser', { skip: browserMissing() }, () => {
    let browser: Browser;
    before(async () => {
      browser = await launchBrowser();
    });
    after(() => browser?.close());

    test('a browser signed in with the proxy key sees the overview and the sessions page of the node', async () => {
      await withPage(browser, {}, async ({ page }) => {
        await page.goto(`${node.url}/ui`);
        await page.getByLabel('Proxy key').fill(OWNER_KEY);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.locator('[data-stat="Sessions"]').waitFor();
        assert.match((await page.locator('[data-stat="Skills"]').textContent()) ?? '', /1/);
        await page.goto(`${node.url}/ui#/sessions`);
        await page.getByText(sessionId).first().waitFor();
      });
    });
  });
});
