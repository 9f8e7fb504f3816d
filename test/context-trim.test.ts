import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startProxy, type ProxyHandle } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

/** About 100 tokens by the proxy's estimate (3.6 characters a token). */
const turn = (label: string) => `${label}: ${'lorem ipsum dolor sit amet '.repeat(13)}`;

const system = { role: 'system' as const, content: 'You are terse.' };
const history: OpenAI.ChatCompletionMessageParam[] = [
  system,
  { role: 'user', content: turn('u1') },
  { role: 'assistant', content: turn('a1') },
  { role: 'user', content: turn('u2') },
  { role: 'assistant', content: turn('a2') },
  { role: 'user', content: turn('u3') },
  { role: 'assistant', content: turn('a3') },
  { role: 'user', content: turn('u4') },
];

describe('max_context_tokens trims the oldest messages so the prompt fits', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let openai: OpenAI;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    proxy = await startProxy({
      config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, max_context_tokens: 400, skills: { enabled: false }, memory: { enabled: false } },
    });
    openai = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  const forwarded = () => upstream.modelRequests().at(-1)!.body.messages as Array<{ role: string; content: unknown }>;

  test('a conversation over the limit reaches the upstream without its oldest exchanges; the system prompt and the newest turns stay, and it starts at a user message', async () => {
    await openai.chat.completions.create({ model: 'm', messages: history });
    assert.deepEqual(forwarded(), [system, history[5], history[6], history[7]]);
  });

  test("the request's max_tokens is room the answer needs: the prompt is trimmed further to leave it", async () => {
    await openai.chat.completions.create({ model: 'm', max_tokens: 200, messages: history });
    assert.deepEqual(forwarded(), [system, history[7]]);
  });

  test('a request under the limit reaches the upstream untouched', async () => {
    const short = history.slice(0, 4);
    await openai.chat.completions.create({ model: 'm', messages: short });
    assert.deepEqual(forwarded(), short);
    const status = (await (await fetch(`${proxy.url}/status`)).json()) as { context: { trimmed: number } };
    assert.equal(status.context.trimmed, 2, '/status counts the trimmed requests');
  });

  test('an Anthropic conversation is never cut between a tool call and its result', async () => {
    const anthropic = new Anthropic({ baseURL: proxy.url, apiKey: 'x', maxRetries: 0 });
    const messages: Anthropic.MessageParam[] = [
      { role: 'user', content: turn('look up the weather') },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris', note: 'dolor sit amet '.repeat(80) } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: turn('sunny') }] },
      { role: 'assistant', content: 'It is sunny in Paris.' },
      { role: 'user', content: 'And tomorrow?' },
    ];
    await anthropic.messages.create({ model: 'm', max_tokens: 50, system: 'Be brief.', messages });
    // The tool result and the answer after it would fit, but not the call they belong to: the cut
    // falls before the newest user message that starts an exchange.
    assert.deepEqual(forwarded(), [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'And tomorrow?' },
    ]);
  });
});
