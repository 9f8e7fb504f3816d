/**
 * The management routes a node of a team store serves, as a personal install serves them: memory
 * edits, statistics, ingest, export and import (in the personal install's format, both ways), and
 * a person's skill edits and reverts, seen by every node. Real `metaclaw start` nodes on one
 * PostgreSQL, a real personal install, and fetch.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { GENERATION_KEY } from '../src/skills/history.js';
import { openDatabase } from '../src/store/index.js';
import { SKILLS_CHANNEL } from '../src/store/postgres/index.js';
import { sendJson } from './support/http.js';
import { GITHUB_TOKEN } from './support/secrets.js';
import { postgresSkip } from './support/postgres.js';
import { startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { teamForTests, teamHelpers } from './support/team.js';

const OWNER_KEY = 'owner-key-for-the-team-routes-test';
const SKILL = 'release-notes';
const ORIGINAL_BODY = '# Release Notes\n\n1. **Group by audience.** Users first, operators second.';

const team = teamForTests('team_routes');
let personal: ProxyHandle;
const { nodes } = team;
const keys: Record<string, string> = {};

const { cli, addMembers, startNodes } = teamHelpers(() => team, OWNER_KEY, keys);

/** A member's (or, with 'owner', the proxy key's) request to a node. */
function call(node: ProxyHandle, who: string, method: string, path: string, body?: unknown) {
  const key = who === 'owner' ? OWNER_KEY : keys[who]!;
  return sendJson(`${node.url}${path}`, method, { headers: { authorization: `Bearer ${key}` }, ...(body === undefined ? {} : { body }) });
}

describe('team mode: a node serves the management routes of memory and skills', { skip: postgresSkip() }, () => {
  before(async () => {
    mkdirSync(join(team.seed, 'skills', SKILL), { recursive: true });
    writeFileSync(
      join(team.seed, 'skills', SKILL, 'SKILL.md'),
      `---\nname: ${SKILL}\ndescription: "Use when writing release notes or a changelog entry for a version."\n---\n\n${ORIGINAL_BODY}\n`,
    );
    openDatabase(join(team.seed, 'metaclaw.db')).close();
    await cli(['store', 'migrate']);
    await cli(['store', 'import-sqlite', team.seed]);
    await addMembers(['alice', 'bob']);
    const config = { llm: { api_base: `${team.upstream.url}/v1`, api_key: 'upstream-key' }, memory: { auto_extract: false } };
    nodes.push(...(await startNodes(2, config)));
    personal = await startProxy({ config });
  });

  // The team's nodes and store are stopped by teamForTests.
  after(() => personal?.dispose().catch(() => undefined));

  test('a member edits and supersedes a unit of their own on one node; the other node finds the new words, and stats count both units', async () => {
    const added = await call(nodes[0]!, 'alice', 'POST', '/v1/memory', { type: 'preference', content: 'Alice deploys on Tuesdays.' });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    const id = added.body.id as string;

    const patched = await call(nodes[1]!, 'alice', 'PATCH', `/v1/memory/${id}`, { content: 'Alice deploys on Thursdays after the standup.', pinned: true });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.equal(patched.body.content, 'Alice deploys on Thursdays after the standup.');
    assert.equal(patched.body.pinned, true);
    const found = await call(nodes[0]!, 'alice', 'POST', '/v1/memory/search', { query: 'which day does Alice deploy after the standup?' });
    assert.ok(
      found.body.results.some((hit: { id: string }) => hit.id === id),
      `the edited words are indexed: ${JSON.stringify(found.body)}`,
    );

    const superseded = await call(nodes[0]!, 'alice', 'POST', `/v1/memory/${id}/supersede`, { content: 'Alice deploys on Fridays, release train only.' });
    assert.equal(superseded.status, 201, JSON.stringify(superseded.body));
    assert.equal(superseded.body.superseded.status, 'superseded');
    assert.equal(superseded.body.superseded.superseded_by, superseded.body.memory.id);
    assert.equal(superseded.body.memory.type, 'preference', 'the new unit keeps the old one’s type');
    assert.equal(superseded.body.memory.pinned, true);
    assert.equal((await call(nodes[1]!, 'alice', 'GET', `/v1/memory/${id}`)).body.status, 'superseded');
    const again = await call(nodes[1]!, 'alice', 'POST', `/v1/memory/${id}/supersede`, { content: 'twice' });
    assert.equal(again.status, 409);
    const active = await call(nodes[1]!, 'alice', 'POST', '/v1/memory/search', { query: 'which day does Alice deploy?' });
    assert.deepEqual(
      active.body.results.map((hit: { id: string }) => hit.id),
      [superseded.body.memory.id],
      'search finds the replacement, not the superseded unit',
    );

    const stats = await call(nodes[1]!, 'alice', 'GET', '/v1/memory/stats');
    assert.equal(stats.status, 200, JSON.stringify(stats.body));
    assert.equal(stats.body.scopes.length, 1);
    assert.equal(stats.body.scopes[0].scope, 'user:alice');
    assert.equal(stats.body.scopes[0].active, 1);
    assert.equal(stats.body.scopes[0].superseded, 1);
    assert.equal(stats.body.scopes[0].by_type.preference, 1);
    assert.equal(stats.body.total_units, 2);
  });

  test('a standing instruction added on a node replaces the earlier rule on its subject, as on a personal install', async () => {
    const first = { type: 'preference', content: 'Always write dates as DD/MM/YYYY in reports.', core: true };
    const second = { type: 'preference', content: 'Always write dates as YYYY-MM-DD in reports.', core: true };
    const personalCall = (method: string, path: string, body?: unknown) =>
      sendJson(`${personal.url}${path}`, method, { headers: { 'x-memory-scope': 'user:carol' }, ...(body === undefined ? {} : { body }) });
    const onPersonal = [(await personalCall('POST', '/v1/memory', first)).body, (await personalCall('POST', '/v1/memory', second)).body];
    const onNode = [(await call(nodes[0]!, 'bob', 'POST', '/v1/memory', first)).body, (await call(nodes[1]!, 'bob', 'POST', '/v1/memory', second)).body];
    const personalOld = (await personalCall('GET', `/v1/memory/${onPersonal[0].id}`)).body;
    assert.equal(personalOld.status, 'superseded', 'the personal install replaces the earlier rule');
    const nodeOld = (await call(nodes[0]!, 'bob', 'GET', `/v1/memory/${onNode[0].id}`)).body;
    assert.equal(nodeOld.status, 'superseded', JSON.stringify(nodeOld));
    assert.equal(nodeOld.superseded_by, onNode[1].id);
    assert.equal(onNode[1].core, true);
    const rules = await team.pool.query("SELECT content FROM memory_units WHERE scope = 'user:bob' AND core = 1 AND status = 'active'");
    assert.deepEqual(
      rules.rows.map((row: { content: string }) => row.content),
      [second.content],
      'one rule on the subject is in force',
    );
  });

  test("a member cannot edit, supersede or count another member's memory: their unit is missing (404), their scope forbidden (403)", async () => {
    const added = await call(nodes[0]!, 'alice', 'POST', '/v1/memory', { type: 'semantic', content: 'Alice keeps the staging runbook in the wiki.' });
    const id = added.body.id as string;
    const patch = await call(nodes[1]!, 'bob', 'PATCH', `/v1/memory/${id}`, { content: 'Bob was here.' });
    assert.equal(patch.status, 404, JSON.stringify(patch.body));
    assert.equal(patch.body.error.code, 'memory_not_found');
    assert.equal((await call(nodes[1]!, 'bob', 'POST', `/v1/memory/${id}/supersede`, { content: 'Bob was here.' })).status, 404);
    assert.equal((await call(nodes[0]!, 'alice', 'GET', `/v1/memory/${id}`)).body.content, 'Alice keeps the staging runbook in the wiki.');
    assert.equal((await call(nodes[1]!, 'bob', 'GET', '/v1/memory/stats?scope=user:alice')).status, 403);
    assert.equal((await call(nodes[1]!, 'bob', 'GET', '/v1/memory/export?scope=user:alice')).status, 403);
    const importing = await call(nodes[1]!, 'bob', 'POST', '/v1/memory/import?scope=user:alice', '{"type":"semantic","content":"planted"}\n');
    assert.equal(importing.status, 403);
    // A line naming another scope is skipped, not written there.
    const named = await call(nodes[1]!, 'bob', 'POST', '/v1/memory/import', '{"scope":"user:alice","type":"semantic","content":"planted"}\n');
    assert.equal(named.status, 200);
    assert.equal(named.body.imported, 0);
    assert.match(named.body.skipped[0].reason, /not this request's scope/);
    // The shared scope: every member reads it, no member writes it.
    assert.equal((await call(nodes[1]!, 'bob', 'GET', '/v1/memory/stats?scope=team')).status, 200);
    assert.equal((await call(nodes[1]!, 'bob', 'POST', '/v1/memory/import?scope=team', '{"type":"semantic","content":"planted"}\n')).status, 403);
    assert.equal(Number((await team.pool.query("SELECT count(*) AS n FROM memory_units WHERE content = 'planted' OR content = 'Bob was here.'")).rows[0].n), 0);
  });

  test('an export of a personal install imports into a node, and the node’s export imports back into the personal install', async () => {
    const scope = { 'x-memory-scope': 'user:alice' };
    const personalCall = (method: string, path: string, body?: unknown) =>
      sendJson(`${personal.url}${path}`, method, { headers: scope, ...(body === undefined ? {} : { body }) });
    const units = [
      { type: 'preference', content: 'Alice writes commit messages in the imperative mood.', pinned: true },
      { type: 'semantic', content: 'The billing service lives in the payments-core repository.' },
      { type: 'project_state', content: 'Project Heron migrates the queue to PostgreSQL by March.', importance: 0.9 },
    ];
    for (const unit of units) assert.equal((await personalCall('POST', '/v1/memory', unit)).status, 201);
    const exported = await personalCall('GET', '/v1/memory/export');
    assert.equal(exported.status, 200);
    assert.equal(exported.body.trim().split('\n').length, 3);

    const imported = await call(nodes[0]!, 'alice', 'POST', '/v1/memory/import', exported.body);
    assert.equal(imported.status, 200, JSON.stringify(imported.body));
    assert.deepEqual(imported.body, { imported: 3, skipped: [] });
    const twice = await call(nodes[1]!, 'alice', 'POST', '/v1/memory/import', exported.body);
    assert.equal(twice.body.imported, 0, 'what is already there is not imported again');

    const fromNode = await call(nodes[1]!, 'alice', 'GET', '/v1/memory/export');
    assert.equal(fromNode.status, 200);
    const lines = (fromNode.body as string)
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { scope: string; type: string; content: string; pinned: boolean; origin: string; status: string });
    for (const unit of units) {
      const line = lines.find((candidate) => candidate.content === unit.content);
      assert.ok(line, `${unit.content} is in the node's export`);
      assert.equal(line.scope, 'user:alice');
      assert.equal(line.type, unit.type);
      assert.equal(line.pinned, unit.pinned ?? false);
      assert.equal(line.origin, 'import');
    }
    const search = await call(nodes[1]!, 'alice', 'POST', '/v1/memory/search', { query: 'where does the billing service live?' });
    assert.equal(search.body.results[0]?.content, units[1]!.content, 'imported units are indexed');

    // Back: the personal install, emptied, takes the node's export line for line.
    assert.equal((await personalCall('DELETE', '/v1/memory?scope=user:alice')).status, 200);
    // All but what the export marks superseded (the first test replaced a unit): a replaced memory never comes back.
    const back = await personalCall('POST', '/v1/memory/import', fromNode.body);
    assert.equal(back.status, 200, JSON.stringify(back.body));
    const superseded = lines.flatMap((line, index) => (line.status === 'superseded' ? [index + 1] : []));
    assert.ok(superseded.length > 0, 'the export holds the unit the first test replaced');
    assert.equal(back.body.imported, lines.length - superseded.length);
    assert.deepEqual(
      back.body.skipped.map((skip: { line: number }) => skip.line),
      superseded,
    );
    const deploys = await personalCall('POST', '/v1/memory/search', { query: 'which day does Alice deploy?' });
    assert.ok(!JSON.stringify(deploys.body).includes('Thursdays'), JSON.stringify(deploys.body));
  });

  test('an imported line holding a secret is stored redacted, once: importing it again (on the other node) adds no copy', async () => {
    const line = `${JSON.stringify({ type: 'semantic', content: `The release job signs tags with the GitHub token ${GITHUB_TOKEN}.` })}\n`;
    const first = await call(nodes[0]!, 'alice', 'POST', '/v1/memory/import', line);
    assert.deepEqual(first.body, { imported: 1, skipped: [] });
    const again = await call(nodes[1]!, 'alice', 'POST', '/v1/memory/import', line);
    assert.deepEqual(again.body, { imported: 0, skipped: [{ line: 1, reason: 'already in memory' }] });
    const stored = await team.pool.query("SELECT content FROM memory_units WHERE content LIKE 'The release job signs tags%'");
    assert.equal(stored.rows.length, 1, JSON.stringify(stored.rows));
    assert.match(stored.rows[0].content, /GitHub token \[redacted [a-z-]+\]\.$/);
  });

  test('ingest on a node stores the turns in the member’s scope, once, and captures the rule a turn states', async () => {
    const turns = [
      { role: 'user', content: 'From now on, always write dates as YYYY-MM-DD in reports.', id: 't1' },
      { role: 'assistant', content: 'Understood, ISO dates from now on.', id: 't1' },
    ];
    const ingested = await call(nodes[0]!, 'alice', 'POST', '/v1/memory/ingest', { session_id: 'notes-1', turns });
    assert.equal(ingested.status, 200, JSON.stringify(ingested.body));
    assert.equal(ingested.body.scope, 'user:alice');
    assert.equal(ingested.body.stored.length, 2);
    const again = await call(nodes[1]!, 'alice', 'POST', '/v1/memory/ingest', { session_id: 'notes-1', turns });
    assert.equal(again.body.stored.length, 0, 'ingest is idempotent by session and turn id, across nodes');
    const rule = await team.pool.query("SELECT scope, core FROM memory_units WHERE origin = 'rule' AND content LIKE '%YYYY-MM-DD%'");
    assert.equal(rule.rows.length, 1, 'the stated rule became a standing instruction');
    assert.equal(rule.rows[0].scope, 'user:alice');
    assert.equal((await call(nodes[1]!, 'bob', 'POST', '/v1/memory/ingest', { scope: 'user:alice', session_id: 'x', turns })).status, 403);
    // Their raw turns are already in memory: the scope's export imported back adds nothing.
    const exported = await call(nodes[0]!, 'alice', 'GET', '/v1/memory/export');
    assert.match(exported.body, /"origin":"raw_turn"/);
    const back = await call(nodes[1]!, 'alice', 'POST', '/v1/memory/import', exported.body);
    assert.equal(back.body.imported, 0, JSON.stringify(back.body));
  });

  test('a skill edited on one node is served by the other within 1 s, and a revert restores its text; members cannot edit', async () => {
    const read = async (node: ProxyHandle) => (await call(node, 'owner', 'GET', `/v1/skills/${SKILL}`)).body as { body: string; version: number };
    const before = await read(nodes[1]!);
    assert.equal(before.body, ORIGINAL_BODY);

    const editedBody = '# Release Notes\n\n1. **Group by audience.** Users first, operators second.\n2. **Link every issue.** One link per change.';
    const edit = await call(nodes[0]!, 'owner', 'PUT', `/v1/skills/${SKILL}`, {
      description: 'Use when writing release notes or a changelog entry for a version.',
      body: editedBody,
    });
    assert.equal(edit.status, 200, JSON.stringify(edit.body));
    assert.equal(edit.body.version, before.version + 1);
    const editedAt = Date.now();
    assert.equal((await read(nodes[0]!)).body, editedBody, 'the editing node serves its edit at once');
    await waitFor(async () => (await read(nodes[1]!)).body === editedBody, 1_000, 20);
    assert.ok(Date.now() - editedAt <= 1_000);
    // The same edit saved again is no change of the team's library: no version, no generation.
    const same = await call(nodes[1]!, 'owner', 'PUT', `/v1/skills/${SKILL}`, {
      description: 'Use when writing release notes or a changelog entry for a version.',
      body: editedBody,
    });
    assert.deepEqual(
      { status: same.status, action: same.body.action, version: same.body.version, generation: same.body.generation },
      { status: 200, action: 'unchanged', version: edit.body.version, generation: edit.body.generation },
    );

    const revert = await call(nodes[1]!, 'owner', 'POST', `/v1/skills/${SKILL}/revert`);
    assert.equal(revert.status, 200, JSON.stringify(revert.body));
    assert.equal(revert.body.action, 'revert');
    assert.equal(revert.body.version, before.version + 2, 'a revert is a new version');
    const revertedAt = Date.now();
    await waitFor(async () => (await read(nodes[0]!)).body === ORIGINAL_BODY, 1_000, 20);
    assert.ok(Date.now() - revertedAt <= 1_000);
    const versions = await team.pool.query('SELECT action, source FROM skill_versions WHERE name = $1 ORDER BY id', [SKILL]);
    assert.deepEqual(
      versions.rows.slice(-2).map((row: { action: string; source: string }) => [row.action, row.source]),
      [
        ['manual', 'http edit'],
        ['revert', `revert to v${before.version}`],
      ],
    );

    const member = await call(nodes[0]!, 'alice', 'PUT', `/v1/skills/${SKILL}`, { description: 'Use when planting.', body: 'Planted.' });
    assert.equal(member.status, 403);
    assert.equal((await call(nodes[0]!, 'owner', 'POST', '/v1/skills/no-such-skill/revert')).status, 404);
    const admin = await call(nodes[0]!, 'owner', 'GET', '/v1/admin/jobs');
    assert.equal(admin.status, 501, 'the admin routes are the personal install’s');
    assert.equal(admin.body.error.code, 'not_served_by_team_node');
  });
  test('two nodes editing one skill at once keep one edit and answer the other with 409 skill_conflict', async () => {
    const base = (await call(nodes[0]!, 'owner', 'GET', `/v1/skills/${SKILL}`)).body as { version: number };
    const description = 'Use when writing release notes or a changelog entry for a version.';
    const bodies = ['# Release Notes\n\nEdited on node one.', '# Release Notes\n\nEdited on node two.'];
    // The race made certain: both requests read the skill, then wait on its row, held here, until both are waiting.
    const holder = await team.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT version FROM skills WHERE name = $1 FOR UPDATE', [SKILL]);
      const edits = nodes.map((node, index) => call(node, 'owner', 'PUT', `/v1/skills/${SKILL}`, { description, body: bodies[index] }));
      await waitFor(
        async () => Number((await team.pool.query("SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'")).rows[0].n) >= 2,
        10_000,
        20,
      );
      await holder.query('COMMIT');
      const answers = await Promise.all(edits);
      const statuses = answers.map((answer) => answer.status).sort();
      assert.deepEqual(statuses, [200, 409], JSON.stringify(answers.map((answer) => answer.body)));
      const won = answers.findIndex((answer) => answer.status === 200);
      const lost = answers[1 - won]!;
      assert.equal(lost.body.error.code, 'skill_conflict');
      assert.equal(answers[won]!.body.version, base.version + 1);
      const kept = bodies[won]!;
      for (const node of nodes)
        await waitFor(async () => ((await call(node, 'owner', 'GET', `/v1/skills/${SKILL}`)).body as { body: string }).body === kept, 2_000, 20);
      const versions = await team.pool.query('SELECT count(*) AS n FROM skill_versions WHERE name = $1 AND version > $2', [SKILL, base.version]);
      assert.equal(Number(versions.rows[0].n), 1, 'one new version: the other edit was not written over it');
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
  });

  test('a save that says what the skill says waits for a write in flight, as a write does, and answers from what it left: 409 when it moved the skill on, not "unchanged" at the old version', async () => {
    const seen = (await call(nodes[0]!, 'owner', 'GET', `/v1/skills/${SKILL}`)).body as { body: string; description: string; version: number };
    // Another node's write, held open here: the generation taken, the skill's row moved on, not yet committed.
    const holder = await team.pool.connect();
    try {
      await holder.query('BEGIN');
      const bumped = await holder.query('UPDATE state SET value = (value::bigint + 1)::text WHERE key = $1 RETURNING value', [GENERATION_KEY]);
      const generation = Number(bumped.rows[0].value);
      await holder.query('SELECT version FROM skills WHERE name = $1 FOR UPDATE', [SKILL]);
      const moved = await holder.query(
        'UPDATE skills SET version = version + 1, content = replace(content, $2, $3), generation = $4 WHERE name = $1 RETURNING version, content',
        [SKILL, seen.body, `${seen.body}\n\nWritten by another node.`, generation],
      );
      await holder.query(
        "INSERT INTO skill_versions (name, version, action, content, generation, source, created_at) VALUES ($1, $2, 'update', $3, $4, 'test', 0)",
        [SKILL, moved.rows[0].version, moved.rows[0].content, generation],
      );
      await holder.query('SELECT pg_notify($1, $2)', [SKILLS_CHANNEL, JSON.stringify({ generation })]);

      let answered = false;
      const save = call(nodes[0]!, 'owner', 'PUT', `/v1/skills/${SKILL}`, { description: seen.description, body: seen.body }).finally(() => (answered = true));
      const waiting = async () => Number((await team.pool.query("SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'")).rows[0].n) >= 1;
      await waitFor(async () => answered || (await waiting()), 10_000, 20);
      if (answered) assert.fail(`the save answered without waiting for the write in flight: ${JSON.stringify((await save).body)}`);
      await holder.query('COMMIT');
      const answer = await save;
      assert.equal(answer.status, 409, JSON.stringify(answer.body));
      assert.equal(answer.body.error.code, 'skill_conflict');
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
  });
});
