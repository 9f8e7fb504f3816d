import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { silentLogger } from '../src/logging/index.js';
import { RlBuffer } from '../src/rl/buffer/store.js';
import { ServedPolicy, TrainingLoop, TrainingSteps, type SteppingWindow } from '../src/rl/loop/index.js';
import { TinkerBackend } from '../src/rl/tinker/index.js';
import { trainStep } from '../src/rl/train/index.js';
import type { JudgeScore, PolicySampler } from '../src/rl/types.js';
import { openDatabase, StateStore, type Db } from '../src/store/index.js';
import { TinkerDouble } from './support/tinker-double.js';

/**
 * The training loop over the real pieces: the SQLite sample buffer, the Tinker client against the
 * strict learning double, trainStep, the steps table and the served policy.
 */
describe('the RL training loop', () => {
  let double: TinkerDouble;
  let folder: string;
  let db: Db;
  let backend: TinkerBackend;
  let buffer: RlBuffer;
  let first: PolicySampler;

  before(async () => {
    double = await TinkerDouble.start({ vocabSize: 24 });
  });
  after(async () => {
    await double.close();
  });

  beforeEach(async () => {
    folder = mkdtempSync(join(tmpdir(), 'rl-loop-'));
    db = openDatabase(join(folder, 'metaclaw.db'));
    buffer = new RlBuffer(db);
    backend = new TinkerBackend({ kind: 'tinker', baseUrl: double.url, apiKey: double.apiKey, retry: { initialDelayMs: 5, maxDelayMs: 20 } });
    await backend.open({ baseModel: 'tiny/bigram', loraRank: 8 });
    first = await backend.saveForSampler('step-0');
  });

  /** Samples really drawn from the policy, judged with these rewards. */
  async function judgedSamples(rewards: JudgeScore[]): Promise<void> {
    for (const [index, reward] of rewards.entries()) {
      const turnId = `turn-${index}`;
      const promptTokens = [1, 2, 3];
      const response = await first.sample(promptTokens, { maxTokens: 4, temperature: 1, seed: index + 1 });
      buffer.record({
        turnId,
        sessionId: 'session-1',
        seq: index + 1,
        skillGeneration: 0,
        policy: { turnId, sessionId: 'session-1', promptTokens, response, policyVersion: first.version, trainable: true },
        createdAt: 1_000 + index,
      });
      buffer.saveVerdict(turnId, { state: 'scored', reward, votes: [reward, reward, reward], model: 'judge', error: null });
    }
  }

  function loop(window?: SteppingWindow) {
    const steps = new TrainingSteps(db);
    const policy = new ServedPolicy(new StateStore(db), (path) => backend.samplerFor(path));
    const training = new TrainingLoop({
      backend,
      buffer: { ready: (limit) => buffer.trainable(0, limit), markTrained: (ids, step) => buffer.markTrained(ids, step) },
      steps,
      policy,
      step: (samples, stepBackend, { step, signal }) =>
        trainStep(samples, stepBackend, { lossFn: 'importance_sampling', adam: { learningRate: 0.05 }, samplerName: `step-${step}`, signal }),
      ...(window ? { window } : {}),
      batchSize: 4,
      skillGeneration: () => 0,
      logger: silentLogger(),
    });
    return { steps, policy, training };
  }

  test('a step by hand trains the judged batch, stores its loss, marks the samples trained and serves the new weights, also after a restart', async () => {
    await judgedSamples([1, -1, 1, -1]);
    const { steps, policy, training } = loop();
    assert.equal(policy.current(), undefined, 'nothing is served from the policy before the first step');
    const outcome = await training.runStep('manual');
    assert.equal(outcome.status, 'done');
    assert.ok(outcome.status === 'done' && Number.isFinite(outcome.metrics.loss));
    const [record] = steps.recent(1);
    assert.equal(record!.status, 'done');
    assert.equal(record!.samples, 4);
    assert.ok(record!.samplerPath && record!.statePath, 'sampler weights and the full state were saved');
    assert.equal(buffer.trainable(0, 10).length, 0, 'trained samples never train again');
    assert.equal(policy.current()!.version, record!.samplerPath);
    assert.notEqual(policy.current()!.version, first.version);
    // a restart serves the same weights
    const restarted = new ServedPolicy(new StateStore(db), (path) => backend.samplerFor(path));
    assert.equal(restarted.current()!.version, record!.samplerPath);
    db.close();
    rmSync(folder, { recursive: true, force: true });
  });

  test('in a window, a step waits for a full batch and for the window to be open', async () => {
    await judgedSamples([1, -1]);
    let open = false;
    const window: SteppingWindow = {
      isOpen: () => open,
      describe: () => (open ? 'open' : 'closed for the test'),
      runStep: async (_step, run) => ({ ran: true, outcome: 'done', value: await run(new AbortController().signal) }),
      pendingStep: () => null,
      discardPendingStep: () => false,
    };
    const { steps, training } = loop(window);
    assert.deepEqual(await training.runStep('window'), { status: 'skipped', reason: 'no window: closed for the test' });
    open = true;
    const outcome = await training.runStep('window');
    assert.equal(outcome.status, 'skipped');
    assert.match(outcome.status === 'skipped' ? outcome.reason : '', /2 of 4 judged samples/);
    assert.equal(steps.recent(10).length, 0, 'no step was opened');
    db.close();
    rmSync(folder, { recursive: true, force: true });
  });

  test('a window that closes before the step reaches the backend abandons it: the samples stay for the next window and the served policy is unchanged', async () => {
    await judgedSamples([1, -1, 1, -1]);
    const closing: SteppingWindow = {
      isOpen: () => true,
      describe: () => 'open',
      runStep: async (_step, run) => {
        const controller = new AbortController();
        controller.abort(new Error('the window closed'));
        try {
          return { ran: true, outcome: 'done', value: await run(controller.signal) };
        } catch (error) {
          return { ran: true, outcome: 'abandoned', error: (error as Error).message };
        }
      },
      pendingStep: () => null,
      discardPendingStep: () => false,
    };
    const { steps, policy, training } = loop(closing);
    const outcome = await training.runStep('window');
    assert.equal(outcome.status, 'abandoned');
    assert.equal(steps.recent(1)[0]!.status, 'abandoned');
    assert.equal(buffer.trainable(0, 10).length, 4, 'the batch waits for the next window');
    assert.equal(policy.current(), undefined);
    db.close();
    rmSync(folder, { recursive: true, force: true });
  });

  test('a batch whose rewards all agree teaches nothing: the step is empty, its samples are used up, the backend is not called', async () => {
    await judgedSamples([1, 1, 1, 1]);
    const calls = double.calls.length;
    const { steps, training } = loop();
    const outcome = await training.runStep('manual');
    assert.equal(outcome.status, 'empty');
    assert.equal(steps.recent(1)[0]!.status, 'empty');
    assert.equal(buffer.trainable(0, 10).length, 0);
    assert.equal(double.calls.length, calls, 'no forward-backward for a batch without signal');
    db.close();
    rmSync(folder, { recursive: true, force: true });
  });
});
