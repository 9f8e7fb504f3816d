/**
 * A node of a team that takes the trainer's lock but cannot open the team's training run (the
 * Tinker-compatible service refuses create_model) gives the lock back and asks for it again after
 * 5 s (team-rl-handover.test.ts proves the back-off). Here: it says so where a user looks — `GET
 * /status` (`rl.training.trainer_opening_failed`: the reason, since when, how many tries, the next
 * one; never the API key), `metaclaw status`, `metaclaw rl status` and `metaclaw doctor` — and the
 * report clears once the service answers and the next try opens the run. One `metaclaw start` node
 * in mode rl on PostgreSQL and the Tinker double; real node and CLI.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { sendJson } from './support/http.js';
import { postgresSkip } from './support/postgres.js';
import { waitFor } from './support/proxy.js';
import { CHAR_VOCAB_SIZE, RL_MODEL } from './support/rl-proxy.js';
import { teamForTests, teamHelpers } from './support/team.js';
import { rlTeamConfig } from './support/team-rl.js';
import { TinkerDouble } from './support/tinker-double.js';

const OWNER_KEY = 'owner-key-for-the-team-rl-trainer-opening-test';

const team = teamForTests('team_rl_trainer_opening');
let double: TinkerDouble;
const { nodes } = team;
const keys: Record<string, string> = {};
const { startTeam } = teamHelpers(() => team, OWNER_KEY, keys);

interface OpeningFailure {
  error: string;
  since: string;
  attempts: number;
  retry_at: string;
}

interface Training {
  trainer: 'this node' | 'another node' | 'no node';
  trainer_opening_failed?: OpeningFailure | null;
}

/** The node's `rl.training` in `GET /status`, once the status timer has read the team's buffer. */
async function statusTraining(): Promise<Training | undefined> {
  const answer = await sendJson(`${nodes[0]!.url}/status`, 'GET', { headers: { authorization: `Bearer ${OWNER_KEY}` } });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return (answer.body as { rl?: { training?: Training | null } | null }).rl?.training ?? undefined;
}

describe('team mode: a node that cannot open the team’s run as its trainer', { skip: postgresSkip() }, () => {
  before(async () => {
    double = await TinkerDouble.start({ vocabSize: CHAR_VOCAB_SIZE, supportedModels: [RL_MODEL] });
    team.closeAfter(() => double.close());
    // The node's own sampling session opens; its openings of the team's run (create_model) are refused until the test says.
    double.cueSubmit('/api/v1/create_model', ...Array<number>(20).fill(400));
    const config = rlTeamConfig({ seed: team.seed, upstream: team.upstream, double, rl: { manual_train_trigger: true } });
    nodes.push(...(await startTeam(['alice'], 1, config)));
  });

  test('says why in /status, metaclaw status, rl status and doctor (the reason, since when, the tries, the next one; not the key), and the report clears once the next try opens the run', async () => {
    const failed = await waitFor(
      async () => {
        const training = await statusTraining();
        return training?.trainer_opening_failed ? { training, failure: training.trainer_opening_failed } : false;
      },
      30_000,
      100,
    );
    const { failure } = failed;
    assert.match(failure.error, /400/);
    assert.equal(failure.attempts, 1);
    const wait = Date.parse(failure.retry_at) - Date.parse(failure.since);
    assert.ok(wait >= 4_900 && wait <= 5_100, `the next try is 5 s after the first failure (${wait} ms)`);
    assert.equal(failed.training.trainer, 'no node', 'a team of one whose opening failed: the lock is free, no node trains');
    assert.ok(!JSON.stringify(failed.training).includes(double.apiKey), 'the report never carries the API key');

    const said =
      /^\s*trainer\s+FAILED: this node could not open the team’s run as its trainer: .*400.*; asks for the trainer’s lock again (at |once it is free).*\(\d+ failed tr(y|ies) since /m;
    const status = await nodes[0]!.cli(['status']);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, said);
    assert.match(status.stdout, /^\s*training\s+tinker, tiny\/chars: no policy to serve yet \(the team’s run is not open\)$/m);
    const rlStatus = await nodes[0]!.cli(['rl', 'status']);
    assert.equal(rlStatus.code, 0, rlStatus.stderr);
    assert.match(rlStatus.stdout, said);
    const doctor = await nodes[0]!.cli(['doctor']);
    assert.match(doctor.stdout, /^! trainer: tinker at .*: this node could not open the team’s run as its trainer: .*400/m);

    // The service answers again: the next try (5 s after the first failure, or 10 s after the second) opens the run, and the report clears.
    double.uncueSubmit('/api/v1/create_model');
    const opened = await waitFor(
      async () => {
        const training = await statusTraining();
        return training?.trainer === 'this node' && training;
      },
      // The tries the CLI calls took set the wait: 5, 10 or 20 s on a loaded machine.
      60_000,
      200,
    );
    assert.equal(opened.trainer_opening_failed, null);
    const after = await nodes[0]!.cli(['status']);
    assert.doesNotMatch(after.stdout, /FAILED/);
    assert.match(after.stdout, /^\s*training\s+tinker, .*; this node trains/m);
  });
});
