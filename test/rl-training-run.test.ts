import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { startProxy } from './support/proxy.js';
import { opened, RL_MODEL, sendTurns, startRlProxy, stepDone } from './support/rl-proxy.js';

/**
 * A user who trained on one base model and then sets `rl.model` to another: a LoRA of one base
 * model does not load into another, so the restarted proxy starts a new run (a fresh LoRA serving as
 * its step 0) instead of resuming from, serving or rolling back to the old model's steps.
 */

const OTHER_MODEL = 'tiny/chars-b';

describe('RL: another base model starts a new training run', () => {
  test('after rl.model changes, the restart neither loads nor serves the old model’s weights; its steps stay in the history only, and its untrained samples are set aside', async () => {
    const rl = await startRlProxy({ rl: { batch_size: 2, prm_m: 1 }, ready: true, moreModels: [OTHER_MODEL] });
    try {
      await sendTurns(rl.proxy, 'first-model', ['one question', 'another question', 'a third question'], 8);
      const steps = await stepDone(rl.proxy, 40_000, 200);
      assert.equal(steps[0]?.step, 1);

      // A typo in rl.model: the backend does not open on it, and fixing it resumes the real run.
      const rlConfig = rl.config['rl'] as Record<string, unknown>;
      await rl.proxy.stop();
      rlConfig['model'] = 'tiny/typo';
      rl.proxy = await startProxy({ home: rl.home, config: rl.config });
      assert.equal((await opened(rl.proxy)).state, 'failed');
      await rl.proxy.stop();
      delete rlConfig['model'];
      const beforeFix = rl.double.calls.length;
      rl.proxy = await startProxy({ home: rl.home, config: rl.config });
      const fixed = await opened(rl.proxy);
      assert.equal(fixed.state, 'ready', fixed.error ?? '');
      assert.equal(fixed.served?.step, 1, 'the run trained on tiny/chars serves its step 1 again');
      assert.match(JSON.stringify(rl.double.calls.slice(beforeFix).find((call) => call.route === '/api/v1/load_weights')?.body), /state-0001/);

      await rl.proxy.stop();
      rlConfig['model'] = OTHER_MODEL;
      const before = rl.double.calls.length;
      const proxy = (rl.proxy = await startProxy({ home: rl.home, config: rl.config }));
      const report = await opened(proxy);
      assert.equal(report.state, 'ready', report.error ?? '');
      const calls = rl.double.calls.slice(before);
      assert.deepEqual(
        calls.filter((call) => call.route === '/api/v1/load_weights'),
        [],
        `the ${RL_MODEL} training state is not loaded into ${OTHER_MODEL}`,
      );
      assert.match(JSON.stringify(calls.find((call) => call.route === '/api/v1/create_model')?.body), new RegExp(OTHER_MODEL));
      assert.equal(report.served?.step, 0, 'the new run serves its fresh LoRA');
      assert.doesNotMatch(report.served?.samplerPath ?? '', /step-0001/);

      const checkpoints = await proxy.cli(['rl', 'checkpoints']);
      assert.equal(checkpoints.code, 0, checkpoints.stderr);
      assert.match(checkpoints.stdout, /No step has saved weights yet\./);
      const rollback = await proxy.cli(['rl', 'rollback', '1']);
      assert.equal(rollback.code, 1);
      assert.match(rollback.stderr, /Step 1 has no saved weights to serve/);
      const status = await proxy.cli(['rl', 'status']);
      assert.match(status.stdout, /step {4}1 {2}done/, 'the old step stays in the history');
      const logged = readFileSync(join(rl.home, 'logs', 'metaclaw.log'), 'utf8');
      assert.match(logged, /a new training run starts .*tiny\/chars .*tiny\/chars-b/);
      // The old run's third turn, never trained: its token ids are the other model's, so it is set aside, not trained.
      type Buffer = { samples: number; trainable: number; by_state: { set_aside: number }; set_aside_reason: string | null };
      const buffer = ((await (await fetch(`${proxy.url}/status`)).json()) as { rl: { buffer: Buffer } }).rl.buffer;
      assert.equal(buffer.by_state.set_aside, 1, JSON.stringify(buffer));
      assert.equal(buffer.trainable, 0);
      assert.match(buffer.set_aside_reason ?? '', /^served by an earlier training run \(the tinker LoRA of rank \d+ on tiny\/chars\): its token ids/);

      // The new run serves from the policy.
      const openai = new OpenAI({ apiKey: 'local', baseURL: `${proxy.url}/v1`, maxRetries: 0 });
      const answer = await openai.chat.completions.create({ model: OTHER_MODEL, messages: [{ role: 'user', content: 'hello' }], max_tokens: 8 });
      assert.ok(answer.choices[0]?.message.content);
    } finally {
      await rl.dispose();
    }
  });
});
