import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { after, before, describe, test } from 'node:test';
import { RlBackendError } from '../src/errors.js';
import { TinkerBackend, USER_AGENT, WIRE_SDK_VERSION } from '../src/rl/tinker/index.js';
import { TinkerTransport } from '../src/rl/tinker/transport.js';
import type { TrainingDatum } from '../src/rl/types.js';
import { TinkerDouble } from './support/tinker-double.js';

const MODEL = 'tiny/bigram';
const FAST_RETRY = { initialDelayMs: 5, maxDelayMs: 20, maxWaitMs: 3000 };

function backendFor(double: TinkerDouble, overrides: { apiKey?: string; heartbeatIntervalMs?: number } = {}): TinkerBackend {
  return new TinkerBackend({
    kind: 'tinker',
    baseUrl: double.url,
    apiKey: overrides.apiKey ?? double.apiKey,
    retry: FAST_RETRY,
    heartbeatIntervalMs: overrides.heartbeatIntervalMs ?? 10_000,
  });
}

/** One datum over a prompt [1, 2] and response [3, 4] with the sampled logprobs of the double's base policy. */
function datumFor(double: TinkerDouble, modelId: string, advantage: number): TrainingDatum {
  const logprobs = double.responseLogprobs(modelId, [1, 2], [3, 4]);
  return { modelInput: [1, 2, 3], targetTokens: [2, 3, 4], logprobs: [0, ...logprobs], advantages: [0, advantage, advantage] };
}

async function post(
  double: TinkerDouble,
  route: string,
  body: unknown,
  headers: Record<string, string> = { 'X-API-Key': double.apiKey },
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${double.url}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

async function settle(double: TinkerDouble, future: { request_id: string }): Promise<any> {
  return (await post(double, '/api/v1/retrieve_future', { request_id: future.request_id })).body;
}

describe('Tinker JSON wire client against the strict double', () => {
  let double: TinkerDouble;
  before(async () => {
    double = await TinkerDouble.start();
  });
  after(async () => {
    await double.close();
  });

  test('a training round trip sends X-API-Key, an honest User-Agent and sdk_version, and training seq ids 1, 2, 3 in order', async () => {
    const backend = backendFor(double);
    await backend.open({ baseModel: MODEL, loraRank: 8 });
    const modelId = double.modelIds().at(-1)!;
    const result = await backend.forwardBackward([datumFor(double, modelId, 1)], 'importance_sampling');
    assert.ok(Number.isFinite(result.loss), 'the loss of forward_backward is read back');
    assert.ok('loss:sum' in result.metrics);
    await backend.optimStep({ learningRate: 0.01 });
    const sampler = await backend.saveForSampler('step-1');
    assert.match(sampler.version, /^tinker:\/\/.+\/sampler_weights\/step-1$/);
    const sequence = await sampler.sample([1, 2], { maxTokens: 4, temperature: 1 });
    assert.equal(sequence.tokens.length, sequence.logprobs.length);
    await backend.close();

    const session = double.callsTo('/api/v1/create_session').at(-1)!;
    assert.equal((session.body as { sdk_version: string }).sdk_version, WIRE_SDK_VERSION);
    assert.equal(session.headers['user-agent'], USER_AGENT);
    assert.match(USER_AGENT, /^MetaClaw-TS\/\d+\.\d+\.\d+ \(Tinker JSON wire of SDK 0\.6\.0/);
    assert.ok(double.calls.every((call) => call.headers['x-api-key'] === double.apiKey));
    const training = double.calls.filter((call) => /forward_backward|optim_step|save_weights_for_sampler/.test(call.route));
    assert.deepEqual(
      training.map((call) => (call.body as { seq_id: number }).seq_id),
      [1, 2, 3],
    );
    assert.ok(training.every((call) => call.status === 200));
    const sample = double.callsTo('/api/v1/asample').at(-1)!;
    assert.equal(sample.headers['x-tinker-sampling-backpressure'], '1');
    assert.equal((sample.body as { seq_id: number }).seq_id, 0, 'a sampling session counts its own seq ids from 0');
  });

  test('a wrong API key is refused with an error that names rl.api_key, without the key the service echoed', async () => {
    const backend = backendFor(double, { apiKey: 'tml-wrong-key-0123' });
    await assert.rejects(backend.open({ baseModel: MODEL, loraRank: 8 }), (error: unknown) => {
      assert.ok(error instanceof RlBackendError);
      assert.equal(error.code, 'rl_unauthorized');
      assert.match(error.message, /rl\.api_key/);
      assert.match(error.message, /invalid API key: \[redacted\]/);
      return true;
    });
  });

  test('try_again and 408 from retrieve_future are polled through to the result', async () => {
    const backend = backendFor(double);
    await backend.open({ baseModel: MODEL, loraRank: 8 });
    const before = double.callsTo('/api/v1/retrieve_future').length;
    double.cueRetrieve('try_again', 408, 'try_again');
    await backend.optimStep({ learningRate: 0.01 });
    const polls = double.callsTo('/api/v1/retrieve_future').slice(before);
    assert.deepEqual(
      polls.map((call) => call.status),
      [200, 408, 200, 200],
    );
    await backend.close();
  });

  test('MinT speaks the same wire with its own key, and waits 300 ms after a 408 where Tinker polls again at once', async () => {
    const waits: Record<string, number[]> = { mint: [], tinker: [] };
    for (const kind of ['mint', 'tinker'] as const) {
      const sleep = (ms: number): Promise<void> => {
        waits[kind]!.push(ms);
        return Promise.resolve();
      };
      const backend = new TinkerBackend({ kind, baseUrl: double.url, apiKey: double.apiKey, retry: FAST_RETRY, sleep });
      assert.equal(backend.kind, kind);
      await backend.open({ baseModel: MODEL, loraRank: 8 });
      double.cueRetrieve(408);
      await backend.optimStep({ learningRate: 0.01 });
      await backend.close();
    }
    assert.deepEqual(waits.mint, [300]);
    assert.deepEqual(waits.tinker, []);
  });

  test('429 and 5xx on retrieve_future are retried with backoff', async () => {
    const backend = backendFor(double);
    await backend.open({ baseModel: MODEL, loraRank: 8 });
    const before = double.callsTo('/api/v1/retrieve_future').length;
    double.cueRetrieve(429, 500, 503);
    await backend.optimStep({ learningRate: 0.01 });
    assert.deepEqual(
      double
        .callsTo('/api/v1/retrieve_future')
        .slice(before)
        .map((call) => call.status),
      [429, 500, 503, 200],
    );
    await backend.close();
  });

  test('429 and 500 on submission are retried and the request runs once', async () => {
    const backend = backendFor(double);
    await backend.open({ baseModel: MODEL, loraRank: 8 });
    double.cueSubmit('/api/v1/optim_step', 429, 500, 408);
    await backend.optimStep({ learningRate: 0.01 });
    const calls = double.callsTo('/api/v1/optim_step').slice(-4);
    assert.deepEqual(
      calls.map((call) => call.status),
      [429, 500, 408, 200],
    );
    assert.deepEqual(
      calls.map((call) => (call.body as { seq_id: number }).seq_id),
      [1, 1, 1, 1],
    );
    await backend.close();
  });

  test('backoff grows exponentially, is capped, and is jittered within ±25%', () => {
    const low = new TinkerTransport({ kind: 'tinker', baseUrl: double.url, apiKey: 'k', random: () => 0 });
    const high = new TinkerTransport({ kind: 'tinker', baseUrl: double.url, apiKey: 'k', random: () => 0.999999 });
    assert.equal(low.backoffMs(0), 750);
    assert.equal(low.backoffMs(2), 3000);
    assert.ok(Math.abs(high.backoffMs(1) - 2500) < 0.01);
    assert.equal(low.backoffMs(10), 22_500, 'capped at 30 s before jitter');
  });

  test('a 410 on a training future resubmits the same request with the same seq id, and it is applied exactly once', async () => {
    const reference = await TinkerDouble.start();
    try {
      const runStep = async (target: TinkerDouble, cue: boolean): Promise<Float64Array> => {
        const backend = backendFor(target);
        await backend.open({ baseModel: MODEL, loraRank: 8 });
        const modelId = target.modelIds().at(-1)!;
        await backend.forwardBackward([datumFor(target, modelId, 1)], 'importance_sampling');
        if (cue) target.cueRetrieve(410);
        await backend.optimStep({ learningRate: 0.05 });
        await backend.close();
        return Float64Array.from(target.policyOf(modelId).weights);
      };
      const withExpiry = await runStep(double, true);
      const without = await runStep(reference, false);
      assert.deepEqual(withExpiry, without, 'the resubmitted optim_step ran once: same weights as a run without the 410');
      const optimCalls = double.callsTo('/api/v1/optim_step').slice(-2);
      assert.deepEqual(
        optimCalls.map((call) => (call.body as { seq_id: number }).seq_id),
        [2, 2],
      );
      assert.ok(double.callsTo('/api/v1/retrieve_future').some((call) => call.status === 410));
    } finally {
      await reference.close();
    }
  });

  test('a 410 on a sample resubmits it with the next sampling seq id', async () => {
    const backend = backendFor(double);
    await backend.open({ baseModel: MODEL, loraRank: 8 });
    const sampler = await backend.saveForSampler('s410');
    double.cueRetrieve(410);
    const sequence = await sampler.sample([1, 2], { maxTokens: 3, temperature: 1 });
    assert.ok(sequence.tokens.length > 0);
    assert.deepEqual(
      double
        .callsTo('/api/v1/asample')
        .slice(-2)
        .map((call) => (call.body as { seq_id: number }).seq_id),
      [0, 1],
    );
    await backend.close();
  });

  test('a failed future surfaces the service error category as a clear error (user and server)', async () => {
    const backend = backendFor(double);
    await backend.open({ baseModel: MODEL, loraRank: 8 });
    double.cueRetrieve({ error: 'learning rate too large', category: 'user' });
    await assert.rejects(backend.optimStep({ learningRate: 0.01 }), (error: unknown) => {
      assert.ok(error instanceof RlBackendError);
      assert.equal(error.category, 'user');
      assert.equal(error.code, 'rl_request_failed_user');
      assert.match(error.message, /Tinker failed \/api\/v1\/optim_step \(a user error: check the request\): learning rate too large/);
      return true;
    });
    double.cueRetrieve({ error: 'worker crashed', category: 'server' });
    await assert.rejects(
      backend.optimStep({ learningRate: 0.01 }),
      (error: unknown) => error instanceof RlBackendError && error.category === 'server' && /server error/.test(error.message),
    );
    // the failed requests used their seq ids; the next one follows on
    await backend.optimStep({ learningRate: 0.01 });
    await backend.close();
  });

  test('a request the service refused outright does not use up its seq id', async () => {
    const backend = backendFor(double);
    await backend.open({ baseModel: MODEL, loraRank: 8 });
    double.cueSubmit('/api/v1/optim_step', 400);
    await assert.rejects(backend.optimStep({ learningRate: 0.01 }), (error: unknown) => error instanceof RlBackendError && error.status === 400);
    await backend.optimStep({ learningRate: 0.01 });
    assert.deepEqual(
      double
        .callsTo('/api/v1/optim_step')
        .slice(-2)
        .map((call) => [(call.body as { seq_id: number }).seq_id, call.status]),
      [
        [1, 400],
        [1, 200],
      ],
    );
    await backend.close();
  });

  test('an unsupported base model fails create_model with the service message', async () => {
    const backend = backendFor(double);
    await assert.rejects(backend.open({ baseModel: 'no/such-model', loraRank: 8 }), /base model no\/such-model is not supported/);
  });

  test('sampling before the backend is open says so', async () => {
    const backend = backendFor(double);
    await assert.rejects(backend.samplerFor('tinker://x/sampler_weights/y').sample([1], { maxTokens: 1, temperature: 1 }), /not open/);
  });
});

describe('the double is strict about the wire (fixtures written from the SDK 0.6 types)', () => {
  let double: TinkerDouble;
  let modelId: string;
  let sessionId: string;
  before(async () => {
    double = await TinkerDouble.start();
    sessionId = (await post(double, '/api/v1/create_session', { tags: [], user_metadata: {}, sdk_version: '0.6.0' })).body.session_id;
    const future = (await post(double, '/api/v1/create_model', { session_id: sessionId, model_seq_id: 0, base_model: MODEL, lora_config: { rank: 4 } })).body;
    modelId = (await settle(double, future)).model_id;
  });
  after(async () => {
    await double.close();
  });

  const datum = (overrides: Record<string, unknown> = {}): unknown => ({
    model_input: { chunks: [{ tokens: [1, 2, 3], type: 'encoded_text' }] },
    loss_fn_inputs: {
      target_tokens: { data: [2, 3, 4], dtype: 'int64', shape: [3] },
      logprobs: { data: [0, -1, -1], dtype: 'float32', shape: [3] },
      advantages: { data: [0, 1, 1], dtype: 'float32', shape: [3] },
      ...overrides,
    },
  });
  const forwardBackward = (data: unknown[], seqId: number, extra: Record<string, unknown> = {}): Promise<{ status: number; body: any }> =>
    post(double, '/api/v1/forward_backward', { forward_backward_input: { data, loss_fn: 'importance_sampling' }, model_id: modelId, seq_id: seqId, ...extra });

  test('a request without X-API-Key is refused with 401', async () => {
    const answer = await post(double, '/api/v1/create_session', { tags: [], user_metadata: {}, sdk_version: '0.6.0' }, {});
    assert.equal(answer.status, 401);
    assert.match(answer.body.detail, /missing X-API-Key/);
  });

  test('unknown fields are refused, at the top level and in a datum', async () => {
    assert.equal((await forwardBackward([datum()], 1, { type: 'forward_backward' })).status, 400, 'ForwardBackwardRequest has no type field in SDK 0.6');
    const masked = await forwardBackward([datum({ mask: { data: [0, 1, 1], dtype: 'float32', shape: [3] } })], 1);
    assert.equal(masked.status, 400);
    assert.match(masked.body.detail, /unknown loss_fn_inputs key "mask"/);
  });

  test('ragged lengths and wrong dtypes are refused', async () => {
    const ragged = await forwardBackward([datum({ advantages: { data: [0, 1], dtype: 'float32', shape: [2] } })], 1);
    assert.equal(ragged.status, 400);
    assert.match(ragged.body.detail, /does not match model_input length 3/);
    const wrongType = await forwardBackward([datum({ target_tokens: { data: [2, 3, 4], dtype: 'float32', shape: [3] } })], 1);
    assert.equal(wrongType.status, 400);
    assert.match(wrongType.body.detail, /dtype float32, expected int64/);
  });

  test('training seq ids must be exactly the next one: out of order and duplicates are refused', async () => {
    assert.match((await forwardBackward([datum()], 2)).body.detail, /out of order/);
    const first = await forwardBackward([datum()], 1);
    assert.equal(first.status, 200);
    await settle(double, first.body);
    assert.match((await forwardBackward([datum()], 1)).body.detail, /duplicate seq_id 1/);
  });

  test('a duplicate sampling seq id is refused', async () => {
    const saved = await settle(double, (await post(double, '/api/v1/save_weights_for_sampler', { model_id: modelId, path: 'dup', seq_id: 2 })).body);
    const samplingSessionId = (
      await post(double, '/api/v1/create_sampling_session', { session_id: sessionId, sampling_session_seq_id: 0, model_path: saved.path })
    ).body.sampling_session_id;
    const request = {
      sampling_session_id: samplingSessionId,
      seq_id: 0,
      num_samples: 1,
      prompt: { chunks: [{ tokens: [1], type: 'encoded_text' }] },
      sampling_params: { max_tokens: 2, temperature: 1 },
    };
    assert.equal((await post(double, '/api/v1/asample', request)).status, 200);
    assert.match((await post(double, '/api/v1/asample', request)).body.detail, /duplicate seq_id 0/);
  });
});

describe('sessions and heartbeats', () => {
  test('a session without heartbeats is refused once the timeout passes, while the client heartbeat keeps its own alive', async () => {
    const double = await TinkerDouble.start({ heartbeatTimeoutMs: 250 });
    try {
      const silent = (await post(double, '/api/v1/create_session', { tags: [], user_metadata: null, sdk_version: '0.6.0' })).body.session_id;
      const backend = backendFor(double, { heartbeatIntervalMs: 50 });
      await backend.open({ baseModel: MODEL, loraRank: 4 });
      await new Promise((resolve) => setTimeout(resolve, 600));
      const refused = await post(double, '/api/v1/create_model', { session_id: silent, model_seq_id: 0, base_model: MODEL });
      assert.equal(refused.status, 400);
      assert.match(refused.body.detail, /expired: no heartbeat/);
      await backend.optimStep({ learningRate: 0.01 });
      assert.ok(double.callsTo('/api/v1/session_heartbeat').length >= 5, 'the client beat every 50 ms');
      await backend.close();
      const beats = double.callsTo('/api/v1/session_heartbeat').length;
      await new Promise((resolve) => setTimeout(resolve, 150));
      assert.equal(double.callsTo('/api/v1/session_heartbeat').length, beats, 'close() stops the heartbeat');
    } finally {
      await double.close();
    }
  });
});

describe('opening a session against a service that never answers', () => {
  test('gives up within its patience even while garbage is collected (AbortSignal.any with a timeout can be collected before it fires on Node 20)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    // Accepts the request and never answers it.
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const transport = new TinkerTransport({ kind: 'tinker', baseUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, apiKey: 'k' });
    const collecting = setInterval(gc, 20);
    try {
      const started = Date.now();
      const opening = transport.post('/api/v1/create_session', {}, { signal: new AbortController().signal, patienceMs: 500 });
      const outcome = await Promise.race([
        opening.then(
          () => 'answered',
          (error: Error) => error.message,
        ),
        sleep(5_000).then(() => 'still waiting after 5 s'),
      ]);
      assert.match(outcome, /unreachable at .* \(\/api\/v1\/create_session\): no answer within 1 s/);
      assert.ok(Date.now() - started < 2_000, `it gave up at its patience (${Date.now() - started} ms)`);
    } finally {
      clearInterval(collecting);
      silent.closeAllConnections();
      silent.close();
    }
  });
});
