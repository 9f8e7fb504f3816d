/**
 * Team nodes learn from the team store: sessions recorded by any node are evolved into skills by
 * whichever node leases the job; edits two nodes make to one skill at once are both kept, and a
 * node killed mid-job gives the job back, to be done once by another. Real `metaclaw start`
 * nodes and OpenAI SDK clients; only the LLM is scripted.
 */
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import pg from 'pg';
import { openDatabase } from '../src/store/index.js';
import { isEvolverCall, learningAwareUpstream, session, userText } from './support/evolver.js';
import { postgresSkip, startPostgres, type TestPostgres } from './support/postgres.js';
import { runCli, startProxy, tempHome, waitFor, type ProxyHandle } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

const OWNER_KEY = 'owner-key-for-the-team-learning-test';
const SKILL = 'git-commit-hygiene';

let postgres: TestPostgres;
let url: string;
let upstream: ScriptedUpstream;
let pool: pg.Pool;
let seed: string;
const nodes: ProxyHandle[] = [];
const keys: Record<string, string> = {};
/** Evolver calls per session marker, and how the evolver answers each session. */
const calls = new Map<string, number>();
let answer: (marker: string, call: number) => { delayMs: number; hang?: boolean };

function teamEnv(): Record<string, string> {
  return { METACLAW_DATABASE_URL: url, METACLAW_PROXY_API_KEY: OWNER_KEY };
}

async function cli(args: string[]): Promise<string> {
  const result = await runCli(args, { home: seed, env: teamEnv() });
  assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

function client(node: ProxyHandle, member: string): OpenAI {
  return new OpenAI({ baseURL: `${node.url}/v1`, apiKey: keys[member], maxRetries: 0 });
}

async function rows<T>(sql: string, params: unknown[] = []): Promise<T[]> {
  return (await pool.query(sql, params)).rows as T[];
}

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
    postgres = await startPostgres();
    url = postgres.createDatabase('team_learning');
    pool = new pg.Pool({ connectionString: url, max: 2 });
    pool.on('error', () => undefined);
    upstream = await ScriptedUpstream.start();
    const evolver = learningAwareUpstream({ chat: 'Squashed.' });
    upstream.defaultHandler = (request, response) => {
      if (!isEvolverCall(request)) return evolver(request, response);
      const marker = /MARKER-[A-Z]+/.exec(userText(request))?.[0] ?? 'MARKER-NONE';
      const call = (calls.get(marker) ?? 0) + 1;
      calls.set(marker, call);
      const { delayMs, hang } = answer(marker, call);
      if (hang) return; // never answered: the node holding the job is killed meanwhile
      return learningAwareUpstream({ evolver: () => update(marker), delayMs })(request, response);
    };
    seed = tempHome('metaclaw-team-learning-seed-');
    mkdirSync(join(seed, 'skills', SKILL), { recursive: true });
    writeFileSync(
      join(seed, 'skills', SKILL, 'SKILL.md'),
      `---\nname: ${SKILL}\ndescription: "Use when committing or cleaning up git history before merge: squash, rebase, messages."\n---\n\n# Focused Git Commits\n\n1. **Commit small.** One change per commit.\n`,
    );
    openDatabase(join(seed, 'metaclaw.db')).close(); // the personal database the import reads
    await cli(['store', 'migrate']);
    await cli(['store', 'import-sqlite', seed]);
    for (const name of ['alice', 'bob', 'carol']) keys[name] = (JSON.parse(await cli(['team', 'add-member', name, '--json'])) as { key: string }).key;
    for (let index = 0; index < 2; index++)
      nodes.push(
        await startProxy({
          env: teamEnv(),
          config: {
            llm: { api_base: `${upstream.url}/v1`, api_key: 'upstream-key' },
            memory: { enabled: false },
            skills: { evolution_every_n_turns: 0 },
            learning: { lease_seconds: 5 },
          },
        }),
      );
  });

  after(async () => {
    for (const node of nodes) await node.dispose().catch(() => undefined);
    await pool?.end().catch(() => undefined);
    await upstream?.close();
    postgres?.stop();
    if (seed) rmSync(seed, { recursive: true, force: true });
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
    for (const request of upstream.modelRequests().filter(isEvolverCall))
      assert.match(userText(request), /#### git-commit-hygiene \(category [a-z_]+, v1\)/, 'each evolver was shown v1 in full: the edits were planned concurrently');
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
});
