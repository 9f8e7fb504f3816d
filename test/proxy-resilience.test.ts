import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { openAIReply, ScriptedUpstream, stallMidStream, type Handler } from './support/upstream.js';
import { killMidBurst } from './support/kill-burst.js';
import { startProxy, waitFor, type ProxyHandle } from './support/proxy.js';

describe('a stream that stalls after its first bytes', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    proxy = await startProxy({
      config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'sk-up', max_retries: 2, timeout_seconds: 1, max_retry_wait_seconds: 5 } },
    });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  for (const route of ['openai', 'anthropic'] as const) {
    test(`on the ${route} route ends with an error event, is never retried, and the proxy keeps serving`, async () => {
      // The retry, had it happened, would have answered: that answer is what used to crash the proxy.
      upstream.reply(stallMidStream('openai', 'an answer that stops halfway through', 3), openAIReply({ text: 'retried' }));
      let received = '';
      const error = await (async () => {
        if (route === 'openai') {
          const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
          const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] });
          for await (const chunk of stream) received += chunk.choices[0]?.delta.content ?? '';
        } else {
          const client = new Anthropic({ baseURL: proxy.url, apiKey: 'x', maxRetries: 0 });
          const stream = client.messages.stream({ model: 'm', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
          stream.on('text', (text) => (received += text));
          await stream.finalMessage();
        }
      })().then(
        () => undefined,
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof Error, 'the client got an error, not a silent end');
      assert.match(error.message, /stream broke|sent nothing/);
      assert.ok(received.length > 0, 'the part sent before the stall arrived');
      // The crash came ~0.4 s after the error event, when the retry answered; give it time to happen.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      assert.equal(upstream.modelRequests().length, 1, 'nothing was retried once bytes had reached the client');
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      upstream.reset();
      upstream.reply(openAIReply({ text: 'still here' }));
      const next = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'again' }] });
      assert.equal(next.choices[0]!.message.content, 'still here');
    });
  }
});

describe('a stream the client leaves, and a stream cut by stop', () => {
  test('a client that disconnects mid-stream leaves the part that was relayed on its record', async () => {
    const upstream = await ScriptedUpstream.start();
    const proxy = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' } } });
    try {
      upstream.reply(openAIReply({ text: 'one two three four five six seven eight', pieces: 8, gapMs: 150 }));
      const controller = new AbortController();
      const response = await fetch(`${proxy.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'count slowly' }] }),
        signal: controller.signal,
      });
      const requestId = response.headers.get('x-metaclaw-request-id')!;
      const reader = response.body!.getReader();
      // Read until three content deltas have arrived, then hang up.
      let events = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        events += new TextDecoder().decode(value);
        if ((events.match(/"content":"[^"]+"/g) ?? []).length >= 3) break;
      }
      controller.abort();
      const relayed = (events.match(/"content":"[^"]+"/g) ?? []).map((piece) => JSON.parse(`{${piece}}`).content as string).join('');
      assert.ok(relayed.length > 0 && relayed.length < 40, 'the client left before the answer was complete');
      const explained = await waitFor(async () => {
        const answer = await fetch(`${proxy.url}/v1/requests/${requestId}`);
        return answer.status === 200 ? ((await answer.json()) as any) : undefined;
      });
      assert.equal(explained.outcome.result, 'client_aborted');
      assert.ok((explained.outcome.response.text ?? '').startsWith(relayed), 'the record keeps what reached the client');
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  for (const route of ['openai', 'anthropic'] as const) {
    test(`metaclaw stop ends a stream still running at the deadline with the ${route} API's error event`, async () => {
      const upstream = await ScriptedUpstream.start();
      const proxy = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, proxy: { shutdown_timeout_seconds: 1 } } });
      try {
        upstream.reply(openAIReply({ text: 'a '.repeat(100), pieces: 100, gapMs: 100 }));
        let received = '';
        const consumed = (async () => {
          if (route === 'openai') {
            const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
            const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'long' }] });
            for await (const chunk of stream) received += chunk.choices[0]?.delta.content ?? '';
          } else {
            const client = new Anthropic({ baseURL: proxy.url, apiKey: 'x', maxRetries: 0 });
            const stream = client.messages.stream({ model: 'm', max_tokens: 500, messages: [{ role: 'user', content: 'long' }] });
            stream.on('text', (text) => (received += text));
            await stream.finalMessage();
          }
        })().then(
          () => undefined,
          (caught: unknown) => caught,
        );
        await waitFor(() => received.length > 0);
        const stopped = await proxy.cli(['stop']);
        assert.equal(stopped.code, 0);
        const error = await consumed;
        assert.ok(error instanceof Error, 'the client was told the stream was cut, not left with a silent truncation');
        assert.match(error.message, /shutting down/);
      } finally {
        await proxy.dispose();
        await upstream.close();
      }
    });
  }
});

describe('a proxy killed under load', () => {
  test('every answer a client received before kill -9 is recorded after the next start (turn journal)', async () => {
    const upstream = await ScriptedUpstream.start();
    // A few milliseconds per answer keep eight requests in flight at any moment.
    upstream.defaultHandler = async (request, response) => {
      await new Promise((resolve) => setTimeout(resolve, 3));
      await openAIReply({ text: `answer to ${request.body.messages.at(-1).content}` })(request, response);
    };
    const proxy = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' } } });
    try {
      const answered = await killMidBurst(proxy, {
        total: 200,
        killAfter: 100,
        request: (index) => ({ body: { model: 'm', messages: [{ role: 'user', content: `question ${index}` }] } }),
        answers: (body, index) => body.choices[0].message.content === `answer to question ${index}`,
      });

      const restarted = await proxy.cli(['start', '--no-wire']);
      assert.equal(restarted.code, 0, restarted.stderr);
      const missing = await waitFor(
        async () => {
          const lost: string[] = [];
          for (const id of answered) if ((await fetch(`${proxy.url}/v1/requests/${id}`)).status !== 200) lost.push(id);
          return lost.length === 0 ? lost : undefined;
        },
        20_000,
        200,
      ).catch(() => undefined);
      assert.ok(missing, 'no answered turn is missing from the record after the restart');
      const explained = (await (await fetch(`${proxy.url}/v1/requests/${answered.at(-1)}`)).json()) as any;
      assert.match(explained.outcome.response.text, /^answer to question/);
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });
});

describe('an upstream stream with an event that is not JSON', () => {
  let upstream: ScriptedUpstream;
  let openaiProxy: ProxyHandle;
  let anthropicClientProxy: ProxyHandle;
  const malformed: Handler = (_request, response) => {
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.write(
      `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { role: 'assistant', content: 'Half an answer' }, finish_reason: null }] })}\n\n`,
    );
    response.end('data: {"id":"c","choices":[{"delta":{"content":" and then garbage\n\n');
  };

  before(async () => {
    upstream = await ScriptedUpstream.start();
    openaiProxy = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' } } });
    anthropicClientProxy = openaiProxy;
  });
  after(async () => {
    await openaiProxy?.dispose();
    await upstream?.close();
  });

  test('relayed as is (same format), the stream ends with a clear error event, and the record says so', async () => {
    upstream.reply(malformed);
    const client = new OpenAI({ baseURL: `${openaiProxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    let received = '';
    const error = await (async () => {
      for await (const chunk of stream) received += chunk.choices[0]?.delta.content ?? '';
    })().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof OpenAI.APIError, `the SDK got an API error event, not a JSON parse error of its own: ${String(error)}`);
    assert.match(error.message, /not JSON/);
    assert.equal(received, 'Half an answer');
    const explained = (await (await fetch(`${openaiProxy.url}/v1/requests/${response.headers.get('x-metaclaw-request-id')}`)).json()) as any;
    assert.equal(explained.outcome.result, 'stream_broken');
  });

  test('translated (an Anthropic client), the stream ends with an Anthropic error event instead of a silent success', async () => {
    upstream.reply(malformed);
    const client = new Anthropic({ baseURL: anthropicClientProxy.url, apiKey: 'x', maxRetries: 0 });
    const stream = client.messages.stream({ model: 'm', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] });
    const error = await stream.finalMessage().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof Error, 'the SDK raised');
    assert.match(error.message, /not JSON/);
  });
});
