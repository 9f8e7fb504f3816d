import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { TinkerBackend } from '../src/rl/tinker/index.js';
import { wireDatum } from '../src/rl/tinker/wire.js';
import { buildDatum, computeAdvantages, klPenaltyTerms, trainStep } from '../src/rl/train/index.js';
import type { JudgeScore, LossFunction, PolicySampler, RlSample } from '../src/rl/types.js';
import { TinkerDouble } from './support/tinker-double.js';

const MODEL = 'tiny/bigram';

function sample(overrides: Partial<RlSample> = {}): RlSample {
  return {
    turnId: 't1',
    sessionId: 's1',
    skillGeneration: 0,
    policyVersion: 'v0',
    promptTokens: [5, 6, 7],
    responseTokens: [8, 9],
    responseLogprobs: [-0.5, -1.25],
    reward: 1,
    createdAt: 0,
    ...overrides,
  };
}

function close(actual: number | null | undefined, expected: number, tolerance = 1e-6): void {
  assert.ok(actual !== null && actual !== undefined && Math.abs(actual - expected) < tolerance, `${actual} ≉ ${expected}`);
}

describe('GRPO advantages', () => {
  test('batch mode (the default) is MetaClaw’s normalisation: (r − mean) / (population std + 1e-8)', () => {
    const advantages = computeAdvantages([sample({ reward: 1 }), sample({ reward: -1 }), sample({ reward: 1 }), sample({ reward: 0 })]);
    // mean 0.25, population std sqrt(0.6875)
    const std = Math.sqrt(0.6875);
    close(advantages[0], 0.75 / std);
    close(advantages[1], -1.25 / std);
    close(advantages[3], -0.25 / std);
  });

  test('a batch whose rewards are all equal carries no signal and is skipped', () => {
    assert.deepEqual(computeAdvantages([sample({ reward: 1 }), sample({ reward: 1 })]), [null, null]);
    assert.deepEqual(computeAdvantages([sample({ reward: -1 })]), [null]);
  });

  test('samples without a reward (a tie or a failed judge) are skipped and count in no mean', () => {
    const advantages = computeAdvantages([sample({ reward: 1 }), sample({ reward: null }), sample({ reward: -1 })]);
    assert.equal(advantages[1], null);
    close(advantages[0], 1);
    close(advantages[2], -1);
  });

  test('group mode is relative to samples of the same prompt; unique prompts are pooled; zero-variance groups are skipped', () => {
    const shared = [1, 2, 3];
    const samples = [
      sample({ promptTokens: shared, reward: 1 }),
      sample({ promptTokens: shared, reward: 0 }),
      sample({ promptTokens: [9], reward: 1 }),
      sample({ promptTokens: [9], reward: 1 }),
      sample({ promptTokens: [4], reward: 1 }),
      sample({ promptTokens: [5], reward: -1 }),
    ];
    const advantages = computeAdvantages(samples, 'group');
    close(advantages[0], 1);
    close(advantages[1], -1);
    assert.equal(advantages[2], null, 'a group whose rewards agree is skipped');
    assert.equal(advantages[3], null);
    close(advantages[4], 1, 1e-6);
    close(advantages[5], -1, 1e-6);
    // the same samples in batch mode are all compared with each other
    const batch = computeAdvantages(samples, 'batch');
    assert.ok(batch.every((value) => value !== null));
  });
});

describe('the datum builder', () => {
  test('shifts by one: the input is prompt + response without its last token, the targets are it shifted, all lengths equal', () => {
    const datum = buildDatum(sample(), 0.5);
    assert.deepEqual(datum.modelInput, [5, 6, 7, 8]);
    assert.deepEqual(datum.targetTokens, [6, 7, 8, 9]);
    assert.equal(datum.logprobs.length, 4);
    assert.equal(datum.advantages.length, 4);
  });

  test('prompt positions carry zero advantage and zero logprob; response positions carry the sampled logprobs and the advantage', () => {
    const datum = buildDatum(sample(), 0.5);
    assert.deepEqual(datum.logprobs, [0, 0, -0.5, -1.25]);
    assert.deepEqual(datum.advantages, [0, 0, 0.5, 0.5]);
    assert.ok([...datum.logprobs, ...datum.advantages].every(Number.isFinite));
  });

  test('on the wire a datum has target_tokens, logprobs and advantages only: no mask key', () => {
    const wire = wireDatum(buildDatum(sample(), 1));
    assert.deepEqual(Object.keys(wire.loss_fn_inputs).sort(), ['advantages', 'logprobs', 'target_tokens']);
    assert.deepEqual(wire.loss_fn_inputs.target_tokens, { data: [6, 7, 8, 9], dtype: 'int64', shape: [4] });
    assert.deepEqual(wire.model_input, { chunks: [{ tokens: [5, 6, 7, 8], type: 'encoded_text' }] });
  });

  test('refuses misaligned logprobs, non-finite values and empty responses rather than padding them', () => {
    assert.throws(() => buildDatum(sample({ responseLogprobs: [-0.5] }), 1), /1 logprobs for 2 response tokens/);
    assert.throws(() => buildDatum(sample({ responseLogprobs: [-0.5, Number.NaN] }), 1), /finite/);
    assert.throws(() => buildDatum(sample({ responseTokens: [], responseLogprobs: [] }), 1), /empty response/);
    assert.throws(() => buildDatum(sample(), Number.POSITIVE_INFINITY), /not finite/);
  });
});

describe('OPD', () => {
  test('the KL term is +0.2 for a −0.5 student logprob against a −0.3 teacher (coef 1)', () => {
    const [term] = klPenaltyTerms([-0.5], [-0.3], 1);
    close(term, 0.2, 1e-12);
  });

  test('the KL term is folded into the response advantages, scaled by opd.kl_penalty_coef', () => {
    const datum = buildDatum(sample({ teacherLogprobs: [-0.3, -1.25] }), 1, { klPenaltyCoef: 0.5 });
    close(datum.advantages[2], 1.1, 1e-12);
    close(datum.advantages[3], 1, 1e-12);
    assert.deepEqual(datum.advantages.slice(0, 2), [0, 0]);
    assert.throws(() => klPenaltyTerms([-0.5, -1], [-0.3], 1), /not aligned/);
  });
});

describe('training against the learning double', () => {
  let double: TinkerDouble;
  let backend: TinkerBackend;
  let modelId: string;
  before(async () => {
    double = await TinkerDouble.start({ vocabSize: 24 });
  });
  after(async () => {
    await double.close();
  });

  async function openBackend(): Promise<PolicySampler> {
    backend = new TinkerBackend({ kind: 'tinker', baseUrl: double.url, apiKey: double.apiKey, retry: { initialDelayMs: 5, maxDelayMs: 20 } });
    await backend.open({ baseModel: MODEL, loraRank: 8 });
    modelId = double.modelIds().at(-1)!;
    return backend.saveForSampler('step-0');
  }

  async function sampled(sampler: PolicySampler, prompt: number[], reward: JudgeScore, seed: number): Promise<RlSample> {
    const sequence = await sampler.sample(prompt, { maxTokens: 4, temperature: 1, seed });
    return sample({
      turnId: `t${seed}`,
      promptTokens: prompt,
      responseTokens: sequence.tokens,
      responseLogprobs: sequence.logprobs,
      reward,
      policyVersion: sampler.version,
    });
  }

  const sum = (values: number[]): number => values.reduce((total, value) => total + value, 0);

  test('at step 0 the sampler’s logprobs equal the double’s forward pass (importance ratio 1)', async () => {
    const sampler = await openBackend();
    const sequence = await sampler.sample([3, 4], { maxTokens: 6, temperature: 1, seed: 11 });
    const forward = double.responseLogprobs(modelId, [3, 4], sequence.tokens);
    sequence.logprobs.forEach((logprob, index) => close(logprob, forward[index]!, 1e-9));
    await backend.close();
  });

  for (const lossFn of ['importance_sampling', 'ppo', 'cispo'] as LossFunction[]) {
    test(`${lossFn}: after a step, a sampled response with positive advantage gains logprob and one with negative advantage loses it`, async () => {
      const sampler = await openBackend();
      const good = await sampled(sampler, [1, 2], 1, 21);
      const bad = await sampled(sampler, [13, 14], -1, 22);
      const result = await trainStep([good, bad], backend, { lossFn, adam: { learningRate: 0.05 }, samplerName: `${lossFn}-1` });
      assert.ok(result.trained, 'the batch was trained');
      assert.equal(result.batch.trained, 2);
      assert.ok(Number.isFinite(result.metrics.loss), 'the loss was read back');
      assert.equal(result.metrics.metrics['loss:sum'], result.metrics.loss);
      assert.equal(result.metrics.metrics['batch:trained'], 2);
      assert.equal(result.samplerPath, result.sampler.version);
      const goodAfter = sum(double.responseLogprobs(result.sampler.version, good.promptTokens, good.responseTokens));
      const badAfter = sum(double.responseLogprobs(result.sampler.version, bad.promptTokens, bad.responseTokens));
      assert.ok(goodAfter > sum(good.responseLogprobs), `positive advantage: ${sum(good.responseLogprobs)} → ${goodAfter}`);
      assert.ok(badAfter < sum(bad.responseLogprobs), `negative advantage: ${sum(bad.responseLogprobs)} → ${badAfter}`);
      await backend.close();
    });
  }

  test('cross_entropy: training on a response with weight 1 raises its logprob', async () => {
    await openBackend();
    const response = [7, 8, 9];
    const before = sum(double.responseLogprobs(modelId, [1, 2], response));
    const datum = buildDatum(sample({ promptTokens: [1, 2], responseTokens: response, responseLogprobs: [-1, -1, -1] }), 1);
    const result = await backend.forwardBackward([datum], 'cross_entropy');
    close(result.loss, -before, 1e-9);
    await backend.optimStep({ learningRate: 0.05 });
    assert.ok(sum(double.responseLogprobs(modelId, [1, 2], response)) > before);
    await backend.close();
  });

  test('hot swap: a sampler obtained before a step keeps the old weights, also while the step runs, and the new one differs', async () => {
    const oldSampler = await openBackend();
    const params = { maxTokens: 5, temperature: 1, seed: 99 };
    const before = await oldSampler.sample([5, 6], params);
    const good = await sampled(oldSampler, [5, 6], 1, 31);
    const bad = await sampled(oldSampler, [6, 5], -1, 32);
    const [step, ...during] = await Promise.all([
      trainStep([good, bad], backend, { lossFn: 'importance_sampling', adam: { learningRate: 0.2 }, samplerName: 'swap-1' }),
      oldSampler.sample([5, 6], params),
      oldSampler.sample([5, 6], params),
    ]);
    const after = await oldSampler.sample([5, 6], params);
    for (const sequence of [...during, after]) assert.deepEqual(sequence, before, 'the old sampler answers exactly as before the step');
    assert.ok(step.trained);
    const newSampler = step.sampler;
    assert.notEqual(newSampler.version, oldSampler.version);
    const fromNew = await newSampler.sample([5, 6], params);
    const newLogprobsOfOldTokens = double.responseLogprobs(newSampler.version, [5, 6], before.tokens);
    assert.notDeepEqual(newLogprobsOfOldTokens, before.logprobs, 'the new weights differ');
    assert.ok(fromNew.tokens.length > 0);
    await backend.close();
  });

  test('a step with no reward spread trains nothing, keeps the old sampler, and sends nothing to the backend', async () => {
    await openBackend();
    const calls = double.calls.length;
    const result = await trainStep([sample({ reward: 1 }), sample({ reward: 1 }), sample({ reward: null })], backend, {
      lossFn: 'importance_sampling',
      adam: { learningRate: 0.05 },
      samplerName: 'none',
    });
    assert.ok(!result.trained);
    assert.match(result.reason, /rewards do not differ/);
    assert.equal(result.batch.trained, 0);
    assert.equal(result.batch.skipped, 3);
    assert.equal(double.calls.length, calls);
    await backend.close();
  });

  test('a step aborted before forward-backward is abandoned without touching the weights', async () => {
    const sampler = await openBackend();
    const good = await sampled(sampler, [1, 2], 1, 41);
    const bad = await sampled(sampler, [2, 1], -1, 42);
    const weights = Float64Array.from(double.policyOf(modelId).weights);
    const controller = new AbortController();
    controller.abort(new Error('the window closed'));
    await assert.rejects(
      trainStep([good, bad], backend, { lossFn: 'importance_sampling', adam: { learningRate: 0.05 }, samplerName: 'aborted', signal: controller.signal }),
      /the window closed/,
    );
    assert.deepEqual(Float64Array.from(double.policyOf(modelId).weights), weights);
    await backend.close();
  });

  test('save_state / load_state round-trips weights and optimizer state, and open({resumeFrom}) resumes from it', async () => {
    await openBackend();
    const datum = buildDatum(sample({ promptTokens: [1, 2], responseTokens: [3, 4], responseLogprobs: double.responseLogprobs(modelId, [1, 2], [3, 4]) }), 1);
    const step = async (): Promise<void> => {
      await backend.forwardBackward([datum], 'importance_sampling');
      await backend.optimStep({ learningRate: 0.05 });
    };
    await step();
    const path = await backend.saveState('ckpt-1');
    assert.match(path, /^tinker:\/\/.+\/weights\/ckpt-1$/);
    const saved = Float64Array.from(double.policyOf(modelId).weights);
    await step();
    const afterOneMore = Float64Array.from(double.policyOf(modelId).weights);
    assert.notDeepEqual(afterOneMore, saved);
    await backend.loadState(path);
    assert.deepEqual(Float64Array.from(double.policyOf(modelId).weights), saved, 'weights restored');
    await step();
    assert.deepEqual(
      Float64Array.from(double.policyOf(modelId).weights),
      afterOneMore,
      'optimizer state restored too: the same step lands on the same weights',
    );
    await backend.close();

    const resumed = new TinkerBackend({ kind: 'tinker', baseUrl: double.url, apiKey: double.apiKey });
    await resumed.open({ baseModel: MODEL, loraRank: 8, resumeFrom: path });
    assert.deepEqual(Float64Array.from(double.policyOf(double.modelIds().at(-1)!).weights), saved);
    await resumed.close();
  });
});
