import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { startProxy, waitFor } from './support/proxy.js';
import {
  expectReopeningLater,
  opened,
  readySamples,
  sendTurns,
  startDroppingBackend,
  startRlProxy,
  stepDone,
  stepsOf,
  training,
  type TrainingReport,
} from './support/rl-proxy.js';

/**
 * What a user sees when training goes wrong in a running proxy (mode rl, the Tinker double): a step
 * the backend keeps refusing is not sent again every few seconds, and `rl status` says when the next
 * try is; a proxy whose backend cannot open after a restart says the normal upstream answers, not
 * the step it would serve.
 */

describe('RL: a failing training step and a backend that does not open', () => {
  test('a step the backend refuses is tried again later and later (5 s, then 10 s …), rl status says when; a step by hand does not wait, and one that trains ends the wait', async () => {
    const rl = await startRlProxy({ rl: { batch_size: 2, prm_m: 1 }, ready: true });
    const { proxy, double } = rl;
    type Report = TrainingReport & { step_retry?: { failures: number; at: string } | null; last_steps: Array<{ step: number; finished_at: string | null }> };
    try {
      // The service refuses the next three forward-backward submissions (400: not worth retrying in the transport).
      double.cueSubmit('/api/v1/forward_backward', 400, 400, 400);
      // Five turns: the third refusal sets the first batch aside (a client error, three times), and the next batch trains.
      await sendTurns(proxy, 'failing-steps', ['first question', 'second question', 'third question', 'fourth question', 'fifth question'], 8);
      const waiting = await waitFor(
        async () => {
          const report = (await training(proxy)) as Report;
          return report.step_retry?.failures === 2 && report;
        },
        40_000,
        100,
      );
      // The dashboard's overview warns with rl status's words.
      const overview = (await (await fetch(`${proxy.url}/v1/dashboard/overview`)).json()) as { warnings: Array<{ code: string; message: string }> };
      assert.match(
        overview.warnings.find((warning) => warning.code === 'training_steps_failing')?.message ?? JSON.stringify(overview.warnings),
        /^RL training \(tinker at .*\): the last 2 automatic steps failed; the next try at .*; `metaclaw rl status` shows the steps' errors\.$/,
      );
      // A step by hand runs at once (it meets the third refusal); it does not change the automatic wait.
      const byHand = await proxy.cli(['rl', 'train-step']);
      assert.equal(byHand.code, 1);
      assert.match(byHand.stderr, /^step 3 failed: .*400/);

      const retry = waiting.step_retry!;
      const second = waiting.last_steps.find((step) => step.step === 2);
      assert.ok(second?.finished_at);
      const delay = Date.parse(retry.at) - Date.parse(second.finished_at);
      assert.ok(delay >= 9_000 && delay <= 11_000, `after the second failure the next automatic step waits 10 s, not 5 (waits ${delay} ms)`);
      const status = await proxy.cli(['rl', 'status']);
      assert.equal(status.code, 0, status.stderr);
      assert.match(status.stdout, /the last 2 automatic steps failed; the next try at /);
      // Then the automatic step runs on the next batch (the first, refused three times, is set aside), trains, and the wait is over.
      const steps = await waitFor(
        async () => {
          const current = await stepsOf(proxy);
          return current.some((step) => step.status === 'done') && current;
        },
        30_000,
        200,
      );
      assert.equal(steps[0]?.step, 4);
      const finished = steps[0]?.finished_at ?? '';
      assert.ok(Date.parse(finished) >= Date.parse(retry.at), `the automatic step waited for the time the report gave (${retry.at}; it ended ${finished})`);
      assert.equal(((await training(proxy)) as Report).step_retry, null);
      assert.doesNotMatch((await proxy.cli(['rl', 'status'])).stdout, /automatic step/);
    } finally {
      await rl.dispose();
    }
  });

  test('a batch the backend refuses with a client error (422) three times is set aside with the reason, shown by rl status and /status, and the next batch trains; server failures do not set a batch aside', async () => {
    const rl = await startRlProxy({ rl: { batch_size: 2, prm_m: 1, manual_train_trigger: true }, ready: true });
    const { proxy, double } = rl;
    type Buffer = { samples: number; trainable: number; by_state: { set_aside: number }; set_aside_reason: string | null };
    const buffer = async () => ((await (await fetch(`${proxy.url}/status`)).json()) as { rl: { buffer: Buffer } }).rl.buffer;
    try {
      await sendTurns(proxy, 'refused-batch', ['first question', 'second question', 'third question', 'fourth question', 'fifth question'], 8);
      await readySamples(proxy, 4);

      // A service that fails the step on its side three times: the batch is not the problem, it stays.
      double.cueRetrieve(...Array.from({ length: 3 }, () => ({ error: 'out of capacity', category: 'server' as const })));
      for (const step of [1, 2, 3]) {
        const failed = await proxy.cli(['rl', 'train-step']);
        assert.equal(failed.code, 1);
        assert.match(failed.stderr, new RegExp(`^step ${step} failed: .*out of capacity`));
        assert.doesNotMatch(failed.stderr, /set aside/);
      }
      assert.equal((await buffer()).by_state.set_aside, 0);

      // The batch itself refused (422): twice it stays, the third time it is set aside.
      double.cueSubmit('/api/v1/forward_backward', 422, 422, 422);
      for (const step of [4, 5]) {
        const refused = await proxy.cli(['rl', 'train-step']);
        assert.equal(refused.code, 1);
        assert.match(refused.stderr, new RegExp(`^step ${step} failed: .*422`));
        assert.doesNotMatch(refused.stderr, /set aside/);
      }
      const third = await proxy.cli(['rl', 'train-step']);
      assert.equal(third.code, 1);
      assert.match(third.stderr, /^step 6 failed: .*422.*its 2 sample\(s\) are set aside, and the next batch trains/s);

      const aside = await buffer();
      assert.equal(aside.by_state.set_aside, 2);
      assert.equal(aside.trainable, 2);
      assert.equal(aside.samples, 5, 'nothing is deleted');
      assert.match(aside.set_aside_reason ?? '', /^the training backend refused their batch 3 times \(last at step 6\): .*422/);
      const text = await proxy.cli(['rl', 'status']);
      assert.match(text.stdout, /^set aside {2}2 sample\(s\) never train: the training backend refused their batch 3 times/m);

      const next = await proxy.cli(['rl', 'train-step']);
      assert.equal(next.code, 0, next.stderr);
      assert.match(next.stdout, /^step 7: trained on 2 sample\(s\)/);
      assert.equal((await buffer()).trainable, 0);
    } finally {
      await rl.dispose();
    }
  });

  test('the refusals of a batch are counted across a restart: refused twice before it, the batch is set aside at its first refusal after it', async () => {
    const rl = await startRlProxy({ rl: { batch_size: 2, prm_m: 1, manual_train_trigger: true }, ready: true });
    try {
      await sendTurns(rl.proxy, 'refused-restart', ['first question', 'second question', 'third question'], 8);
      await readySamples(rl.proxy, 2);
      rl.double.cueSubmit('/api/v1/forward_backward', 422, 422, 422);
      for (const step of [1, 2]) {
        const refused = await rl.proxy.cli(['rl', 'train-step']);
        assert.equal(refused.code, 1);
        assert.match(refused.stderr, new RegExp(`^step ${step} failed: .*422`));
        assert.doesNotMatch(refused.stderr, /set aside/);
      }

      await rl.proxy.stop();
      const proxy = (rl.proxy = await startProxy({ home: rl.home, config: rl.config }));
      assert.equal((await opened(proxy)).state, 'ready');
      const third = await proxy.cli(['rl', 'train-step']);
      assert.equal(third.code, 1);
      assert.match(third.stderr, /^step 3 failed: .*422.*its 2 sample\(s\) are set aside, and the next batch trains/s);
      const status = await proxy.cli(['rl', 'status']);
      assert.match(status.stdout, /^set aside {2}2 sample\(s\) never train: the training backend refused their batch 3 times \(last at step 3\)/m);
    } finally {
      await rl.dispose();
    }
  });

  test('metaclaw stop while a training step hangs on an unanswering backend: the request is cut, the proxy stops at once and cleanly, the step is recorded abandoned, and its samples train after the next start', async () => {
    const rl = await startRlProxy({ rl: { batch_size: 2, prm_m: 1 }, ready: true });
    const { double } = rl;
    try {
      // The service takes the step's forward-backward and never answers (no status, no bytes).
      double.hangSubmit('/api/v1/forward_backward');
      await sendTurns(rl.proxy, 'hanging-step', ['first question', 'second question', 'third question'], 8);
      await waitFor(() => double.held.length === 1, 40_000, 100);
      assert.equal((await stepsOf(rl.proxy))[0]?.status, 'running');

      const started = Date.now();
      const stopped = await rl.proxy.cli(['stop']);
      const took = Date.now() - started;
      assert.equal(stopped.code, 0, stopped.stderr);
      assert.match(stopped.stdout, /^MetaClaw stopped \(pid \d+\)\.$/m, 'stopped, not killed after the timeout');
      assert.ok(took < 8_000, `stop took ${took} ms (the shutdown timeout would be 20 s)`);
      assert.equal(double.held[0]?.closedByClient, true, 'the hanging request was cut by the proxy');
      const log = readFileSync(join(rl.home, 'logs', 'metaclaw.log'), 'utf8');
      assert.match(log, /rl training step abandoned; its samples wait for the next window/);

      const offline = await rl.proxy.cli(['rl', 'status', '--json']);
      const [cut] = (JSON.parse(offline.stdout) as { steps: Array<{ step: number; status: string; error: string | null }> }).steps;
      assert.equal(cut?.status, 'abandoned');
      assert.match(cut?.error ?? '', /^the proxy stopped during the step; its samples wait for the next start/);

      // The next start trains the same two samples (the service answers again).
      const proxy = (rl.proxy = await startProxy({ home: rl.home, config: rl.config }));
      const steps = await stepDone(proxy, 40_000, 200);
      assert.equal(steps[0]?.step, 2);
      assert.equal(steps[0]?.samples, 2);
      const status = await proxy.cli(['rl', 'status', '--json']);
      assert.equal((JSON.parse(status.stdout) as { buffer: { by_state: { trained: number } } }).buffer.by_state.trained, 2);
    } finally {
      await rl.dispose();
    }
  });

  test('a training backend that drops every connection: /status and rl status say why within seconds, opening is tried again after 5 s, then 10 s (never in between), and the log says it once', async () => {
    const backend = await startDroppingBackend();
    const rl = await startRlProxy({ rl: { base_url: backend.url } });
    try {
      await expectReopeningLater(
        backend,
        () => training(rl.proxy),
        (args) => rl.proxy.cli(args),
        join(rl.home, 'logs', 'metaclaw.log'),
      );
    } finally {
      await rl.dispose();
      await backend.close();
    }
  });

  test('after a restart whose backend cannot open, rl status says the normal upstream answers (not the step it would serve), and it does', async () => {
    const rl = await startRlProxy({ rl: { manual_train_trigger: true }, reply: () => 'from the normal upstream', ready: true });
    try {
      assert.equal((await training(rl.proxy)).served?.step, 0);
      await rl.proxy.stop();
      rmSync(join(rl.home, 'char-tokenizer'), { recursive: true, force: true });
      const proxy = (rl.proxy = await startProxy({ home: rl.home, config: rl.config }));
      const failed = await waitFor(async () => {
        const current = await training(proxy);
        return current.state === 'failed' && current;
      }, 30_000);
      assert.equal(failed.served?.step, 0, '/status still names the step that serves once the backend opens');

      const status = await proxy.cli(['rl', 'status']);
      assert.equal(status.code, 0, status.stderr);
      assert.doesNotMatch(status.stdout, /serving step 0/);
      assert.match(status.stdout, /serving the normal upstream until the backend opens \(then step 0\)/);
      const openai = new OpenAI({ apiKey: 'local', baseURL: `${proxy.url}/v1`, maxRetries: 0 });
      const answer = await openai.chat.completions.create({ model: 'tiny/chars', messages: [{ role: 'user', content: 'who answers?' }] });
      assert.equal(answer.choices[0]?.message.content, 'from the normal upstream');
    } finally {
      await rl.dispose();
    }
  });
});
