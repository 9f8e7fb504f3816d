import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { startProxy, waitFor } from './support/proxy.js';
import { sendTurns, startRlProxy, stepsOf, training, type TrainingReport } from './support/rl-proxy.js';

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
      await sendTurns(proxy, 'failing-steps', ['first question', 'second question', 'third question'], 8);
      const waiting = await waitFor(
        async () => {
          const report = (await training(proxy)) as Report;
          return report.step_retry?.failures === 2 && report;
        },
        40_000,
        100,
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
      // Then the automatic step runs, trains (the refusals are used up), and the wait is over.
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
      const steps = await waitFor(
        async () => {
          const current = await stepsOf(proxy);
          return current.some((step) => step.status === 'done') && current;
        },
        40_000,
        200,
      );
      assert.equal(steps[0]?.step, 2);
      assert.equal(steps[0]?.samples, 2);
      const status = await proxy.cli(['rl', 'status', '--json']);
      assert.equal((JSON.parse(status.stdout) as { buffer: { by_state: { trained: number } } }).buffer.by_state.trained, 2);
    } finally {
      await rl.dispose();
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
