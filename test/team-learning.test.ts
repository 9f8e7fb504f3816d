/**
 * Team nodes learn from the team store: sessions recorded by any node are evolved into skills by
 * whichever node leases the job; edits two nodes make to one skill at once are both kept, and a
 * node killed mid-job gives the job back, to be done once by another. Real `metaclaw start`
 * nodes and OpenAI SDK clients; only the LLM is scripted.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { openDatabase } from '../src/store/index.js';
import { PgSkillProposals, PgSkillStore } from '../src/store/postgres/index.js';
import { isEvolverCall, learningAwareUpstream, session, userText } from './support/evolver.js';
import { sendJson } from './support/http.js';
import { errorReply } from './support/upstream.js';
import { postgresSkip } from './support/postgres.js';
import { tempHome, waitFor, type ProxyHandle } from './support/proxy.js';
import { teamForTests, teamHelpers } from './support/team.js';

const OWNER_KEY = 'owner-key-for-the-team-learning-test';
const SKILL = 'git-commit-hygiene';

const team = teamForTests('team_learning');
const { nodes } = team;
const keys: Record<string, string> = {};
/** Evolver calls per session marker, and how the evolver answers each session. */
const calls = new Map<string, number>();
let answer: (marker: string, call: number) => { delayMs: number; hang?: boolean; retryAfterSeconds?: number };

const { cli, client, rows, addMembers, startNodes } = teamHelpers(() => team, OWNER_KEY, keys);

/** The evolver's answer for a session: an update of the skill that teaches one marked step. */
function update(marker: string): string {
  return JSON.stringify({
    changes: [
      {
        action: 'update',
        name: SKILL,
        description: 'Use when committing or cleaning up git history before merge.',
        body: `# Focused Git Commits\n\n**Steps**\n1. **Commit small.** One change per commit.\n2. **${marker}.** Learned in this session.`,
        evidence: [`${marker} evidence`],
      },
    ],
  });
}

describe('team mode: nodes learn from the team store', { skip: postgresSkip() }, () => {
  before(async () => {
    const evolver = learningAwareUpstream({ chat: 'Squashed.' });
    team.upstream.defaultHandler = (request, response) => {
      if (!isEvolverCall(request)) return evolver(request, response);
      const marker = /MARKER-[A-Z]+/.exec(userText(request))?.[0] ?? 'MARKER-NONE';
      const call = (calls.get(marker) ?? 0) + 1;
      calls.set(marker, call);
      const { delayMs, hang, retryAfterSeconds } = answer(marker, call);
      if (hang) return; // never answered: the node holding the job is killed meanwhile
      if (retryAfterSeconds !== undefined)
        return errorReply(
          429,
          { error: { message: 'Rate limit reached', type: 'rate_limit_error' } },
          { 'retry-after': String(retryAfterSeconds) },
        )(request, response);
      return learningAwareUpstream({ evolver: () => update(marker), delayMs })(request, response);
    };
    mkdirSync(join(team.seed, 'skills', SKILL), { recursive: true });
    writeFileSync(
      join(team.seed, 'skills', SKILL, 'SKILL.md'),
      `---\nname: ${SKILL}\ndescription: "Use when committing or cleaning up git history before merge: squash, rebase, messages."\n---\n\n# Focused Git Commits\n\n1. **Commit small.** One change per commit.\n`,
    );
    openDatabase(join(team.seed, 'metaclaw.db')).close(); // the personal database the import reads
    await cli(['store', 'migrate']);
    await cli(['store', 'import-sqlite', team.seed]);
    await addMembers(['alice', 'bob', 'carol']);
    nodes.push(
      ...(await startNodes(2, {
        llm: { api_base: `${team.upstream.url}/v1`, api_key: 'upstream-key' },
        memory: { auto_extract: false },
        skills: { evolution_every_n_turns: 0 },
        learning: { lease_seconds: 5 },
      })),
    );
  });

  test('two nodes evolving one skill at once both keep their edit: v1 → v2 → v3 with both steps, each job done once, by two nodes', async () => {
    // Slow enough that both nodes have planned against v1 before either writes.
    answer = () => ({ delayMs: 1_500 });
    await Promise.all([
      session(client(nodes[0]!, 'alice'), 'team-session-a', ['squash my git commits MARKER-ALPHA', 'no, keep the merge commit MARKER-ALPHA']),
      session(client(nodes[1]!, 'bob'), 'team-session-b', ['squash my git commits MARKER-BETA', 'no, rebase instead MARKER-BETA']),
    ]);
    const done = await waitFor(
      async () => {
        const jobs = await rows<{ status: string; payload: string }>("SELECT status, payload FROM jobs WHERE kind = 'skills.evolve'");
        return jobs.filter((job) => job.status === 'done').length === 2 ? jobs : undefined;
      },
      30_000,
      200,
    );
    assert.equal(done.length, 2);
    for (const request of team.upstream.modelRequests().filter(isEvolverCall))
      assert.match(
        userText(request),
        /#### git-commit-hygiene \(category [a-z_]+, v1\)/,
        'each evolver was shown v1 in full: the edits were planned concurrently',
      );
    assert.equal(calls.get('MARKER-ALPHA'), 1);
    assert.equal(calls.get('MARKER-BETA'), 1);
    const [skill] = await rows<{ version: number; content: string }>('SELECT version, content FROM skills WHERE name = $1', [SKILL]);
    assert.equal(skill!.version, 3, 'imported v1, then one version per session');
    assert.match(skill!.content, /MARKER-ALPHA/);
    assert.match(skill!.content, /MARKER-BETA/, 'the second edit was merged into the first, not written over it');
    const versions = await rows<{ source: string }>("SELECT source FROM skill_versions WHERE name = $1 AND source LIKE 'session %' ORDER BY id", [SKILL]);
    assert.deepEqual(versions.map((row) => row.source).sort(), ['session alice~team-session-a', 'session bob~team-session-b']);
    const effects = await rows<{ node_id: string }>("SELECT node_id FROM job_effects WHERE job_id IN (SELECT id FROM jobs WHERE kind = 'skills.evolve')");
    assert.equal(effects.length, 2);
    assert.equal(new Set(effects.map((row) => row.node_id)).size, 2, 'each node ran one of the jobs');
    // Every node's mirror follows: both serve v3.
    for (const node of nodes)
      await waitFor(async () => {
        const report = (await (await fetch(`${node.url}/status`, { headers: { authorization: `Bearer ${OWNER_KEY}` } })).json()) as {
          skills: { generation: number };
        };
        return report.skills.generation >= 3;
      }, 5_000);
  });

  test('the owner reads the team library and decides proposals on any node, once: a second decision is 404, a member key is refused', async () => {
    const owner = (node: ProxyHandle, method: string, path: string) =>
      sendJson(`${node.url}${path}`, method, { headers: { authorization: `Bearer ${OWNER_KEY}` } });
    const list = await owner(nodes[1]!, 'GET', '/v1/skills');
    assert.equal(list.status, 200);
    assert.ok(list.body.data.some((skill: { name: string; version: number }) => skill.name === SKILL && skill.version >= 3));
    const one = await owner(nodes[0]!, 'GET', `/v1/skills/${SKILL}`);
    assert.equal(one.status, 200);
    assert.deepEqual(
      one.body.versions.map((version: { version: number }) => version.version),
      Array.from({ length: one.body.version }, (_, index) => index + 1),
    );
    const memberTry = await sendJson(`${nodes[0]!.url}/v1/skills`, 'GET', { headers: { authorization: `Bearer ${keys['alice']}` } });
    assert.equal(memberTry.status, 403);

    const store = new PgSkillStore(team.pool);
    const proposals = new PgSkillProposals(team.pool, store);
    const draft = {
      name: 'release-notes',
      description: 'Use when writing release notes for a deploy: what changed, risks, rollback.',
      body: '# Release notes\n\n1. **List user-visible changes.** One line each.\n2. **Name the risks.** And the rollback.',
      origin: 'evolved' as const,
    };
    const approveId = await proposals.add('alice~s1', { action: 'create', draft, evidence: ['e'], reason: undefined });
    const rejectId = await proposals.add('bob~s2', { action: 'create', draft: { ...draft, name: 'release-notes-2' }, evidence: ['e'], reason: undefined });
    const pending = await owner(nodes[0]!, 'GET', '/v1/skills/proposals');
    assert.deepEqual(pending.body.data.map((proposal: { id: number }) => proposal.id).sort(), [approveId, rejectId].sort());
    const approved = await owner(nodes[1]!, 'POST', `/v1/skills/proposals/${approveId}/approve`);
    assert.equal(approved.status, 200, JSON.stringify(approved.body));
    assert.equal(approved.body.name, 'release-notes');
    assert.equal(approved.body.version, 1);
    assert.equal((await owner(nodes[0]!, 'POST', `/v1/skills/proposals/${approveId}/approve`)).status, 404, 'decided once, across nodes');
    assert.equal((await owner(nodes[0]!, 'POST', `/v1/skills/proposals/${rejectId}/reject`)).status, 200);
    assert.equal((await owner(nodes[1]!, 'POST', `/v1/skills/proposals/${rejectId}/approve`)).status, 404);
    await waitFor(async () => (await owner(nodes[0]!, 'GET', '/v1/skills/release-notes')).status === 200, 5_000);
    assert.equal((await owner(nodes[1]!, 'GET', '/v1/skills/release-notes-2')).status, 404);
  });

  test("a member reads, searches, adds and forgets her own memories over HTTP on any node; another member's are invisible to him", async () => {
    const call = (node: ProxyHandle, member: string, method: string, path: string, body?: unknown) =>
      sendJson(`${node.url}${path}`, method, { headers: { authorization: `Bearer ${keys[member]}` }, ...(body === undefined ? {} : { body }) });
    const added = await call(nodes[0]!, 'alice', 'POST', '/v1/memory', {
      type: 'preference',
      content: 'Alice reviews pull requests in the morning, never after 17:00.',
    });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    assert.equal(added.body.scope, 'user:alice');
    const id = added.body.id as string;
    const found = await call(nodes[1]!, 'alice', 'POST', '/v1/memory/search', { query: 'when does Alice review pull requests?' });
    assert.equal(found.status, 200);
    assert.ok(
      found.body.results.some((hit: { id: string }) => hit.id === id),
      'another node finds it in her scope',
    );
    assert.equal((await call(nodes[1]!, 'alice', 'GET', `/v1/memory/${id}`)).status, 200);
    assert.equal((await call(nodes[1]!, 'bob', 'GET', `/v1/memory/${id}`)).status, 404, "another member's memory is as missing as one that never was");
    const bobs = await call(nodes[0]!, 'bob', 'POST', '/v1/memory/search', { query: 'when does Alice review pull requests?' });
    assert.equal(bobs.body.scope, 'user:bob');
    assert.ok(!bobs.body.results.some((hit: { id: string }) => hit.id === id));
    assert.equal((await call(nodes[0]!, 'bob', 'POST', '/v1/memory/search', { query: 'pull requests', scope: 'user:alice' })).status, 403);
    assert.equal((await call(nodes[0]!, 'bob', 'DELETE', `/v1/memory/${id}`)).status, 404);

    const forgotten = await call(nodes[1]!, 'alice', 'DELETE', `/v1/memory/${id}`);
    assert.equal(forgotten.status, 200);
    assert.deepEqual(forgotten.body, { id, deleted: true });
    assert.equal((await call(nodes[0]!, 'alice', 'GET', `/v1/memory/${id}`)).status, 404);
    const after = await call(nodes[0]!, 'alice', 'POST', '/v1/memory/search', { query: 'when does Alice review pull requests?' });
    assert.ok(!after.body.results.some((hit: { id: string }) => hit.id === id));
    assert.equal(Number((await rows<{ n: string }>("SELECT count(*) AS n FROM memory_units WHERE content LIKE '%reviews pull requests%'"))[0]!.n), 0);
    assert.equal(Number((await rows<{ n: string }>('SELECT count(*) AS n FROM memory_search_docs WHERE unit_id = $1', [id]))[0]!.n), 0);
  });

  test('kill -9 of the node holding a job mid-call: after its lease the other node does the job, and its effect is written once', async () => {
    // The first evolver call never answers; the call made after the takeover answers at once.
    answer = (_marker, call) => (call === 1 ? { delayMs: 0, hang: true } : { delayMs: 0 });
    const before = (await rows<{ version: number }>('SELECT version FROM skills WHERE name = $1', [SKILL]))[0]!.version;
    await session(client(nodes[0]!, 'carol'), 'team-session-c', ['squash my git commits MARKER-GAMMA', 'no, fixup instead MARKER-GAMMA']);
    const held = await waitFor(
      async () => {
        const [job] = await rows<{ id: string; leased_by: string | null; status: string }>(
          "SELECT id, leased_by, status FROM jobs WHERE kind = 'skills.evolve' AND payload LIKE '%team-session-c%'",
        );
        return job?.status === 'leased' && calls.get('MARKER-GAMMA') === 1 ? job : undefined;
      },
      15_000,
      100,
    );
    const pid = Number(/-(\d+)-[0-9a-f]+$/.exec(held.leased_by!)?.[1]);
    assert.ok(pid > 0, `the lease names its node's process (${held.leased_by})`);
    process.kill(pid, 'SIGKILL');
    const killedAt = Date.now();

    const finished = await waitFor(
      async () => {
        const [job] = await rows<{ status: string; attempts: number; leased_by: string }>('SELECT status, attempts, leased_by FROM jobs WHERE id = $1', [
          held.id,
        ]);
        return job?.status === 'done' ? job : undefined;
      },
      30_000,
      200,
    );
    assert.ok(Date.now() - killedAt >= 3_000, "the job waited for the dead node's lease to run out");
    assert.equal(finished.attempts, 2, 'one attempt on the killed node, one on the survivor');
    assert.notEqual(finished.leased_by, held.leased_by);
    assert.equal(calls.get('MARKER-GAMMA'), 2);
    const effects = await rows<{ node_id: string }>('SELECT node_id FROM job_effects WHERE job_id = $1', [held.id]);
    assert.equal(effects.length, 1, 'the effect is recorded once');
    assert.notEqual(effects[0]!.node_id, held.leased_by);
    const [skill] = await rows<{ version: number; content: string }>('SELECT version, content FROM skills WHERE name = $1', [SKILL]);
    assert.equal(skill!.version, before + 1, 'the skill moved on by exactly one version');
    assert.match(skill!.content, /MARKER-GAMMA/);
    const gamma = await rows<{ n: string }>("SELECT count(*) AS n FROM skill_versions WHERE name = $1 AND source = 'session carol~team-session-c'", [SKILL]);
    assert.equal(Number(gamma[0]!.n), 1);
  });

  test("metaclaw skills export with a store URL writes the team's skills, as the nodes evolved them, as SKILL.md folders", async () => {
    const out = tempHome('metaclaw-team-export-');
    try {
      const names = JSON.parse(await cli(['skills', 'export', out, '--json'])) as string[];
      assert.ok(names.includes(SKILL), names.join(', '));
      const text = readFileSync(join(out, SKILL, 'SKILL.md'), 'utf8');
      const [stored] = await rows<{ content: string }>('SELECT content FROM skills WHERE name = $1', [SKILL]);
      assert.equal(text, stored!.content, "the SKILL.md is the team store's text, byte for byte");
      assert.match(text, /MARKER-GAMMA/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  test('a learning LLM rate limit with retry-after pauses the node that met it that long (not the 5 s job backoff), shown in its /status, and the job is done once the pause ends', async () => {
    const RETRY_AFTER_S = 14;
    answer = (_marker, call) => (call === 1 ? { delayMs: 0, retryAfterSeconds: RETRY_AFTER_S } : { delayMs: 0 });
    // The kill -9 test left one node running.
    const alive: ProxyHandle[] = [];
    for (const node of nodes)
      if (
        await fetch(`${node.url}/healthz`).then(
          (reply) => reply.ok,
          () => false,
        )
      )
        alive.push(node);
    assert.equal(alive.length, 1, 'one node is left');
    const node = alive[0]!;
    await session(client(node, 'alice'), 'team-session-d', ['squash my git commits MARKER-DELTA', 'no, fixup instead MARKER-DELTA']);
    const statusOf = async () =>
      (await (await fetch(`${node.url}/status`, { headers: { authorization: `Bearer ${OWNER_KEY}` } })).json()) as {
        learning: { paused_reason: string | null; dead_lettered: number };
      };
    const limited = await waitFor(async () => (calls.get('MARKER-DELTA') === 1 ? statusOf() : undefined), 20_000, 100);
    const limitedAt = Date.now();
    const paused = await waitFor(async () => ((await statusOf()).learning.paused_reason ? statusOf() : undefined), 5_000, 100);
    assert.match(paused.learning.paused_reason!, /rate limited .*429.*wait until/);
    const until = Date.parse(/wait until (\S+)$/.exec(paused.learning.paused_reason!)![1]!);
    assert.ok(until - limitedAt > (RETRY_AFTER_S - 3) * 1000, `it waits the ${RETRY_AFTER_S} s the upstream asked for (${paused.learning.paused_reason})`);
    // Past the job's own first backoff (4-6 s): a node that ignored retry-after would have asked again by now.
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    assert.equal(calls.get('MARKER-DELTA'), 1, 'no call while the node is paused');
    const done = await waitFor(
      async () => {
        const [job] = await rows<{ status: string; attempts: number }>(
          "SELECT status, attempts FROM jobs WHERE kind = 'skills.evolve' AND payload LIKE '%team-session-d%'",
        );
        return job?.status === 'done' ? job : undefined;
      },
      30_000,
      200,
    );
    assert.equal(done.attempts, 2, 'the limited attempt, then the one after the pause');
    assert.equal(calls.get('MARKER-DELTA'), 2);
    assert.ok(Date.now() - limitedAt >= (RETRY_AFTER_S - 1) * 1000, 'the second call waited for the pause');
    assert.equal(limited.learning.dead_lettered, (await statusOf()).learning.dead_lettered, 'nothing was dead-lettered');
  });
});
