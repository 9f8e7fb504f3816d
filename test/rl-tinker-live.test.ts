import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TinkerBackend, selectBackend } from '../src/rl/tinker/index.js';
import { trainStep } from '../src/rl/train/index.js';
import type { RlSample } from '../src/rl/types.js';

/**
 * Opt-in smoke test against the real service (MetaClaw's test_live_tinker_training, one step):
 * create → save sampler → sample → forward_backward (IS) → optim_step → save → sample.
 * Runs only with TINKER_API_KEY set (TINKER_BASE_URL and TINKER_LIVE_MODEL optional); skipped otherwise.
 */
const apiKey = process.env.TINKER_API_KEY;
const skip = apiKey ? false : 'TINKER_API_KEY is not set: no live Tinker test';

test('live Tinker: one GRPO step end to end, and the new sampler answers', { skip, timeout: 20 * 60_000 }, async () => {
  const selection = selectBackend({ backend: 'tinker', apiKey: apiKey ?? '', baseUrl: process.env.TINKER_BASE_URL ?? '', env: process.env });
  const backend = new TinkerBackend({ ...selection, onWarning: (message) => console.warn(message) });
  await backend.open({ baseModel: process.env.TINKER_LIVE_MODEL ?? 'Qwen/Qwen3-4B-Instruct-2507', loraRank: 8 });
  try {
    const sampler = await backend.saveForSampler(`metaclaw-ts-live-${Date.now()}-0`);
    // "Hello" in Qwen's vocabulary, then a few common ids: any ids inside the vocabulary will do
    const prompt = [9707, 11, 1879, 0, 198];
    const samples: RlSample[] = [];
    for (const [index, reward] of ([1, -1] as const).entries()) {
      const sequence = await sampler.sample(prompt, { maxTokens: 8, temperature: 1, seed: index + 1 });
      assert.equal(sequence.tokens.length, sequence.logprobs.length);
      samples.push({
        turnId: `live-${index}`,
        sessionId: 'live',
        skillGeneration: 0,
        policyVersion: sampler.version,
        promptTokens: prompt,
        responseTokens: sequence.tokens,
        responseLogprobs: sequence.logprobs,
        reward,
        createdAt: Date.now(),
      });
    }
    const result = await trainStep(samples, backend, {
      lossFn: 'importance_sampling',
      adam: { learningRate: 1e-5 },
      samplerName: `metaclaw-ts-live-${Date.now()}-1`,
    });
    assert.ok(result.trained, 'rewards +1 and -1 give a batch to train');
    assert.ok(Number.isFinite(result.metrics.loss));
    assert.notEqual(result.sampler.version, sampler.version);
    const after = await result.sampler.sample(prompt, { maxTokens: 4, temperature: 1 });
    assert.ok(after.tokens.length > 0);
  } finally {
    await backend.close();
  }
});
