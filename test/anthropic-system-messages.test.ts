import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { clientFixture, sendAnthropic } from './support/clients.js';
import { recordedTurn, startProxy, type ProxyHandle } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

describe('an Anthropic client talking to an Anthropic upstream', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let anthropic: Anthropic;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    proxy = await startProxy({ config: { llm: { api_base: upstream.url, api_format: 'anthropic', api_key: 'k' }, skills: { enabled: false } } });
    anthropic = new Anthropic({ baseURL: proxy.url, apiKey: 'x', maxRetries: 0 });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });

  test('Claude Code: a mid-conversation system message passes to an Anthropic upstream as sent, and is not the user request', async () => {
    const request = clientFixture('claude-code-mid-conversation-system');
    const turn = await recordedTurn(proxy.url, await sendAnthropic(anthropic, request));
    assert.equal(turn.outcome.result, 'ok');
    assert.equal(turn.received.user_request, 'list the files in src');
    assert.deepEqual(upstream.modelRequests().at(-1)!.body.messages, request.body.messages);
  });
});

describe('an Anthropic client talking to an OpenAI upstream', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    proxy = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, skills: { enabled: false } } });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });

  test("Claude Code's mid-conversation system message reaches the OpenAI upstream as a system message, in its place", async () => {
    const client = new Anthropic({ baseURL: proxy.url, apiKey: 'x', maxRetries: 0 });
    const request = clientFixture('claude-code-mid-conversation-system');
    await sendAnthropic(client, request);
    const messages = upstream.modelRequests().at(-1)!.body.messages as Array<{ role: string; content: unknown }>;
    assert.deepEqual(
      messages.map((message) => message.role),
      ['system', 'user', 'assistant', 'system', 'user'],
    );
    assert.deepEqual(messages[3], { role: 'system', content: 'The user switched the output style to Explanatory: explain the reasoning behind each change.' });
  });
});
