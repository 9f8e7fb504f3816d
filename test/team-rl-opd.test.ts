/**
 * On-policy distillation on the team store: two `metaclaw start` nodes in mode rl with opd.* on one
 * PostgreSQL, one Tinker-compatible service (the strict learning double) and one teacher. The node
 * that trains queues a teacher job per sample; whichever node leases it asks the teacher once and
 * writes the logprobs with the job, against the team's budget; the team's step then carries the
 * KL term toward them, as the personal engine's does. Real nodes and OpenAI SDK clients; only the
 * LLM (judge), the teacher and the training service are scripted.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { sendJson } from './support/http.js';
import { postgresSkip } from './support/postgres.js';
import { waitFor } from './support/proxy.js';
import { CHAR_VOCAB_SIZE, RL_MODEL } from './support/rl-proxy.js';
import { teamForTests, teamHelpers } from './support/team.js';
import { conversation, startRlTeam } from './support/team-rl.js';
import { TinkerDouble } from './support/tinker-double.js';
import { json, ScriptedUpstream } from './support/upstream.js';

const OWNER_KEY = 'owner-key-for-the-team-rl-opd-test';
const TEACHER_LOGPROB = -0.1;
const KL_COEF = 0.5;

const team = teamForTests('team_rl_opd');
let teacher: ScriptedUpstream;
let double: TinkerDouble;
const { nodes } = team;
const keys: Record<string, string> = {};
/** every call the teacher answered: the token ids it read */
const asked: number[][] = [];

const { client, rows, startTeam } = teamHelpers(() => team, OWNER_KEY, keys);

describe('team mode with OPD: each sample is asked of the teacher once, and the team’s step uses its logprobs', { skip: postgresSkip() }, () => {
  before(async () => {
    double = await TinkerDouble.start({ vocabSize: CHAR_VOCAB_SIZE, supportedModels: [RL_MODEL] });
    team.closeAfter(() => double.close());
    teacher = await ScriptedUpstream.start();
    team.closeAfter(() => teacher.close());
    teacher.defaultHandler = (request, response) => {
      assert.equal(request.path, '/v1/completions');
      assert.equal(request.headers['authorization'], 'Bearer teacher-key');
      const ids = request.body.prompt as number[];
      asked.push(ids);
      json(response, 200, {
        object: 'text_completion',
        choices: [{ index: 0, text: '', finish_reason: 'length', logprobs: { token_logprobs: [null, ...ids.slice(1).map(() => TEACHER_LOGPROB)] } }],
        usage: { prompt_tokens: ids.length, completion_tokens: 0, total_tokens: ids.length },
      });
    };
    const opd = { enabled: true, teacher_url: `${teacher.url}/v1`, teacher_model: 'teacher-8b', teacher_api_key: 'teacher-key', kl_penalty_coef: KL_COEF };
    nodes.push(...(await startRlTeam({ seed: team.seed, startTeam, upstream: team.upstream, double, config: { opd } })));
  });

  test('every sample gets its teacher logprobs exactly once, spent from the team’s budget, and the step’s advantages carry the KL term toward them', async () => {
    for (const node of nodes) {
      const answer = await sendJson(`${node.url}/status`, 'GET', { headers: { authorization: `Bearer ${OWNER_KEY}` } });
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      assert.deepEqual(answer.body.rl.training.opd, { teacher: new URL(teacher.url).host, model: 'teacher-8b', kl_penalty_coef: KL_COEF });
    }
    // Both nodes serve the team's first policy, so every turn is a sample with token ids.
    await waitFor(
      async () => {
        const reports = await Promise.all(nodes.map((node) => sendJson(`${node.url}/status`, 'GET', { headers: { authorization: `Bearer ${OWNER_KEY}` } })));
        return reports.every((report) => report.body.rl.training.state === 'ready' && report.body.rl.training.served?.step === 0);
      },
      30_000,
      200,
    );
    await Promise.all([
      conversation(client(nodes[0]!, 'alice'), 'opd-a', ['deploy the api', 'now the worker']),
      conversation(client(nodes[1]!, 'bob'), 'opd-b', ['rotate the keys', 'check the logs']),
    ]);

    const done = await waitFor(
      async () => {
        const found = await rows<{ status: string }>("SELECT status FROM rl_steps WHERE step = 1 AND status = 'done'");
        return found.length > 0;
      },
      60_000,
      250,
    );
    assert.ok(done);
    // a moment for a teacher job run twice, should one be
    await new Promise((resolve) => setTimeout(resolve, 2_000));

    const samples = await rows<{ turn_id: string; teacher_state: string | null; teacher_bytes: number; response_bytes: number; trained_step: string | null }>(
      `SELECT turn_id, teacher_state, octet_length(teacher_logprobs) AS teacher_bytes, octet_length(response_logprobs) AS response_bytes, trained_step
         FROM rl_samples ORDER BY created_at, turn_id`,
    );
    assert.equal(samples.length, 4);
    assert.ok(
      samples.every((sample) => sample.teacher_state === 'done' && sample.teacher_bytes === sample.response_bytes && Number(sample.trained_step) === 1),
      `every trained sample carries one teacher logprob per response token: ${JSON.stringify(samples)}`,
    );
    assert.equal(asked.length, 4, 'the teacher was asked once per sample');
    assert.equal(new Set(asked.map((ids) => ids.join(','))).size, 4, 'about four different samples');
    const jobs = await rows<{ status: string }>("SELECT status FROM jobs WHERE kind = 'rl.teacher'");
    assert.deepEqual(
      jobs.map((job) => job.status),
      Array(4).fill('done'),
    );
    const spend = await rows<{ calls: string; tokens: string }>("SELECT calls, tokens FROM learning_spend WHERE kind = 'rl.teacher'");
    assert.equal(
      spend.reduce((sum, row) => sum + Number(row.calls), 0),
      4,
      "the teacher's calls are spent from the team's learning budget",
    );
    assert.equal(
      spend.reduce((sum, row) => sum + Number(row.tokens), 0),
      asked.reduce((sum, ids) => sum + ids.length, 0),
    );

    const calls = double.callsTo('/api/v1/forward_backward');
    assert.equal(calls.length, 1, 'one step, on one node');
    const data = (
      calls[0]!.body as {
        forward_backward_input: { data: Array<{ model_input: { chunks: Array<{ tokens: number[] }> }; loss_fn_inputs: Record<string, { data: number[] }> }> };
      }
    ).forward_backward_input.data;
    assert.equal(data.length, 4);
    const sentIds = asked.map((ids) => ids.slice(0, -1).join(','));
    for (const datum of data) {
      assert.ok(sentIds.includes(datum.model_input.chunks.flatMap((chunk) => chunk.tokens).join(',')), 'the teacher read exactly the ids that were trained on');
      const student = datum.loss_fn_inputs['logprobs']!.data;
      const advantages = datum.loss_fn_inputs['advantages']!.data;
      const response = student.flatMap((logprob, position) => (logprob !== 0 ? [position] : []));
      assert.ok(response.length > 1);
      // Undo the KL term (coef 0.5 toward the teacher's -0.1): what is left is the sample's one GRPO advantage.
      const base = response.map((position) => advantages[position]! + KL_COEF * (student[position]! - TEACHER_LOGPROB));
      const raw = response.map((position) => advantages[position]!);
      const constant = (values: number[]) => values.every((value) => Math.abs(value - values[0]!) < 1e-4);
      assert.ok(!constant(raw), `the advantages vary by token with the KL term: ${JSON.stringify(raw)}`);
      assert.ok(constant(base), `the advantages are the GRPO advantage plus the KL term: ${JSON.stringify(base)}`);
    }
  });
});
