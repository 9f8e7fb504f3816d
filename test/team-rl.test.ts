/**
 * RL on the team store: two `metaclaw start` nodes on one PostgreSQL record every main turn of
 * their members as an RL sample in the team store, the judge scores each sample once on whichever
 * node leases its job (spending the team's learning budget), a change of the team's skills drops
 * older untrained samples, and the owner reads the buffer with /v1/rl and `metaclaw status`.
 * Real nodes and OpenAI SDK clients; only the LLM is scripted.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { PgSkillStore } from '../src/store/postgres/index.js';
import { isJudgeCall, learningAwareUpstream, session, userText } from './support/evolver.js';
import { sendJson } from './support/http.js';
import { postgresSkip } from './support/postgres.js';
import { waitFor } from './support/proxy.js';
import { teamForTests, teamHelpers } from './support/team.js';

const OWNER_KEY = 'owner-key-for-the-team-rl-test';

const team = teamForTests('team_rl');
const { nodes } = team;
const keys: Record<string, string> = {};

const { startTeam, client, rows } = teamHelpers(() => team, OWNER_KEY, keys);

/** The user texts the judge was shown (its instruction), one entry per judge call. */
function judgedTexts(): string[] {
  return team.upstream
    .modelRequests()
    .filter(isJudgeCall)
    .map((request) => /TURN-[A-Z]\d/.exec(userText(request))?.[0] ?? '?');
}

describe('team mode: RL samples on the team store', { skip: postgresSkip() }, () => {
  before(async () => {
    team.upstream.defaultHandler = learningAwareUpstream({ chat: 'Done.', judge: () => 'The answer did what was asked.\nScore: 1' });
    nodes.push(
      ...(await startTeam(['alice', 'bob'], 2, {
        mode: 'skills_only',
        llm: { api_base: `${team.upstream.url}/v1`, api_key: 'upstream-key' },
        rl: { enabled: true, prm_m: 1 },
        skills: { enabled: false, auto_evolve: false },
        memory: { enabled: false },
        learning: { lease_seconds: 5 },
      })),
    );
  });

  test('traffic on two nodes: every main turn is one sample in the team store, and the judge scores each exactly once, within the team budget', async () => {
    await Promise.all([
      session(client(nodes[0]!, 'alice'), 'rl-session-a', ['deploy the api TURN-A1', 'now the worker TURN-A2', 'and the cron TURN-A3']),
      session(client(nodes[1]!, 'bob'), 'rl-session-b', ['rotate the keys TURN-B1', 'check the logs TURN-B2', 'close the ticket TURN-B3']),
    ]);
    const scored = await waitFor(
      async () => {
        const samples = await rows<{ turn_id: string; judge_state: string; reward: number | null; session_id: string }>(
          'SELECT turn_id, judge_state, reward, session_id FROM rl_samples ORDER BY session_id, seq',
        );
        return samples.length === 6 && samples.every((sample) => sample.judge_state === 'scored') && samples;
      },
      30_000,
      200,
    );
    assert.deepEqual(
      scored.map((sample) => sample.reward),
      [1, 1, 1, 1, 1, 1],
    );
    assert.deepEqual(
      [...new Set(scored.map((sample) => sample.session_id))].sort(),
      ['alice~rl-session-a', 'bob~rl-session-b'],
      'samples from both nodes, in their members’ sessions',
    );
    // Each sample judged once (rl.prm_m 1: one call per sample), whichever node ran its job.
    assert.deepEqual(judgedTexts().sort(), ['TURN-A1', 'TURN-A2', 'TURN-A3', 'TURN-B1', 'TURN-B2', 'TURN-B3']);
    const jobs = await rows<{ status: string }>("SELECT status FROM jobs WHERE kind = 'rl.judge'");
    assert.deepEqual(
      jobs.map((job) => job.status),
      Array(6).fill('done'),
    );
    const outcomes = await rows<{ judge_score: number }>('SELECT judge_score FROM turn_outcomes WHERE turn_id = ANY($1::text[])', [
      scored.map((sample) => sample.turn_id),
    ]);
    assert.equal(outcomes.filter((outcome) => outcome.judge_score === 1).length, 6, "each score is also its turn's credit");
    const spend = await rows<{ calls: number }>("SELECT calls FROM learning_spend WHERE kind = 'rl.judge'");
    assert.equal(
      spend.reduce((sum, row) => sum + Number(row.calls), 0),
      6,
      "the judge's calls are spent from the team's learning budget",
    );
  });

  test('the owner reads the team’s RL buffer on any node (/v1/rl, `metaclaw status`, `metaclaw rl status`); a member key is refused', async () => {
    for (const node of nodes) {
      const answer = await sendJson(`${node.url}/v1/rl`, 'GET', { headers: { authorization: `Bearer ${OWNER_KEY}` } });
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      assert.equal(answer.body.recording, true);
      assert.equal(answer.body.buffer.samples, 6);
      assert.equal(answer.body.buffer.by_state.scored, 6);
      assert.equal(answer.body.buffer.mean_reward, 1);
    }
    const member = await sendJson(`${nodes[0]!.url}/v1/rl`, 'GET', { headers: { authorization: `Bearer ${keys['alice']}` } });
    assert.equal(member.status, 403);
    const printed = await waitFor(
      async () => {
        const result = await nodes[1]!.cli(['status']);
        return result.code === 0 && /rl +6 samples \(6 scored/.test(result.stdout) && result.stdout;
      },
      15_000,
      500,
    );
    assert.match(printed, /a node of a team store/);
    const rlStatus = await nodes[0]!.cli(['rl', 'status']);
    assert.equal(rlStatus.code, 0, rlStatus.stderr);
    assert.match(rlStatus.stdout, /buffer +6 sample\(s\): 0 waiting for the next turn, 0 queued for the judge, 6 scored/);
  });

  test('a change of the team’s skills drops the untrained samples of older generations, as on one proxy', async () => {
    const before = await rows<{ skill_generation: string }>('SELECT DISTINCT skill_generation FROM rl_samples');
    assert.deepEqual(
      before.map((row) => Number(row.skill_generation)),
      [0],
    );
    await new PgSkillStore(team.pool).write(
      {
        name: 'deploy-checklist',
        description: 'Use when deploying a service: checks before and after.',
        body: '# Deploy\n\n1. **Check the health.** Before and after.',
      },
      { basedOn: 0, source: 'test' },
    );
    const dropped = await waitFor(
      async () => {
        const samples = await rows<{ dropped_for_generation: string | null }>('SELECT dropped_for_generation FROM rl_samples');
        return samples.every((sample) => sample.dropped_for_generation !== null) && samples;
      },
      10_000,
      200,
    );
    assert.deepEqual(
      dropped.map((sample) => Number(sample.dropped_for_generation)),
      Array(6).fill(1),
    );
    const answer = await sendJson(`${nodes[0]!.url}/v1/rl`, 'GET', { headers: { authorization: `Bearer ${OWNER_KEY}` } });
    assert.equal(answer.body.buffer.by_state.dropped, 6);
    assert.equal(answer.body.buffer.current_generation, 1);
  });
});
