/**
 * The team's training run over time, on two `metaclaw start` nodes in mode rl on one PostgreSQL and
 * the Tinker double (steps only by hand, `metaclaw rl train-step`, so each refusal is counted):
 * a batch the service keeps refusing is set aside as on one proxy, and a change of `rl.model`
 * starts a new run for the whole team — once no node configured for the old one is up — instead of
 * loading the old model's weights into the new one; its fresh LoRA is its step 0. Real nodes, CLI and OpenAI SDK clients; only the
 * LLM (judge) and the training service are scripted.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { sendJson } from './support/http.js';
import { postgresSkip } from './support/postgres.js';
import { startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { CHAR_VOCAB_SIZE, RL_MODEL } from './support/rl-proxy.js';
import { teamForTests, teamHelpers } from './support/team.js';
import { conversation, rlTeamConfig, startRlTeam } from './support/team-rl.js';
import { TinkerDouble } from './support/tinker-double.js';

const OWNER_KEY = 'owner-key-for-the-team-rl-runs-test';
const OTHER_MODEL = 'tiny/chars-b';

const team = teamForTests('team_rl_runs');
let double: TinkerDouble;
const { nodes } = team;
const keys: Record<string, string> = {};
const { client, rows, startTeam, teamEnv } = teamHelpers(() => team, OWNER_KEY, keys);

interface Training {
  state: string;
  served: { step: number; samplerPath: string } | null;
  trainer: 'this node' | 'another node' | 'no node';
  run: { backend: string; base_model: string; lora_rank: number; after_step: number } | null;
  waiting: string | null;
}

interface Report {
  buffer: { trainable: number; by_state: { set_aside: number }; set_aside_reason: string | null };
  training: Training;
}

/** The node's RL report, its buffer read from the team store now (GET /v1/rl). */
async function reportOf(node: ProxyHandle): Promise<Report> {
  const answer = await sendJson(`${node.url}/v1/rl`, 'GET', { headers: { authorization: `Bearer ${OWNER_KEY}` } });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body as Report;
}

/** Both nodes' reports once both serve the policy of `step`. */
function servingStep(step: number): Promise<Training[]> {
  return waitFor(
    async () => {
      const reports = await Promise.all(nodes.map(async (node) => (await reportOf(node)).training));
      return reports.every((report) => report.state === 'ready' && report.served?.step === step) && reports;
    },
    40_000,
    200,
  );
}

async function trainerNode(): Promise<ProxyHandle> {
  const reports = await Promise.all(nodes.map(async (node) => (await reportOf(node)).training));
  const index = reports.findIndex((report) => report.trainer === 'this node');
  assert.ok(index >= 0, 'a node trains');
  return nodes[index]!;
}

/** Two conversations of two turns, one on each node, then until their four samples are judged and trainable. */
async function fourSamples(tag: string, trainable: number): Promise<void> {
  await Promise.all([
    conversation(client(nodes[0]!, 'alice'), `${tag}-a`, [`${tag}: deploy the api`, `${tag}: now the worker`]),
    conversation(client(nodes[1]!, 'bob'), `${tag}-b`, [`${tag}: rotate the keys`, `${tag}: check the logs`]),
  ]);
  await waitFor(async () => (await reportOf(nodes[0]!)).buffer.trainable === trainable, 30_000, 200);
}

function nodeConfig(rl: Record<string, unknown> = {}): Record<string, unknown> {
  return rlTeamConfig({ seed: team.seed, upstream: team.upstream, double, rl: { manual_train_trigger: true, ...rl } });
}

describe('team mode: the team’s training run', { skip: postgresSkip() }, () => {
  before(async () => {
    double = await TinkerDouble.start({ vocabSize: CHAR_VOCAB_SIZE, supportedModels: [RL_MODEL, OTHER_MODEL] });
    team.closeAfter(() => double.close());
    nodes.push(...(await startRlTeam({ seed: team.seed, startTeam, upstream: team.upstream, double, rl: { manual_train_trigger: true } })));
  });

  test('a batch the service refuses with a client error three times is set aside for the whole team, with the reason in every node’s /status and rl status, and the next batch trains', async () => {
    await servingStep(0);
    await fourSamples('refused', 4);
    const trainer = await trainerNode();
    double.cueSubmit('/api/v1/forward_backward', 422, 422, 422);
    for (const step of [1, 2]) {
      const refused = await trainer.cli(['rl', 'train-step']);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, new RegExp(`^step ${step} failed: .*422`));
      assert.doesNotMatch(refused.stderr, /set aside/);
      assert.equal((await reportOf(trainer)).buffer.trainable, 4, 'a refused batch is given back to the buffer');
    }
    const third = await trainer.cli(['rl', 'train-step']);
    assert.equal(third.code, 1);
    assert.match(third.stderr, /^step 3 failed: .*422.* its 4 sample\(s\) are set aside, and the next batch trains\./);
    for (const node of nodes) {
      const { buffer } = await reportOf(node);
      assert.equal(buffer.by_state.set_aside, 4, 'the team’s buffer, on every node');
      assert.equal(buffer.trainable, 0);
      assert.match(buffer.set_aside_reason ?? '', /^the training backend refused their batch 3 times \(last at step 3\): .*422/);
      const status = await waitFor(
        async () => {
          const answer = await sendJson(`${node.url}/status`, 'GET', { headers: { authorization: `Bearer ${OWNER_KEY}` } });
          const shown = (answer.body as { rl: { buffer: Report['buffer'] } }).rl.buffer;
          return shown.by_state.set_aside === 4 && shown;
        },
        15_000,
        200,
      );
      assert.equal(status.set_aside_reason, buffer.set_aside_reason);
      const text = await node.cli(['rl', 'status']);
      assert.match(text.stdout, /^set aside {2}4 sample\(s\) never train: the training backend refused their batch 3 times/m);
    }
    const aside = await rows<{ count: string }>('SELECT COUNT(*) AS count FROM rl_samples WHERE set_aside_at IS NOT NULL AND trained_step IS NULL');
    assert.equal(Number(aside[0]!.count), 4);

    // The next batch trains; the set-aside samples are not in it.
    await fourSamples('after', 4);
    const trained = await trainer.cli(['rl', 'train-step']);
    assert.equal(trained.code, 0, trained.stderr);
    assert.match(trained.stdout, /^step 4: trained on 4 sample\(s\)/);
    const byStep = await rows<{ set_aside: boolean; trained_step: string | null }>(
      'SELECT set_aside_at IS NOT NULL AS set_aside, trained_step FROM rl_samples WHERE prompt_tokens IS NOT NULL ORDER BY created_at',
    );
    assert.deepEqual(
      byStep.map((row) => [row.set_aside, row.trained_step === null ? null : Number(row.trained_step)]),
      [...Array(4).fill([true, null]), ...Array(4).fill([false, 4])],
    );
    await servingStep(4);
  });

  test('after rl.model changes, a moved node waits (and says why) while a node of the old run is up; then the team starts a new run on the new model and never loads, serves or rolls back to the old one, nor trains its samples', async () => {
    const trainer = await trainerNode();
    const movedIndex = nodes.indexOf(trainer) === 0 ? 1 : 0;
    const oldIndex = 1 - movedIndex;
    const movedConfig = nodeConfig({ model: OTHER_MODEL });
    // Four samples the team's run served and has not trained yet: the new run must never train them.
    await fourSamples('old-run', 4);
    const setAsideBefore = (await reportOf(nodes[0]!)).buffer.by_state.set_aside;

    // One node moves to the other model while the trainer still runs on the team's.
    await nodes[movedIndex]!.stop();
    nodes[movedIndex] = await startProxy({ env: teamEnv(), config: movedConfig, home: nodes[movedIndex]!.home });
    const moved = nodes[movedIndex];
    // Settled: serving a policy, or saying why it does not.
    const waiting = await waitFor(
      async () => {
        const training = (await reportOf(moved)).training;
        return (training.state === 'ready' || typeof training.waiting === 'string') && training;
      },
      30_000,
      200,
    );
    assert.equal(waiting.served, null, 'it does not serve the team’s policy: that LoRA does not fit its model');
    assert.match(
      waiting.waiting!,
      new RegExp(`the team trains the tinker LoRA of rank \\d+ on ${RL_MODEL}, and this node is configured for .* on ${OTHER_MODEL}`),
    );
    assert.equal(waiting.trainer, 'another node');
    assert.equal(waiting.run?.base_model, RL_MODEL);
    const said = await moved.cli(['rl', 'status']);
    assert.match(said.stdout, /WAITING: the team trains/);
    const answer = await client(moved, 'alice').chat.completions.create({ model: OTHER_MODEL, messages: [{ role: 'user', content: 'hello' }], max_tokens: 6 });
    assert.equal(answer.choices[0]?.message.content, 'From the normal upstream.');
    assert.equal((await reportOf(nodes[oldIndex]!)).training.served?.step, 4, 'the node of the team’s run keeps serving it');
    assert.deepEqual(
      double.callsTo('/api/v1/create_model').filter((call) => JSON.stringify(call.body).includes(OTHER_MODEL)),
      [],
      'no run on the other model yet',
    );

    // The last node of the old run moves too: the team begins a new run on the other model.
    const loadsBefore = double.callsTo('/api/v1/load_weights').length;
    await nodes[oldIndex]!.stop();
    nodes[oldIndex] = await startProxy({ env: teamEnv(), config: movedConfig, home: nodes[oldIndex]!.home });
    const reports = await servingStep(0);
    for (const report of reports) {
      assert.equal(report.waiting, null);
      assert.deepEqual(report.run, { ...report.run, base_model: OTHER_MODEL, after_step: 4 });
    }
    assert.doesNotMatch(reports[0]!.served!.samplerPath, /step-0004/);
    assert.equal(double.callsTo('/api/v1/load_weights').length, loadsBefore, `the ${RL_MODEL} training state is not loaded into ${OTHER_MODEL}`);
    assert.equal(double.callsTo('/api/v1/create_model').filter((call) => JSON.stringify(call.body).includes(OTHER_MODEL)).length, 1);

    const afterBegin = (await reportOf(nodes[0]!)).buffer;
    assert.equal(afterBegin.by_state.set_aside, setAsideBefore + 4, 'the old run’s untrained samples are set aside');
    assert.equal(afterBegin.trainable, 0);
    assert.match(afterBegin.set_aside_reason ?? '', new RegExp(`^served by an earlier training run \\(the tinker LoRA of rank \\d+ on ${RL_MODEL}\\)`));

    const newTrainer = await trainerNode();
    const logged = readFileSync(join(newTrainer.home, 'logs', 'metaclaw.log'), 'utf8');
    assert.match(logged, new RegExp(`a new training run starts .*${RL_MODEL} .*${OTHER_MODEL}`));
    for (const node of nodes) {
      const checkpoints = await sendJson(`${node.url}/v1/rl/checkpoints`, 'GET', { headers: { authorization: `Bearer ${OWNER_KEY}` } });
      assert.equal(checkpoints.status, 200);
      assert.deepEqual(checkpoints.body.data, [], 'the old run’s checkpoints are not offered');
      assert.equal(checkpoints.body.start?.sampler_path, reports[0]!.served!.samplerPath, 'step 0 is the new run’s own fresh LoRA');
    }
    const rollback = await nodes[0]!.cli(['rl', 'rollback', '4']);
    assert.equal(rollback.code, 1);
    assert.match(rollback.stderr, /Step 4 has no saved weights to serve/);
    const status = await nodes[0]!.cli(['rl', 'status']);
    assert.match(status.stdout, /step {4}4 {2}done/, 'the old step stays in the history');

    // The new run trains on: its first step follows the history's last.
    await fourSamples('new-run', 4);
    const trained = await newTrainer.cli(['rl', 'train-step']);
    assert.equal(trained.code, 0, trained.stderr);
    assert.match(trained.stdout, /^step 5: trained on 4 sample\(s\)/);
    await servingStep(5);
    assert.equal(double.callsTo('/api/v1/load_weights').length, loadsBefore);
  });
});
