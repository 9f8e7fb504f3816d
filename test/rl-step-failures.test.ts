import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
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
  test('a step the backend refuses is tried again later and later (5 s, then 10 s …), rl status says when; a step by hand still runs at once and ends the wait', async () => {
    const rl = await startRlProxy({ rl: { batch_size: 2, prm_m: 1 }, ready: true });
    const { proxy, double } = rl;
    try {
      // The service refuses the next two forward-backward submissions (400: not worth retrying in the transport).
      double.cueSubmit('/api/v1/forward_backward', 400, 400);
      await sendTurns(proxy, 'failing-steps', ['first question', 'second question', 'third question'], 8);
      const twoFailed = await waitFor(
        async () => {
          const steps = await stepsOf(proxy);
          return steps.filter((step) => step.status === 'failed').length >= 2 && steps;
        },
        40_000,
        200,
      );
      assert.equal(twoFailed.length, 2, JSON.stringify(twoFailed));
      const report = (await training(proxy)) as TrainingReport & { step_retry?: { failures: number; at: string } | null };
      assert.ok(report.step_retry, 'the report says when the next automatic step is tried');
      assert.equal(report.step_retry.failures, 2);
      assert.ok(Date.parse(report.step_retry.at) - Date.now() > 6_000, `the second failure waits about 10 s (next try ${report.step_retry.at})`);
      const status = await proxy.cli(['rl', 'status']);
      assert.equal(status.code, 0, status.stderr);
      assert.match(status.stdout, /the last 2 automatic steps failed; the next try at /);

      // Within the next 5 s (the batch check's interval), no third step is taken.
      await new Promise((resolve) => setTimeout(resolve, 5_500));
      assert.equal((await stepsOf(proxy)).length, 2, 'the failing step is not sent again at every batch check');

      // A step by hand does not wait: it runs now, and its success ends the wait.
      const byHand = await proxy.cli(['rl', 'train-step']);
      assert.equal(byHand.code, 0, byHand.stderr);
      assert.match(byHand.stdout, /^step 3: trained on 2 sample\(s\)/);
      const after = (await training(proxy)) as TrainingReport & { step_retry?: unknown };
      assert.equal(after.step_retry, null);
      assert.doesNotMatch((await proxy.cli(['rl', 'status'])).stdout, /automatic step/);
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
