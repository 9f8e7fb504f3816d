import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { recordedTurn, startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { opened, RL_MODEL, sendTurns, startRlProxy, stepsOf, training, type RlProxy } from './support/rl-proxy.js';

/**
 * `metaclaw rl rollback 0`: the weights a training run started from (its fresh LoRA, saved for
 * sampling as step 0) are kept in the run's record, so the agent can be served the untrained policy
 * again after any number of steps and restarts, pinned like any rollback, while training goes on
 * from the newest weights. Step 0 is always the current run's: a new base model has its own.
 */

const OTHER_MODEL = 'tiny/chars-b';

/** The sampler path that answered one main turn. */
async function servedBy(proxy: ProxyHandle, text: string, model = RL_MODEL): Promise<string> {
  const openai = new OpenAI({ apiKey: 'local', baseURL: `${proxy.url}/v1`, maxRetries: 0 });
  const answer = await openai.chat.completions
    .create({ model, messages: [{ role: 'user', content: text }], max_tokens: 8 }, { headers: { 'x-session-id': 'rollback-0' } })
    .withResponse();
  const turn = await recordedTurn(proxy.url, answer.response.headers.get('x-metaclaw-request-id')!);
  assert.equal(turn.forwarded.upstream, 'rl-policy');
  return turn.outcome.model as string;
}

/** Waits until a training step after `after` is done; returns its number. */
async function stepAfter(proxy: ProxyHandle, after: number): Promise<number> {
  return waitFor(async () => (await stepsOf(proxy)).find((row) => row.step > after && row.status === 'done')?.step, 60_000, 300);
}

async function restart(rl: RlProxy): Promise<ProxyHandle> {
  await rl.proxy.stop();
  rl.proxy = await startProxy({ home: rl.home, config: rl.config });
  const report = await opened(rl.proxy);
  assert.equal(report.state, 'ready', report.error ?? '');
  return rl.proxy;
}

describe('RL: rollback to step 0, the weights the training run started from', () => {
  test('after a step and a restart, rl rollback 0 serves the run’s untrained LoRA again, pinned; training goes on and --latest follows it', async () => {
    const rl = await startRlProxy({ rl: { batch_size: 2, prm_m: 1 }, ready: true });
    try {
      const start = (await training(rl.proxy)).served;
      assert.equal(start?.step, 0);
      assert.match(start.samplerPath, /sampler_weights\/step-0000$/);
      await sendTurns(rl.proxy, 'rollback-0', ['one question', 'another question', 'a third question'], 8);
      assert.equal(await stepAfter(rl.proxy, 0), 1);
      assert.equal((await training(rl.proxy)).served?.step, 1);

      // A restart resumes from step 1's saved state: the step-0 weights are not saved again, but remembered.
      const proxy = await restart(rl);
      assert.equal((await training(proxy)).served?.step, 1);
      const listed = await proxy.cli(['rl', 'checkpoints']);
      assert.equal(listed.code, 0, listed.stderr);
      assert.ok(
        listed.stdout.includes(`step    0  `) && listed.stdout.includes(`the weights the training run started from  ${start.samplerPath}`),
        listed.stdout,
      );

      const rollback = await proxy.cli(['rl', 'rollback', '0']);
      assert.equal(rollback.code, 0, rollback.stderr);
      assert.match(rollback.stdout, /Serving step 0 \(the weights this training run started from\) now/);
      assert.deepEqual((await training(proxy)).served, { step: 0, samplerPath: start.samplerPath, pinned: true });
      assert.equal(await servedBy(proxy, 'after the rollback'), start.samplerPath, 'the untrained LoRA answers the next turn');

      // Training goes on from the newest weights; the pinned step 0 keeps serving.
      await sendTurns(proxy, 'rollback-0', ['one more', 'and another'], 8);
      const next = await stepAfter(proxy, 1);
      assert.equal((await training(proxy)).served?.step, 0, 'a new step does not replace a pinned step 0');
      const load = rl.double.calls.filter((call) => call.route === '/api/v1/load_weights');
      assert.match(JSON.stringify(load.at(-1)?.body), /state-0001/, 'training resumed from step 1, not from step 0');

      const latest = await proxy.cli(['rl', 'rollback', '--latest']);
      assert.equal(latest.code, 0, latest.stderr);
      const following = (await training(proxy)).served;
      assert.equal(following?.step, next);
      assert.equal(following?.pinned, false);

      // The HTTP route takes step 0 too (with the admin token).
      const admin = readFileSync(join(rl.home, 'admin-token'), 'utf8').trim();
      const response = await fetch(`${proxy.url}/v1/rl/rollback`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-metaclaw-admin': admin },
        body: JSON.stringify({ step: 0 }),
      });
      assert.equal(response.status, 200, await response.clone().text());
      assert.deepEqual(((await response.json()) as { served: unknown }).served, { step: 0, samplerPath: start.samplerPath, pinned: true });
    } finally {
      await rl.dispose();
    }
  });

  test('step 0 is the current run’s: a new base model’s own fresh LoRA, never the earlier run’s, and none while the new run has not opened', async () => {
    const rl = await startRlProxy({ rl: { batch_size: 2, prm_m: 1 }, ready: true, moreModels: [OTHER_MODEL] });
    try {
      const first = (await training(rl.proxy)).served?.samplerPath;
      assert.ok(first);
      const rlConfig = rl.config['rl'] as Record<string, unknown>;

      // A base model the backend does not open: the new run has no step 0 yet, and the old run's is not served.
      await rl.proxy.stop();
      rlConfig['model'] = 'tiny/typo';
      rl.proxy = await startProxy({ home: rl.home, config: rl.config });
      assert.equal((await opened(rl.proxy)).state, 'failed');
      const refused = await rl.proxy.cli(['rl', 'rollback', '0']);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /Step 0 has no saved weights to serve: the weights this training run started from were not kept/);

      rlConfig['model'] = OTHER_MODEL;
      const proxy = await restart(rl);
      const second = (await training(proxy)).served?.samplerPath;
      assert.ok(second && second !== first, 'the new run starts from a LoRA of its own');
      await sendTurns(proxy, 'rollback-0', ['one question', 'another question', 'a third question'], 8);
      const trained = await stepAfter(proxy, 0);
      assert.equal((await training(proxy)).served?.step, trained, 'the new run’s step serves');

      const checkpoints = await proxy.cli(['rl', 'checkpoints', '--json']);
      assert.equal(checkpoints.code, 0, checkpoints.stderr);
      assert.equal((JSON.parse(checkpoints.stdout) as { start: { sampler_path: string } | null }).start?.sampler_path, second);
      const rollback = await proxy.cli(['rl', 'rollback', '0', '--json']);
      assert.equal(rollback.code, 0, rollback.stderr);
      assert.deepEqual((JSON.parse(rollback.stdout) as { served: unknown }).served, { step: 0, samplerPath: second, pinned: true });
      assert.equal(await servedBy(proxy, 'after the rollback', OTHER_MODEL), second);
    } finally {
      await rl.dispose();
    }
  });
});
