import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { samples } from './support/prometheus.js';
import { homeWithStarterSkills, startProxy, type ProxyHandle } from './support/proxy.js';
import { openAIReply, ScriptedUpstream } from './support/upstream.js';

describe('GET /metrics (Prometheus)', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    const home = await homeWithStarterSkills();
    proxy = await startProxy({ home, config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'upstream-key' }, proxy: { api_key: 'local-secret' } } });
  });
  after(async () => {
    await proxy.dispose();
    await upstream.close();
  });

  test('after requests in both APIs and a bad one, the counts, latencies, injected tokens and store gauges are there, parseable; without the key it is refused', async () => {
    const openai = new OpenAI({ apiKey: 'local-secret', baseURL: `${proxy.url}/v1`, maxRetries: 0 });
    upstream.defaultHandler = openAIReply({ text: 'Use an interactive rebase.' });
    for (let index = 0; index < 2; index += 1)
      await openai.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'my git commit history is a mess, how do I squash commits before merging?' }],
      });
    // The upstream speaks OpenAI: the Anthropic request is translated both ways.
    const anthropicProxy = new Anthropic({ apiKey: 'local-secret', baseURL: proxy.url, maxRetries: 0 });
    upstream.defaultHandler = openAIReply({ text: 'Hello.' });
    await anthropicProxy.messages.create({ model: 'm', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
    const bad = await fetch(`${proxy.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer local-secret', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: 'not a list' }),
    });
    assert.equal(bad.status, 400);
    const added = await fetch(`${proxy.url}/v1/memory`, {
      method: 'POST',
      headers: { authorization: 'Bearer local-secret', 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'preference', content: 'The user prefers short answers.' }),
    });
    assert.equal(added.status, 201);

    const refused = await fetch(`${proxy.url}/metrics`);
    assert.equal(refused.status, 401, 'behind the same key as /status');
    const response = await fetch(`${proxy.url}/metrics`, { headers: { authorization: 'Bearer local-secret' } });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const metrics = samples(await response.text());

    assert.equal(metrics.get('metaclaw_requests_total{route=openai,status=200}'), 2);
    assert.equal(metrics.get('metaclaw_requests_total{route=anthropic,status=200}'), 1);
    assert.equal(metrics.get('metaclaw_requests_total{route=openai,status=400}'), 1);
    assert.equal(metrics.get('metaclaw_request_duration_seconds_count{route=openai}'), 3);
    assert.equal(metrics.get('metaclaw_added_latency_seconds_count{route=openai}'), 2, 'only requests that got as far as forwarding');
    assert.equal(metrics.get('metaclaw_upstream_first_byte_seconds_count{route=anthropic}'), 1);
    assert.ok((metrics.get('metaclaw_added_latency_seconds_sum{route=openai}') ?? 1) < 1, 'milliseconds, not seconds');
    assert.ok((metrics.get('metaclaw_injected_tokens_total{route=openai}') ?? 0) > 50, 'the git skill was injected twice');
    assert.ok((metrics.get('metaclaw_skills{category=coding}') ?? 0) + (metrics.get('metaclaw_skills{category=general}') ?? 0) > 0, 'the starter skills');
    assert.equal(metrics.get('metaclaw_memories{type=preference}'), 1);
    assert.ok([...metrics.keys()].some((key) => key.startsWith('metaclaw_learning_queue_jobs{state=')));
  });
});
