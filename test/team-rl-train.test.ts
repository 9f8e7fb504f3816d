/**
 * RL training on the team store: two `metaclaw start` nodes in mode rl on one PostgreSQL and one
 * Tinker-compatible service (the strict learning double). Both serve their members' main turns from
 * the team's policy, so every sample carries its token ids and logprobs; the judge scores them; one
 * node (the trainer's lock holder) runs the GRPO step exactly once; both nodes then serve the new
 * checkpoint; when the trainer stops, the other node takes over and resumes from its saved state.
 * Real nodes and OpenAI SDK clients; only the LLM (judge) and the training service are scripted.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { isJudgeCall } from './support/evolver.js';
import { sendJson } from './support/http.js';
import { postgresSkip } from './support/postgres.js';
import { waitFor, type ProxyHandle } from './support/proxy.js';
import { CHAR_VOCAB_SIZE, RL_MODEL } from './support/rl-proxy.js';
import { teamForTests, teamHelpers } from './support/team.js';
import { conversation, startRlTeam } from './support/team-rl.js';
import { TinkerDouble } from './support/tinker-double.js';

const OWNER_KEY = 'owner-key-for-the-team-rl-train-test';

const team = teamForTests('team_rl_train');
let double: TinkerDouble;
const { nodes } = team;
const keys: Record<string, string> = {};
/** the node left running once the first trainer stopped */
let survivor: ProxyHandle;

const { client, rows, startTeam } = teamHelpers(() => team, OWNER_KEY, keys);

interface Training {
  state: string;
  error: string | null;
  served: { step: number; samplerPath: string; pinned: boolean } | null;
  trainer: 'this node' | 'another node' | 'no node';
}

async function trainingOf(node: ProxyHandle): Promise<Training> {
  const answer = await sendJson(`${node.url}/status`, 'GET', { headers: { authorization: `Bearer ${OWNER_KEY}` } });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  const training = (answer.body as { rl: { training: Training | null } | null }).rl?.training;
  assert.ok(training, 'the node runs RL training');
  return training;
}

/** Both nodes' reports once both serve the policy of `step`. */
function servingStep(step: number): Promise<Training[]> {
  return waitFor(
    async () => {
      const reports = await Promise.all(nodes.map(trainingOf));
      return reports.every((report) => report.state === 'ready' && report.served?.step === step) && reports;
    },
    30_000,
    200,
  );
}

interface SampleRow {
  turn_id: string;
  session_id: string;
  policy_version: string | null;
  has_tokens: boolean;
  judge_state: string;
  reward: number | null;
  trained_step: string | null;
}

function samples(): Promise<SampleRow[]> {
  return rows<SampleRow>(
    `SELECT turn_id, session_id, policy_version, prompt_tokens IS NOT NULL AND response_tokens IS NOT NULL AND response_logprobs IS NOT NULL AS has_tokens,
            judge_state, reward, trained_step FROM rl_samples ORDER BY created_at, turn_id`,
  );
}

describe('team mode: one node trains the team’s policy, every node serves it', { skip: postgresSkip() }, () => {
  before(async () => {
    double = await TinkerDouble.start({ vocabSize: CHAR_VOCAB_SIZE, supportedModels: [RL_MODEL] });
    team.closeAfter(() => double.close());
    nodes.push(...(await startRlTeam({ seed: team.seed, startTeam, upstream: team.upstream, double })));
  });

  test('both nodes serve the team’s first policy from the Tinker service, listen for its changes, and exactly one of them trains', async () => {
    const reports = await servingStep(0);
    assert.equal(reports[0]!.served!.samplerPath, reports[1]!.served!.samplerPath, 'one policy for the team');
    assert.deepEqual(reports.map((report) => report.trainer).sort(), ['another node', 'this node']);
    assert.equal(double.callsTo('/api/v1/create_model').length, 1, 'only the trainer opens a training run');
    // Each node is told of a new served policy (a step, a rollback) rather than waiting for its slow poll.
    const listeners = await rows<{ count: string }>("SELECT COUNT(*) AS count FROM pg_stat_activity WHERE application_name = 'metaclaw-rl-policy'");
    assert.equal(Number(listeners[0]!.count), 2, 'both nodes listen for the served policy');
  });

  test('turns on both nodes are sampled from the policy, judged, and trained by one step on one node; then both nodes serve the new checkpoint', async () => {
    const [first] = await servingStep(0);
    const before = team.upstream.modelRequests().filter((request) => !isJudgeCall(request)).length;
    await Promise.all([
      conversation(client(nodes[0]!, 'alice'), 'train-a', ['deploy the api', 'now the worker']),
      conversation(client(nodes[1]!, 'bob'), 'train-b', ['rotate the keys', 'check the logs']),
    ]);
    assert.equal(team.upstream.modelRequests().filter((request) => !isJudgeCall(request)).length, before, 'the policy answered every main turn');

    // The turns reach the team store through each node's spool, just after their answers.
    const recorded = await waitFor(async () => {
      const found = await samples();
      return found.length === 4 && found;
    });
    assert.ok(
      recorded.every((sample) => sample.has_tokens && sample.policy_version === first!.served!.samplerPath),
      'every sample carries its token ids and logprobs, from the served policy',
    );
    assert.deepEqual([...new Set(recorded.map((sample) => sample.session_id.split('~')[0]))].sort(), ['alice', 'bob'], 'samples from both nodes');

    const steps = await waitFor(
      async () => {
        const found = await rows<{ step: string; status: string; samples: number; sampler_path: string | null }>(
          'SELECT step, status, samples, sampler_path FROM rl_steps ORDER BY step',
        );
        return found.some((row) => row.status === 'done') && found;
      },
      60_000,
      250,
    );
    // a moment for a second step, should a node wrongly take one
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const after = await rows<{ step: string; status: string; samples: number; sampler_path: string | null }>(
      'SELECT step, status, samples, sampler_path FROM rl_steps ORDER BY step',
    );
    assert.deepEqual(after, steps, 'no other step was taken');
    assert.deepEqual(
      steps.map((row) => [Number(row.step), row.status, row.samples]),
      [[1, 'done', 4]],
    );
    assert.equal(double.callsTo('/api/v1/forward_backward').length, 1, 'the step ran once, on one node');
    assert.equal(double.callsTo('/api/v1/optim_step').length, 1);
    const trained = await samples();
    assert.deepEqual(
      trained.map((sample) => [sample.judge_state, Number(sample.trained_step)]),
      Array(4).fill(['scored', 1]),
    );
    assert.deepEqual(trained.map((sample) => sample.reward).sort(), [-1, -1, 1, 1]);

    const reports = await servingStep(1);
    const checkpoint = steps[0]!.sampler_path!;
    assert.ok(
      reports.every((report) => report.served!.samplerPath === checkpoint),
      'both nodes serve the step’s weights',
    );
    await Promise.all([
      conversation(client(nodes[0]!, 'alice'), 'after-a', ['and the cron']),
      conversation(client(nodes[1]!, 'bob'), 'after-b', ['close the ticket']),
    ]);
    const latest = await waitFor(async () => {
      const found = (await samples()).filter((sample) => sample.session_id.endsWith('after-a') || sample.session_id.endsWith('after-b'));
      return found.length === 2 && found;
    });
    assert.ok(
      latest.every((sample) => sample.has_tokens && sample.policy_version === checkpoint),
      `new turns on both nodes are sampled from the new checkpoint: ${JSON.stringify(latest)}`,
    );
  });

  test('any node lists the team’s steps and checkpoints (GET /v1/rl/steps, /v1/rl/checkpoints) and counts them in its Prometheus metrics', async () => {
    for (const node of nodes) {
      const scraped = await fetch(`${node.url}/metrics`, { headers: { authorization: `Bearer ${OWNER_KEY}` } });
      assert.equal(scraped.status, 200);
      assert.match(await scraped.text(), /^metaclaw_training_steps\{status="done"\} 1$/m, 'the team’s step, on the trainer and on the other node');
      const listed = await sendJson(`${node.url}/v1/rl/steps`, 'GET', { headers: { authorization: `Bearer ${OWNER_KEY}` } });
      assert.equal(listed.status, 200, JSON.stringify(listed.body));
      assert.deepEqual(
        (listed.body.data as Array<{ step: number; status: string }>).map((step) => [step.step, step.status]),
        [[1, 'done']],
      );
      assert.equal(listed.body.served.step, 1);
      const checkpoints = await sendJson(`${node.url}/v1/rl/checkpoints`, 'GET', { headers: { authorization: `Bearer ${OWNER_KEY}` } });
      assert.equal(checkpoints.status, 200);
      assert.equal(checkpoints.body.data.length, 1);
    }
  });

  test('a rollback on one node pins the checkpoint for every node (`metaclaw rl rollback`); a step by hand on a node that does not train is skipped', async () => {
    const rolled = await nodes[0]!.cli(['rl', 'rollback', '1']);
    assert.equal(rolled.code, 0, rolled.stderr);
    await waitFor(
      async () => {
        const reports = await Promise.all(nodes.map(trainingOf));
        return reports.every((report) => report.served?.step === 1 && report.served.pinned);
      },
      10_000,
      200,
    );
    const reports = await Promise.all(nodes.map(trainingOf));
    const other = nodes[reports.findIndex((report) => report.trainer === 'another node')]!;
    const asked = await other.cli(['rl', 'train-step']);
    assert.match(asked.stdout + asked.stderr, /another node of the team trains/);
    assert.equal(double.callsTo('/api/v1/forward_backward').length, 1, 'no step ran');
  });

  test('when the training node stops, the other node takes the trainer’s lock and resumes from the saved state', async () => {
    const reports = await Promise.all(nodes.map(trainingOf));
    const trainerIndex = reports.findIndex((report) => report.trainer === 'this node');
    assert.ok(trainerIndex >= 0);
    survivor = nodes[1 - trainerIndex]!;
    await nodes[trainerIndex]!.stop();
    const taken = await waitFor(
      async () => {
        const report = await trainingOf(survivor);
        return report.trainer === 'this node' && report;
      },
      30_000,
      200,
    );
    assert.equal(taken.served!.step, 1, 'it keeps serving the team’s checkpoint');
    assert.equal(double.callsTo('/api/v1/create_model').length, 2);
    const loads = double.callsTo('/api/v1/load_weights');
    assert.equal(loads.length, 1, 'the new trainer resumed from the last step’s saved state');
  });

  test('a step whose node loses the trainer’s lock midway is abandoned by the next trainer: its samples are claimed by one step at a time and trained once', async () => {
    // Two more judged turns join the two waiting since the last test: a full batch of four.
    await conversation(client(survivor, 'alice'), 'cut-a', ['tag the release', 'and publish it']);
    // The step's forward-backward then waits on the service (retried 503s), long enough to cut the lock.
    double.cueRetrieve(503, 503, 503);
    // A step is written as running, then claims its batch in a transaction of its own: wait for both.
    const running = await waitFor(
      async () => {
        const [row] = await rows<{ step: string; status: string }>("SELECT step, status FROM rl_steps WHERE status = 'running'");
        if (!row) return undefined;
        const claimed = (await samples()).filter((sample) => sample.trained_step !== null && Number(sample.trained_step) === Number(row.step));
        return claimed.length > 0 && { step: Number(row.step), claimed: claimed.length };
      },
      30_000,
      100,
    );
    const step = running.step;
    assert.equal(running.claimed, 4, 'the running step holds its four samples');
    // The lock's connection is cut (a network partition, say): a trainer takes over while the step runs.
    await team.pool.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'metaclaw-rl-trainer'");
    const next = await waitFor(
      async () => {
        const found = await rows<{ step: string; status: string; samples: number }>(
          'SELECT step, status, samples FROM rl_steps WHERE step > $1 ORDER BY step',
          [step],
        );
        return found.some((row) => row.status === 'done') && found;
      },
      60_000,
      250,
    );
    assert.deepEqual(
      next.map((row) => [Number(row.step), row.status, row.samples]),
      [[step + 1, 'done', 4]],
    );
    // The cut step's node finishes or fails it after that: it stays abandoned, and its samples went to the next step only.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const [cut] = await rows<{ status: string }>('SELECT status FROM rl_steps WHERE step = $1', [step]);
    assert.equal(cut!.status, 'abandoned');
    const taken = (await samples()).filter((sample) => sample.trained_step !== null && Number(sample.trained_step) > 1);
    assert.deepEqual(
      taken.map((sample) => Number(sample.trained_step)),
      Array(4).fill(step + 1),
    );
    assert.equal((await trainingOf(survivor)).trainer, 'this node');
  });
});
