/**
 * What the team's training keeps in the team store rather than in the trainer's memory, so it holds
 * on every node and after the trainer's lock passes to another node: the run's step 0 (the weights
 * it started from, which `rl rollback 0` serves) and how many times in a row the training service
 * refused a batch; and how a node whose opening fails (of the team's run as the next trainer, or of
 * its own session with a service it cannot reach) tries again later and later, saying why. Two `metaclaw start` nodes in mode rl on one PostgreSQL and the Tinker double,
 * steps only by hand (`metaclaw rl train-step`); real nodes, CLI and OpenAI SDK clients.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { sendJson } from './support/http.js';
import { postgresSkip } from './support/postgres.js';
import { startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { CHAR_VOCAB_SIZE, expectReopeningLater, RL_MODEL, startDroppingBackend, type TrainingReport } from './support/rl-proxy.js';
import { teamForTests, teamHelpers } from './support/team.js';
import { conversation, rlTeamConfig, startRlTeam } from './support/team-rl.js';
import { TinkerDouble } from './support/tinker-double.js';

const OWNER_KEY = 'owner-key-for-the-team-rl-handover-test';

const team = teamForTests('team_rl_handover');
let double: TinkerDouble;
const { nodes } = team;
const keys: Record<string, string> = {};
const { client, rows, startTeam, teamEnv } = teamHelpers(() => team, OWNER_KEY, keys);

interface Served {
  step: number;
  samplerPath: string;
  pinned: boolean;
}

interface Training extends TrainingReport {
  state: string;
  served: Served | null;
  trainer: 'this node' | 'another node' | 'no node';
}

const ownerHeaders = { authorization: `Bearer ${OWNER_KEY}` };

async function trainingOf(node: ProxyHandle): Promise<Training> {
  const answer = await sendJson(`${node.url}/v1/rl`, 'GET', { headers: ownerHeaders });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return (answer.body as { training: Training }).training;
}

/** Both nodes' reports once every one of them shows `served`, and one of them trains. */
function everyNodeServes(served: (report: Training) => boolean): Promise<Training[]> {
  return waitFor(
    async () => {
      const reports = await Promise.all(nodes.map(trainingOf));
      return reports.every((report) => report.state === 'ready' && served(report)) && reports.some((report) => report.trainer === 'this node') && reports;
    },
    40_000,
    200,
  );
}

async function trainerIndex(): Promise<number> {
  const reports = await Promise.all(nodes.map(trainingOf));
  const index = reports.findIndex((report) => report.trainer === 'this node');
  assert.ok(index >= 0, 'a node trains');
  return index;
}

/** Two conversations of two turns, one on each node, then until their four samples are judged and trainable. */
async function fourSamples(tag: string): Promise<void> {
  await Promise.all([
    conversation(client(nodes[0]!, 'alice'), `${tag}-a`, [`${tag}: deploy the api`, `${tag}: now the worker`]),
    conversation(client(nodes[1]!, 'bob'), `${tag}-b`, [`${tag}: rotate the keys`, `${tag}: check the logs`]),
  ]);
  await waitFor(
    async () => {
      const answer = await sendJson(`${nodes[0]!.url}/v1/rl`, 'GET', { headers: ownerHeaders });
      return (answer.body as { buffer: { trainable: number } }).buffer.trainable === 4;
    },
    30_000,
    200,
  );
}

/** The trainer stops and starts again: the other node takes the trainer's lock meanwhile. Returns the new trainer's index. */
async function handOver(): Promise<number> {
  const index = await trainerIndex();
  const home = nodes[index]!.home;
  await nodes[index]!.stop();
  const other = nodes[1 - index]!;
  await waitFor(async () => (await trainingOf(other)).trainer === 'this node', 30_000, 200);
  nodes[index] = await startProxy({ env: teamEnv(), config: nodeConfig(), home });
  return 1 - index;
}

function nodeConfig(): Record<string, unknown> {
  return rlTeamConfig({ seed: team.seed, upstream: team.upstream, double, rl: { manual_train_trigger: true } });
}

/** `POST /v1/rl/rollback` with the node's admin token. */
async function rollbackOver(node: ProxyHandle, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const admin = readFileSync(join(node.home, 'admin-token'), 'utf8').trim();
  const answer = await sendJson(`${node.url}/v1/rl/rollback`, 'POST', { headers: { ...ownerHeaders, 'x-metaclaw-admin': admin }, body });
  return { status: answer.status, body: answer.body as Record<string, unknown> };
}

describe('team mode: what training keeps across nodes and trainers', { skip: postgresSkip() }, () => {
  before(async () => {
    double = await TinkerDouble.start({ vocabSize: CHAR_VOCAB_SIZE, supportedModels: [RL_MODEL] });
    team.closeAfter(() => double.close());
    nodes.push(...(await startRlTeam({ seed: team.seed, startTeam, upstream: team.upstream, double, rl: { manual_train_trigger: true } })));
  });

  test('rl rollback 0 on a node that does not train serves the team run’s step 0 on every node, pinned, after a step and a trainer hand-over; every node lists it as start', async () => {
    const [first] = await everyNodeServes((report) => report.served?.step === 0);
    const start = first!.served!.samplerPath;
    assert.match(start, /sampler_weights\/step-0000$/);
    await fourSamples('first');
    const trained = await nodes[await trainerIndex()]!.cli(['rl', 'train-step']);
    assert.equal(trained.code, 0, trained.stderr);
    assert.match(trained.stdout, /^step 1: trained on 4 sample\(s\)/);
    await everyNodeServes((report) => report.served?.step === 1);

    // The trainer's lock passes to the other node, which resumes from step 1's state: step 0 stays the run's.
    const trainer = await handOver();
    await everyNodeServes((report) => report.served?.step === 1);
    for (const node of nodes) {
      const checkpoints = await sendJson(`${node.url}/v1/rl/checkpoints`, 'GET', { headers: ownerHeaders });
      assert.equal(checkpoints.status, 200, JSON.stringify(checkpoints.body));
      assert.equal((checkpoints.body as { start: { step: number; sampler_path: string } | null }).start?.sampler_path, start);
    }
    const other = nodes[1 - trainer]!;
    const listed = await other.cli(['rl', 'checkpoints']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.ok(listed.stdout.includes(`the weights the training run started from  ${start}`), listed.stdout);

    const rollback = await other.cli(['rl', 'rollback', '0']);
    assert.equal(rollback.code, 0, rollback.stderr);
    assert.match(rollback.stdout, /Serving step 0 \(the weights this training run started from\) now/);
    await everyNodeServes((report) => report.served?.step === 0 && report.served.samplerPath === start && report.served.pinned);

    // Training goes on from the newest weights; the pinned step 0 keeps serving until --latest.
    await fourSamples('second');
    const next = await nodes[trainer]!.cli(['rl', 'train-step']);
    assert.equal(next.code, 0, next.stderr);
    assert.match(next.stdout, /^step 2: trained on 4 sample\(s\)/);
    assert.deepEqual((await trainingOf(other)).served, { step: 0, samplerPath: start, pinned: true });
    const latest = await rollbackOver(nodes[trainer]!, { latest: true });
    assert.equal(latest.status, 200, JSON.stringify(latest.body));
    await everyNodeServes((report) => report.served?.step === 2 && !report.served.pinned);
  });

  test('a team run recorded before step 0 was kept (a step saved its state since): rl rollback 0 answers 404 with the reason on every node', async () => {
    // The run's record as a build before this one wrote it: no `start`.
    await rows("UPDATE state SET value = (value::jsonb - 'start')::text WHERE key = 'rl.training_run'");
    for (const node of nodes) {
      const refused = await rollbackOver(node, { step: 0 });
      assert.equal(refused.status, 404, JSON.stringify(refused.body));
      const error = (refused.body as { error: { code: string; message: string } }).error;
      assert.equal(error.code, 'checkpoint_not_found');
      assert.match(error.message, /^Step 0 has no saved weights to serve: .*a run begun before MetaClaw kept them/);
      const checkpoints = await sendJson(`${node.url}/v1/rl/checkpoints`, 'GET', { headers: ownerHeaders });
      assert.equal((checkpoints.body as { start: unknown }).start, null);
    }
    const said = await nodes[0]!.cli(['rl', 'rollback', '0']);
    assert.equal(said.code, 1);
    assert.match(said.stderr, /Step 0 has no saved weights to serve: .*a run begun before MetaClaw kept them/);
    assert.equal((await trainingOf(nodes[0]!)).served?.step, 2, 'nothing changed what serves');
  });

  test('a batch the service refused twice before the trainer’s lock passed to another node is set aside at its first refusal on the new trainer', async () => {
    await fourSamples('refused');
    double.cueSubmit('/api/v1/forward_backward', 422, 422, 422);
    const trainer = nodes[await trainerIndex()]!;
    for (let refusal = 1; refusal <= 2; refusal++) {
      const refused = await trainer.cli(['rl', 'train-step']);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /^step \d+ failed: .*422/);
      assert.doesNotMatch(refused.stderr, /set aside/);
    }

    const next = nodes[await handOver()]!;
    const third = await next.cli(['rl', 'train-step']);
    assert.equal(third.code, 1);
    assert.match(third.stderr, /^step \d+ failed: .*422.* its 4 sample\(s\) are set aside, and the next batch trains\./);
    const step = /^step (\d+)/.exec(third.stderr)![1];
    const status = await nodes[0]!.cli(['rl', 'status']);
    assert.match(
      status.stdout,
      new RegExp(`^set aside {2}4 sample\\(s\\) never train: the training backend refused their batch 3 times \\(last at step ${step}\\)`, 'm'),
    );
    const aside = await rows<{ count: string }>('SELECT COUNT(*) AS count FROM rl_samples WHERE set_aside_at IS NOT NULL AND trained_step IS NULL');
    assert.equal(Number(aside[0]!.count), 4);
  });

  test('when the next trainer cannot open the team’s run (the service refuses create_model), it leaves the lock and asks for it again after 5 s, then 10 s, not every second, and logs it once', async () => {
    const index = await trainerIndex();
    const survivor = nodes[1 - index]!;
    const home = nodes[index]!.home;
    const tries = () => double.callsTo('/api/v1/create_model').length;
    const before = tries();
    double.cueSubmit('/api/v1/create_model', 400, 400);
    await nodes[index]!.stop();
    await waitFor(() => tries() === before + 1, 15_000, 50);
    const firstTry = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    assert.equal(tries(), before + 1, 'no second try in the 4 s after the first');
    await waitFor(async () => (await trainingOf(survivor)).trainer === 'this node', 40_000, 200);
    const took = Date.now() - firstTry;
    assert.equal(tries(), before + 3);
    assert.ok(took >= 14_000, `the third try waits 5 s, then 10 s (it came after ${took} ms)`);
    const said = readFileSync(join(survivor.home, 'logs', 'metaclaw.log'), 'utf8')
      .split('\n')
      .filter((line) => line.includes('could not open the team’s training run'));
    assert.equal(said.length, 1, `the same failure is logged once:\n${said.join('\n')}`);
    nodes[index] = await startProxy({ env: teamEnv(), config: nodeConfig(), home });
  });

  test('a node whose training backend drops every connection says why in /status and rl status within seconds, tries again after 5 s, then 10 s, and logs it once', async () => {
    const backend = await startDroppingBackend();
    const config = rlTeamConfig({ seed: team.seed, upstream: team.upstream, double, rl: { manual_train_trigger: true, base_url: backend.url } });
    const node = await startProxy({ env: teamEnv(), config });
    try {
      await expectReopeningLater(
        backend,
        () => trainingOf(node),
        (args) => node.cli(args),
        join(node.home, 'logs', 'metaclaw.log'),
      );
      assert.equal((await trainingOf(node)).trainer, 'another node', 'it cannot even sample, and the team’s trainer holds the lock');
    } finally {
      await node.dispose();
      await backend.close();
    }
  });
});
