/**
 * RL rows of `npm run bench`: what recording samples adds to a request (rl.enabled next to plain
 * skills_only, same run), how fast the judge drains a backlog in the running proxy, how fast a GRPO
 * step goes through the Tinker client against the local learning double, and what the sample
 * buffer costs per 1,000 samples.
 */
import { mkdirSync, statSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { RlBuffer } from '../src/rl/buffer/store.js';
import { TinkerBackend } from '../src/rl/tinker/index.js';
import { trainStep } from '../src/rl/train/index.js';
import type { JudgeScore, RlSample } from '../src/rl/types.js';
import { openDatabase } from '../src/store/index.js';
import { TinkerDouble } from '../test/support/tinker-double.js';
import type { ExtraScenarioResult, ScenarioContext } from './scenarios.js';

export async function rlScenario(context: ScenarioContext): Promise<ExtraScenarioResult> {
  const judge = await startJudge();
  try {
    const recording = await recordingLatency(context, judge.url);
    const training = await trainingThroughput(context);
    const buffer = bufferCost(context);
    const lines = [
      '| compared | baseline p50 / p99 | with RL recording p50 / p99 | added p50 / p99 | p50 ratio |',
      '|---|---|---|---|---|',
      `| skills_only vs skills_only + \`rl.enabled\` (a sample and a judge job per turn) | ${recording.pair.direct.p50.toFixed(3)} / ${recording.pair.direct.p99.toFixed(3)} | ${recording.pair.proxy.p50.toFixed(3)} / ${recording.pair.proxy.p99.toFixed(3)} | **${recording.pair.added.p50.toFixed(3)}** / ${recording.pair.added.p99.toFixed(3)} | ${(recording.pair.proxy.p50 / recording.pair.direct.p50).toFixed(2)} |`,
      `| direct upstream vs skills_only (same run) | ${recording.direct.direct.p50.toFixed(3)} / ${recording.direct.direct.p99.toFixed(3)} | ${recording.direct.proxy.p50.toFixed(3)} / ${recording.direct.proxy.p99.toFixed(3)} | ${recording.direct.added.p50.toFixed(3)} / ${recording.direct.added.p99.toFixed(3)} | ${(recording.direct.proxy.p50 / recording.direct.direct.p50).toFixed(2)} |`,
      '',
      '| throughput | |',
      '|---|---|',
      `| judge, in the running proxy (3 votes per sample, a judge answering at once) | ${recording.judge.perSecond.toFixed(1)} samples/s (${recording.judge.samples} judged in ${(recording.judge.ms / 1000).toFixed(1)} s) |`,
      ...training.map(
        (row) =>
          `| GRPO step against the local double, batch ${row.batch} (${row.promptTokens} + ${row.responseTokens} tokens each) | ${row.msPerStep.toFixed(1)} ms per step, ${row.samplesPerSecond.toFixed(0)} samples/s |`,
      ),
      '',
      '| sample buffer per 1,000 samples | on disk | heap to load them for training |',
      '|---|---|---|',
      `| served by the policy (${buffer.promptTokens} + ${buffer.responseTokens} token ids and logprobs each) | ${buffer.withTokensMb.toFixed(2)} MB | ${buffer.heapMb.toFixed(1)} MB |`,
      `| served by the normal upstream (text stays in the turn record) | ${buffer.textOnlyMb.toFixed(3)} MB | - |`,
      '',
      'The judge and training run from the learning queue, off the request path; the step row measures the TypeScript client, the JSON wire and the double (a bigram table, not a model), so a real backend is slower by its own compute.',
    ];
    return { title: 'RL: recording, judge, training step, sample buffer', lines, data: { recording, training, buffer } };
  } finally {
    judge.server.close();
  }
}

/** A judge endpoint that answers every vote at once with a score. */
async function startJudge(): Promise<{ url: string; server: http.Server }> {
  let votes = 0;
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      votes += 1;
      const body = JSON.stringify({
        id: 'judge',
        object: 'chat.completion',
        created: 0,
        model: 'judge',
        choices: [{ index: 0, message: { role: 'assistant', content: `Helpful. Score: ${votes % 3 === 0 ? -1 : 1}` }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 200, completion_tokens: 5, total_tokens: 205 },
      });
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      response.end(body);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server };
}

async function recordingLatency(context: ScenarioContext, judgeUrl: string) {
  context.log('RL: added latency of recording samples, next to skills_only');
  const base = { skills: { enabled: false }, memory: { enabled: false } };
  const off = await context.startProxy('rl-off', context.upstream, base);
  const on = await context.startProxy('rl-on', context.upstream, {
    ...base,
    rl: { enabled: true, prm_url: judgeUrl, prm_api_key: 'sk-judge', prm_model: 'judge', prm_m: 3 },
  });
  const body = context.small;
  const count = Math.round(200 * context.scale);
  const url = (proxy: string) => `${proxy}/v1/chat/completions`;
  // Both proxies are new: V8 compiles their hot paths over the first thousands of requests.
  for (const proxy of [off.url, on.url]) await context.sequential(url(proxy), body, Math.round(2_000 * context.scale), context.agent);
  const pair = await context.interleaved((target) => context.sequential(target, body, count, context.agent), off.url, on.url, 12);
  const direct = await context.interleaved((target) => context.sequential(target, body, count, context.agent), context.upstream, off.url, 4);

  context.log('RL: judge throughput (a backlog of samples drained by the running proxy)');
  const before = await judged(on.url);
  const burst = Math.round(600 * context.scale);
  await Promise.all(Array.from({ length: 8 }, () => context.sequential(url(on.url), body, Math.ceil(burst / 8), context.agent)));
  const started = performance.now();
  const backlog = (await judged(on.url)).queued;
  let now = await judged(on.url);
  while (now.queued > 0 && performance.now() - started < 180_000) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    now = await judged(on.url);
  }
  const ms = performance.now() - started;
  const samples = now.scored - before.scored;
  return { pair, direct, judge: { samples, backlog, ms: Math.round(ms), perSecond: (backlog / ms) * 1000 } };
}

async function judged(url: string): Promise<{ queued: number; scored: number }> {
  const status = (await (await fetch(`${url}/status`)).json()) as {
    rl: { buffer: { by_state: { queued: number; scored: number; tie: number; failed: number } } };
  };
  const state = status.rl.buffer.by_state;
  return { queued: state.queued, scored: state.scored + state.tie + state.failed };
}

const VOCAB = 100;

function syntheticSample(index: number, promptTokens: number, responseTokens: number, reward: JudgeScore): RlSample {
  const token = (position: number) => (index * 31 + position * 7) % VOCAB;
  return {
    turnId: `t-${index}`,
    sessionId: `s-${index % 10}`,
    skillGeneration: 0,
    policyVersion: 'bench',
    promptTokens: Array.from({ length: promptTokens }, (_, position) => token(position)),
    responseTokens: Array.from({ length: responseTokens }, (_, position) => token(position + promptTokens)),
    responseLogprobs: Array.from({ length: responseTokens }, () => -Math.log(VOCAB)),
    reward,
    createdAt: index,
  };
}

async function trainingThroughput(context: ScenarioContext) {
  context.log('RL: GRPO steps against the local Tinker double');
  const double = await TinkerDouble.start({ vocabSize: VOCAB, supportedModels: ['bench/tiny'] });
  const backend = new TinkerBackend({ kind: 'tinker', apiKey: double.apiKey, baseUrl: double.url });
  const rows: Array<{ batch: number; promptTokens: number; responseTokens: number; msPerStep: number; samplesPerSecond: number }> = [];
  try {
    await backend.open({ baseModel: 'bench/tiny', loraRank: 8 });
    const promptTokens = 1_024;
    const responseTokens = 256;
    let step = 0;
    for (const batch of [4, 16]) {
      const samples = Array.from({ length: batch }, (_, index) => syntheticSample(index, promptTokens, responseTokens, index % 2 === 0 ? 1 : -1));
      const steps = Math.max(2, Math.round(8 * context.scale));
      await trainStep(samples, backend, { lossFn: 'importance_sampling', adam: { learningRate: 1e-3 }, samplerName: `warm-${batch}` });
      const started = performance.now();
      for (let count = 0; count < steps; count += 1) {
        step += 1;
        await trainStep(samples, backend, { lossFn: 'importance_sampling', adam: { learningRate: 1e-3 }, samplerName: `step-${step}` });
      }
      const msPerStep = (performance.now() - started) / steps;
      rows.push({ batch, promptTokens, responseTokens, msPerStep, samplesPerSecond: (batch / msPerStep) * 1000 });
    }
  } finally {
    await backend.close();
    await double.close();
  }
  return rows;
}

function bufferCost(context: ScenarioContext) {
  context.log('RL: the sample buffer per 1,000 samples');
  const folder = join(context.home, 'rl-buffer');
  mkdirSync(folder, { recursive: true });
  const promptTokens = 2_000;
  const responseTokens = 300;
  const measure = (withTokens: boolean) => {
    const path = join(folder, `${withTokens ? 'tokens' : 'text'}.db`);
    const db = openDatabase(path);
    const buffer = new RlBuffer(db);
    const sizeOf = () => {
      db.pragma('wal_checkpoint(TRUNCATE)');
      return statSync(path).size;
    };
    const empty = sizeOf();
    db.transaction(() => {
      for (let index = 0; index < 1_000; index += 1) {
        const sample = syntheticSample(index, promptTokens, responseTokens, 1);
        buffer.record({
          turnId: sample.turnId,
          sessionId: sample.sessionId,
          seq: index,
          skillGeneration: 0,
          createdAt: index,
          ...(withTokens
            ? {
                policy: {
                  turnId: sample.turnId,
                  sessionId: sample.sessionId,
                  promptTokens: sample.promptTokens,
                  response: { tokens: sample.responseTokens, logprobs: sample.responseLogprobs, stopReason: 'stop' },
                  policyVersion: 'bench',
                  trainable: true,
                },
              }
            : {}),
        });
        buffer.saveVerdict(sample.turnId, { state: 'scored', reward: 1, votes: [1, 1, 1], model: 'judge', error: null });
      }
    })();
    const bytes = sizeOf() - empty;
    let heap = 0;
    if (withTokens) {
      collectGarbage();
      const heapBefore = process.memoryUsage().heapUsed;
      const loaded = buffer.trainable(0, 1_000);
      collectGarbage();
      heap = process.memoryUsage().heapUsed - heapBefore;
      if (loaded.length !== 1_000) throw new Error(`expected 1,000 trainable samples, got ${loaded.length}`);
    }
    db.close();
    return { bytes, heap };
  };
  const tokens = measure(true);
  const text = measure(false);
  return { promptTokens, responseTokens, withTokensMb: tokens.bytes / 2 ** 20, textOnlyMb: text.bytes / 2 ** 20, heapMb: tokens.heap / 2 ** 20 };
}

/** A full collection, so a heap reading counts what is kept, not garbage (the bench runs without --expose-gc). */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}
