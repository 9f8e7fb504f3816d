/**
 * A node's Prometheus metrics count the team store, as a personal install's count its own: the
 * learning queue, jobs by kind and outcome, active memories by type and RL samples by judge score,
 * whichever node did the work, read at scrape time. Two real `metaclaw start` nodes on one
 * PostgreSQL, members' traffic through the OpenAI SDK; only the LLM is scripted.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { learningAwareUpstream, session } from './support/evolver.js';
import { postgresSkip } from './support/postgres.js';
import { samples } from './support/prometheus.js';
import { waitFor, type ProxyHandle } from './support/proxy.js';
import { teamForTests, teamHelpers } from './support/team.js';

const OWNER_KEY = 'owner-key-for-the-team-metrics-test';

const team = teamForTests('team_metrics');
const { nodes } = team;
const keys: Record<string, string> = {};

const { startTeam, client, rows } = teamHelpers(() => team, OWNER_KEY, keys);

async function scrape(node: ProxyHandle, key: string): Promise<{ status: number; metrics: Map<string, number> }> {
  const response = await fetch(`${node.url}/metrics`, { headers: { authorization: `Bearer ${key}` } });
  const text = await response.text();
  return { status: response.status, metrics: response.status === 200 ? samples(text) : new Map() };
}

describe('team mode: a node’s /metrics counts the team store', { skip: postgresSkip() }, () => {
  before(async () => {
    // The judge's votes alternate, so both scores are counted.
    let judged = 0;
    team.upstream.defaultHandler = learningAwareUpstream({ chat: 'Done.', judge: () => `Score: ${++judged % 2 === 1 ? 1 : -1}` });
    nodes.push(
      ...(await startTeam(['alice', 'bob'], 2, {
        mode: 'skills_only',
        llm: { api_base: `${team.upstream.url}/v1`, api_key: 'upstream-key' },
        rl: { enabled: true, prm_m: 1 },
        skills: { auto_evolve: false },
        memory: { auto_extract: false },
        learning: { lease_seconds: 5 },
      })),
    );
    // Alice talks to one node, Bob to the other.
    await Promise.all([
      session(client(nodes[0]!, 'alice'), 'metrics-a', ['deploy the api to staging', 'now the worker', 'and the cron job']),
      session(client(nodes[1]!, 'bob'), 'metrics-b', ['rotate the database keys', 'check the audit logs']),
    ]);
    await waitFor(
      async () => {
        const judged = await rows<{ count: string }>("SELECT COUNT(*) AS count FROM rl_samples WHERE judge_state = 'scored'");
        const pending = await rows<{ count: string }>("SELECT COUNT(*) AS count FROM jobs WHERE status IN ('queued', 'leased')");
        return Number(judged[0]!.count) === 5 && Number(pending[0]!.count) === 0;
      },
      30_000,
      200,
    );
  });

  test('every node reports the team’s jobs, active memories and judge scores, whichever node did the work', async () => {
    const memories = await rows<{ type: string; count: string }>("SELECT type, COUNT(*) AS count FROM memory_units WHERE status = 'active' GROUP BY type");
    const episodes = Number(memories.find((row) => row.type === 'episodic')?.count ?? 0);
    assert.ok(episodes >= 5, `the members' raw turns are memories: ${JSON.stringify(memories)}`);
    const jobs = await rows<{ kind: string; count: string }>("SELECT kind, COUNT(*) AS count FROM jobs WHERE status = 'done' GROUP BY kind");
    const judgeJobs = Number(jobs.find((row) => row.kind === 'rl.judge')?.count ?? 0);
    assert.equal(judgeJobs, 5, JSON.stringify(jobs));
    const done = jobs.reduce((sum, row) => sum + Number(row.count), 0);
    for (const node of nodes) {
      const { status, metrics } = await scrape(node, OWNER_KEY);
      assert.equal(status, 200);
      assert.equal(metrics.get('metaclaw_memories{type=episodic}'), episodes, 'active memories of both members, by type');
      assert.equal(metrics.get('metaclaw_learning_jobs{kind=rl.judge,status=done}'), 5, 'the judge jobs both nodes ran');
      for (const { kind, count } of jobs) assert.equal(metrics.get(`metaclaw_learning_jobs{kind=${kind},status=done}`), Number(count), kind);
      assert.equal(metrics.get('metaclaw_learning_queue_jobs{state=done}'), done);
      assert.equal(metrics.get('metaclaw_learning_queue_jobs{state=queued}'), 0);
      assert.equal(metrics.get('metaclaw_judge_scores{score=1}'), 3, 'alternating votes over five samples');
      assert.equal(metrics.get('metaclaw_judge_scores{score=-1}'), 2);
    }
  });

  test('a new memory is counted at the next scrape, on any node', async () => {
    const before = (await scrape(nodes[1]!, OWNER_KEY)).metrics.get('metaclaw_memories{type=preference}') ?? 0;
    const added = await fetch(`${nodes[0]!.url}/v1/memory`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys['alice']}`, 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'Alice prefers blue-green deploys.', type: 'preference' }),
    });
    assert.equal(added.status, 201, await added.text());
    assert.equal((await scrape(nodes[1]!, OWNER_KEY)).metrics.get('metaclaw_memories{type=preference}'), before + 1);
  });

  test('the figures are the owner’s: a member key is refused /metrics on every node', async () => {
    for (const node of nodes) assert.equal((await scrape(node, keys['alice']!)).status, 403);
  });
});
