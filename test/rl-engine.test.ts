import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { json, ScriptedUpstream } from './support/upstream.js';
import { killMidBurst } from './support/kill-burst.js';
import { recordedTurn, startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import type { TinkerDouble } from './support/tinker-double.js';
import { CHAR_VOCAB_SIZE, opened, readySamples, sendTurns, startRlProxy, stepDone, stepsOf, training, type RlProxy } from './support/rl-proxy.js';

/**
 * RL in a started proxy (`metaclaw start` in mode rl) against the strict Tinker learning double:
 * main turns are answered by the LoRA policy in both client formats, the judge scores them through
 * the scripted upstream, a full batch trains a GRPO step by itself, the next turn is served by the
 * new weights, and `metaclaw rl …` shows, steps, rolls back and follows training again; a restart
 * serves the same policy and resumes from the saved training state.
 */

describe('RL in a running proxy (mode rl, Tinker double)', () => {
  let rl: RlProxy;
  let double: TinkerDouble;
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  const session = (id: string) => ({ headers: { 'x-session-id': id } });

  before(async () => {
    // Only the judge reaches the normal upstream while the policy serves: its votes alternate, so every batch has a reward spread.
    rl = await startRlProxy({ rl: { batch_size: 2, learning_rate: 0.05, prm_m: 1 } });
    ({ double, upstream, proxy } = rl);
  });

  after(async () => {
    await rl?.dispose();
  });

  test('at start the backend opens in the background and the fresh LoRA (step 0) serves', async () => {
    const report = await opened(proxy);
    assert.equal(report.state, 'ready', report.error ?? '');
    assert.equal(report.served?.step, 0);
    assert.equal(report.trigger, 'always', 'mode rl without the scheduler trains whenever a batch is full');
    assert.ok(double.calls.some((call) => call.route === '/api/v1/create_model'));
  });

  test('main turns in both formats, streamed or not, are answered by the policy and recorded as trainable samples', async () => {
    const openai = new OpenAI({ apiKey: 'local', baseURL: `${proxy.url}/v1`, maxRetries: 0 });
    const anthropic = new Anthropic({ apiKey: 'local', baseURL: proxy.url, maxRetries: 0 });
    const first = await openai.chat.completions
      .create({ model: 'tiny/chars', messages: [{ role: 'user', content: 'hello policy' }], max_tokens: 24 }, session('rl-a'))
      .withResponse();
    assert.equal(first.data.choices[0]?.message.role, 'assistant');
    const turn = await recordedTurn(proxy.url, first.response.headers.get('x-metaclaw-request-id')!);
    assert.equal(turn.forwarded.upstream, 'rl-policy');
    assert.match(turn.outcome.model, /sampler_weights\/step-0000$/);

    const stream = await openai.chat.completions.create(
      { model: 'tiny/chars', messages: [{ role: 'user', content: 'and streamed' }], max_tokens: 24, stream: true },
      session('rl-a'),
    );
    let chunks = 0;
    for await (const chunk of stream) if (chunk.choices[0]?.delta) chunks += 1;
    assert.ok(chunks > 0);

    const message = await anthropic.messages
      .stream({ model: 'tiny/chars', max_tokens: 24, messages: [{ role: 'user', content: 'hi from claude' }] }, session('rl-a'))
      .finalMessage();
    assert.equal(message.role, 'assistant');
    assert.equal(
      upstream.requests.filter((request) => JSON.stringify(request.body).includes('hello policy') && !JSON.stringify(request.body).includes('Score')).length,
      0,
      'no main turn reached the normal upstream',
    );
  });

  test('the judge scores the batch and a training step runs by itself; the next turn is served by its weights', async () => {
    const steps = await stepDone(proxy, 60_000, 500);
    const done = steps.find((step) => step.status === 'done')!;
    assert.equal(done.step, 1);
    assert.equal(done.samples, 2);
    assert.equal(typeof done.loss, 'number');
    assert.ok(rl.upstreamCalls >= 2, 'the judge was asked through the normal upstream');
    assert.equal((await training(proxy)).served?.step, 1);
    assert.ok(double.calls.some((call) => call.route === '/api/v1/forward_backward' && call.status === 200));
    assert.ok(double.calls.some((call) => call.route === '/api/v1/optim_step' && call.status === 200));

    const openai = new OpenAI({ apiKey: 'local', baseURL: `${proxy.url}/v1`, maxRetries: 0 });
    const next = await openai.chat.completions
      .create({ model: 'tiny/chars', messages: [{ role: 'user', content: 'after the step' }], max_tokens: 24 }, session('rl-a'))
      .withResponse();
    const turn = await recordedTurn(proxy.url, next.response.headers.get('x-metaclaw-request-id')!);
    assert.match(turn.outcome.model, /sampler_weights\/step-0001$/, 'hot swap: the new weights serve the next turn');
  });

  test('training control needs the admin token; a step by hand trains on what is there, and says why when it cannot', async () => {
    const refused = await fetch(`${proxy.url}/v1/rl/train_step`, { method: 'POST' });
    assert.equal(refused.status, 403);
    assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'admin_token_required');
    for (const limit of ['abc', '0', '1001']) {
      const bad = await fetch(`${proxy.url}/v1/rl/steps?limit=${limit}`);
      assert.equal(bad.status, 400, `limit=${limit} is refused, not read as 20`);
      assert.match(((await bad.json()) as { error: { message: string } }).error.message, /limit: must be a whole number from 1 to 1000$/);
    }
    assert.equal(((await (await fetch(`${proxy.url}/v1/rl/steps?limit=1`)).json()) as { data: unknown[] }).data.length, 1);
    // The turn before "after the step" was judged when it arrived: one sample waits, too few for a batch.
    await readySamples(proxy, 1);
    const single = await proxy.cli(['rl', 'train-step']);
    assert.equal(single.code, 0, single.stderr);
    assert.match(single.stdout, /step 2: nothing to learn from its 1 sample\(s\) \(the rewards do not differ/);
    const none = await proxy.cli(['rl', 'train-step']);
    assert.notEqual(none.code, 0);
    assert.match(none.stderr, /No step: 0 of 2 judged samples are ready/);
    const missing = await proxy.cli(['rl', 'rollback', '99']);
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /Step 99 has no saved weights/);
    const both = await proxy.cli(['rl', 'rollback', '1', '--latest']);
    assert.notEqual(both.code, 0);
    assert.equal((await training(proxy)).served?.step, 1, 'refused commands changed nothing');
  });

  test('rollback pins an earlier step while training goes on; --latest follows training again', async () => {
    const pinned = await proxy.cli(['rl', 'rollback', '1']);
    assert.equal(pinned.code, 0, pinned.stderr);
    assert.match(pinned.stdout, /Serving step 1 now/);
    // Two more turns fill the next batch (the turn before them and the first of them get judged).
    await sendTurns(proxy, 'rl-a', ['one more', 'and another'], 24);
    await waitFor(async () => (await stepsOf(proxy)).some((step) => step.step === 3 && step.status === 'done'), 60_000, 500);
    assert.equal((await training(proxy)).served?.step, 1, 'a pinned rollback is not replaced by a new step');
    const checkpoints = await proxy.cli(['rl', 'checkpoints', '--json']);
    assert.deepEqual(
      (JSON.parse(checkpoints.stdout) as { data: Array<{ step: number }> }).data.map((row) => row.step),
      [3, 1],
    );
    const latest = await proxy.cli(['rl', 'rollback', '--latest']);
    assert.equal(latest.code, 0, latest.stderr);
    const served = (await training(proxy)).served;
    assert.equal(served?.step, 3);
    assert.equal(served?.pinned, false);
    const text = await proxy.cli(['rl', 'status']);
    assert.match(text.stdout, /training {3}tinker at .*tiny\/chars: ready/);
    assert.match(text.stdout, /step {4}3 {2}done/);
    assert.match(text.stdout, /step {4}2 {2}empty/);
  });

  test('after a restart the same policy serves and training resumes from the last saved state', async () => {
    await proxy.stop();
    const before = double.calls.length;
    proxy = rl.proxy = await startProxy({ home: rl.home, config: rl.config });
    const report = await opened(proxy);
    assert.equal(report.state, 'ready', report.error ?? '');
    assert.equal(report.served?.step, 3);
    const loaded = double.calls.slice(before).find((call) => call.route === '/api/v1/load_weights');
    assert.match(JSON.stringify(loaded?.body), /state-0003/);
    const status = await proxy.cli(['status']);
    assert.match(status.stdout, /training {4}tinker, tiny\/chars: serving step 3; last step 3 done, loss -?\d/);
    // Both status commands put the judge's progress in the same words.
    const judgeWords = /\d+ waiting for the next turn, \d+ queued for the judge/;
    const inRlStatus = judgeWords.exec((await proxy.cli(['rl', 'status'])).stdout)?.[0];
    assert.ok(inRlStatus, 'rl status says where samples are with the judge');
    assert.ok(status.stdout.includes(`, ${inRlStatus}, `), `metaclaw status says it in the same words: ${status.stdout}`);
    const doctor = await proxy.cli(['doctor'], { timeoutMs: 60_000 });
    assert.match(doctor.stdout, /training.*tiny\/chars: open; main turns are served from step 3/);
    const logged = readFileSync(join(rl.home, 'logs', 'metaclaw.log'), 'utf8');
    assert.doesNotMatch(logged, new RegExp(double.apiKey), 'the backend key is never logged');
  });
});

describe('RL in mode auto: training waits for an idle window', () => {
  test('a full batch does not train while the user is chatting; once the proxy has been quiet for the idle threshold inside sleep hours, it trains by itself', async () => {
    // Sleep hours from an hour ago to two hours ahead (local time): only the proxy's own quiet keeps the window shut.
    const clock = (offsetHours: number) => {
      const at = new Date(Date.now() + offsetHours * 3_600_000);
      return `${String(at.getHours()).padStart(2, '0')}:${String(at.getMinutes()).padStart(2, '0')}`;
    };
    const rl = await startRlProxy({
      mode: 'auto',
      rl: { batch_size: 2, prm_m: 1 },
      config: { scheduler: { sleep_start: clock(-1), sleep_end: clock(2), idle_threshold_minutes: 1 } },
      ready: true,
    });
    const { proxy } = rl;
    try {
      await sendTurns(proxy, 'auto-a', ['first', 'second', 'third'], 16);
      const waiting = await readySamples(proxy, 2);
      assert.equal(waiting.trigger, 'window');
      await new Promise((resolve) => setTimeout(resolve, 7_000)); // longer than the engine's batch check
      assert.deepEqual(await stepsOf(proxy), [], 'no step while the user is chatting');
      const status = await proxy.cli(['rl', 'status']);
      assert.match(status.stdout, /window {5}IDLE_WAIT: .*chatting through the proxy/);

      const steps = await stepDone(proxy, 120_000, 1_000);
      assert.equal(steps[0]?.step, 1);
      const scheduler = JSON.parse((await proxy.cli(['scheduler', 'status', '--json'])).stdout) as { state: string };
      assert.match(scheduler.state, /WINDOW_OPEN|UPDATING/);
    } finally {
      await rl.dispose();
    }
  });
});

describe('RL turns and a proxy killed under load', () => {
  test('every policy-served answer a client received before kill -9 is a trainable sample after the next start: the turn journal keeps its exact token ids', async () => {
    const rl = await startRlProxy({ rl: { manual_train_trigger: true, prm_m: 1 }, reply: () => 'Score: 1', ready: true });
    const { proxy } = rl;
    try {
      const answered = await killMidBurst(proxy, {
        total: 160,
        killAfter: 80,
        request: (index) => ({
          headers: { 'x-session-id': `kill-${index % 4}` },
          body: { model: 'tiny/chars', messages: [{ role: 'user', content: `question ${index}` }], max_tokens: 8 },
        }),
        answers: (body: { choices?: unknown[] }) => Boolean(body.choices),
      });

      const restarted = await proxy.cli(['start', '--no-wire']);
      assert.equal(restarted.code, 0, restarted.stderr);
      await waitFor(
        async () => {
          for (const id of answered) if ((await fetch(`${proxy.url}/v1/requests/${id}`)).status !== 200) return false;
          return true;
        },
        20_000,
        200,
      );
      const log = readFileSync(join(proxy.home, 'logs', 'metaclaw.log'), 'utf8');
      const recovered = [...log.matchAll(/"turns":(\d+)[^\n]*turn journal/g)].reduce((sum, match) => sum + Number(match[1]), 0);
      const status = await proxy.cli(['rl', 'status', '--json']);
      const buffer = (JSON.parse(status.stdout) as { buffer: { samples: number; text_only: number } }).buffer;
      assert.ok(buffer.samples >= answered.length, `${buffer.samples} samples for ${answered.length} answered turns`);
      assert.equal(buffer.text_only, 0, `no answered turn lost its token ids (${recovered} recovered from the journal)`);
      console.log(`# journal recovered ${recovered} turn(s)`);
    } finally {
      await rl.dispose();
    }
  });
});

describe('RL backend that cannot open at start', () => {
  test('a missing tokenizer fails the opening with the reason and a retry time; once the files are there the next try opens it and the policy serves, without a restart', async () => {
    const rl = await startRlProxy({ rl: { manual_train_trigger: true }, reply: () => 'from the normal upstream', tokenizerLater: true });
    const { proxy } = rl;
    try {
      const failed = await waitFor(async () => {
        const current = await training(proxy);
        return current.state === 'failed' && current;
      }, 30_000);
      assert.match(failed.error ?? '', /tokenizer/i);
      assert.ok(failed.retry_at && Date.parse(failed.retry_at) > Date.now() - 1_000, 'the report says when it tries again');
      assert.equal(failed.opening_failed?.error, failed.error, 'opening_failed has the reason too, with since when and how many tries');
      const status = await proxy.cli(['status']);
      assert.match(
        status.stdout,
        /training .*FAILED: .*[^.]; trying again at .* \(\d+ failed tr(y|ies) since /,
        'the error and the retry time read as one sentence (no ".;")',
      );
      const openai = new OpenAI({ apiKey: 'local', baseURL: `${proxy.url}/v1`, maxRetries: 0 });
      const served = await openai.chat.completions.create({ model: 'tiny/chars', messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(served.choices[0]?.message.content, 'from the normal upstream', 'the agent is served meanwhile');

      rl.writeTokenizer();
      const ready = await waitFor(async () => {
        const current = await training(proxy);
        return current.state === 'ready' && current;
      }, 30_000);
      assert.equal(ready.served?.step, 0);
      assert.equal(ready.opening_failed, null, 'the failure clears once the backend opened');
      const fromPolicy = await openai.chat.completions.create({ model: 'tiny/chars', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 });
      assert.notEqual(fromPolicy.choices[0]?.message.content, 'from the normal upstream', 'main turns are served from the policy now');
    } finally {
      await rl.dispose();
    }
  });
});

describe('training control without RL', () => {
  test('in mode skills_only the training routes answer 409 in the client format, saying why', async () => {
    const proxy = await startProxy({ config: { mode: 'skills_only', llm: { api_base: 'http://127.0.0.1:9/v1', api_key: 'k' } } });
    try {
      const response = await fetch(`${proxy.url}/v1/rl/checkpoints`);
      assert.equal(response.status, 409);
      const body = (await response.json()) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'rl_not_running');
      // The reason names the mode, not just "as configured".
      assert.match(body.error.message, /RL training is not running: the mode in effect is skills_only \(as configured\)/);
      const result = await proxy.cli(['rl', 'checkpoints']);
      assert.notEqual(result.code, 0);
      assert.match(result.stderr, /RL training is not running: the mode in effect is skills_only/);
      // A rollback body of neither form says which forms there are (it was "(body): Invalid input").
      const admin = readFileSync(join(proxy.home, 'admin-token'), 'utf8').trim();
      for (const body of [{ step: '3' }, { latest: false }, {}]) {
        const refused = await fetch(`${proxy.url}/v1/rl/rollback`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-metaclaw-admin': admin },
          body: JSON.stringify(body),
        });
        assert.equal(refused.status, 400);
        assert.match(((await refused.json()) as { error: { message: string } }).error.message, /\{"step": N\}.*\{"latest": true\}/, JSON.stringify(body));
      }
    } finally {
      await proxy.dispose();
    }
  });
});

describe('RL with on-policy distillation (opd.*)', () => {
  test("each sample's exact token ids go to the teacher's /completions; its logprobs add the KL term to the step's advantages, and a teacher that cannot align leaves that sample trained without it", async () => {
    const teacher = await ScriptedUpstream.start();
    const asked: Array<{ ids: number[]; body: Record<string, unknown>; authorization: string | undefined }> = [];
    teacher.defaultHandler = (request, response) => {
      assert.equal(request.path, '/v1/completions');
      const ids = request.body.prompt as number[];
      asked.push({ ids, body: request.body as Record<string, unknown>, authorization: request.headers['authorization'] });
      // The first sample's teacher reads the text its own way (one token short): it cannot be aligned.
      const length = asked.length === 1 ? ids.length - 1 : ids.length;
      json(response, 200, {
        object: 'text_completion',
        choices: [{ index: 0, text: '', finish_reason: 'length', logprobs: { token_logprobs: [null, ...Array.from({ length: length - 1 }, () => -0.1)] } }],
        usage: { prompt_tokens: ids.length, completion_tokens: 0, total_tokens: ids.length },
      });
    };
    const rl = await startRlProxy({
      rl: { batch_size: 2, prm_m: 1, manual_train_trigger: true },
      config: { opd: { enabled: true, teacher_url: `${teacher.url}/v1`, teacher_model: 'teacher-8b', teacher_api_key: 'teacher-key', kl_penalty_coef: 0.5 } },
      ready: true,
    });
    const { proxy, double } = rl;
    try {
      await sendTurns(proxy, 'opd-a', ['one', 'two', 'three'], 12);
      const ready = await readySamples(proxy, 2);
      assert.deepEqual(ready.opd, { teacher: new URL(teacher.url).host, model: 'teacher-8b', kl_penalty_coef: 0.5 });
      assert.ok(asked.length >= 2, 'every sample with token ids was sent to the teacher');
      for (const call of asked) {
        assert.equal(call.body['echo'], true);
        assert.equal(call.body['logprobs'], 1);
        assert.equal(call.body['max_tokens'], 0);
        assert.equal(call.body['model'], 'teacher-8b');
        assert.equal(call.authorization, 'Bearer teacher-key');
        assert.ok(
          call.ids.every((id) => Number.isInteger(id) && id >= 0 && id < CHAR_VOCAB_SIZE),
          'the prompt is the exact token ids, not text',
        );
      }

      const shown = await proxy.cli(['rl', 'status']);
      assert.match(shown.stdout, /teacher +\d+ with the OPD teacher's logprobs, \d+ waiting for it, 1 refused/);
      const stepped = await proxy.cli(['rl', 'train-step', '--json']);
      assert.equal(stepped.code, 0, stepped.stderr);
      const outcome = JSON.parse(stepped.stdout) as { status: string; metrics: { metrics: Record<string, number> } };
      assert.equal(outcome.status, 'done', stepped.stdout);
      assert.equal(outcome.metrics.metrics['opd:samples'], 1, 'one sample had aligned teacher logprobs');

      const [call] = double.callsTo('/api/v1/forward_backward');
      const data = (
        call!.body as {
          forward_backward_input: { data: Array<{ model_input: { chunks: Array<{ tokens: number[] }> }; loss_fn_inputs: Record<string, { data: number[] }> }> };
        }
      ).forward_backward_input.data;
      assert.equal(data.length, 2);
      // The teacher was sent prompt + response; the datum holds them shifted by one (its model input is all but the last).
      const sentIds = asked.map((entry) => entry.ids.slice(0, -1).join(','));
      const kinds = data.map((datum) => {
        const ids = datum.model_input.chunks.flatMap((chunk) => chunk.tokens).join(',');
        assert.ok(sentIds.includes(ids), 'the teacher read exactly the ids that were trained on');
        const student = datum.loss_fn_inputs['logprobs']!.data;
        const advantages = datum.loss_fn_inputs['advantages']!.data;
        const response = student.flatMap((logprob, position) => (logprob !== 0 ? [position] : []));
        assert.ok(response.length > 1);
        // Undo the KL term (coef 0.5, teacher -0.1): what is left is the sample's one GRPO advantage.
        const base = response.map((position) => advantages[position]! + 0.5 * (student[position]! + 0.1));
        const raw = response.map((position) => advantages[position]!);
        const constant = (values: number[]) => values.every((value) => Math.abs(value - values[0]!) < 1e-4);
        if (constant(raw)) return 'without teacher';
        assert.ok(constant(base), `the advantages are the GRPO advantage plus the KL term: ${JSON.stringify(base)}`);
        return 'with teacher';
      });
      assert.deepEqual(kinds.sort(), ['with teacher', 'without teacher']);
    } finally {
      await rl.dispose();
      await teacher.close();
    }
  });
});
