import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { anthropicReply, dropMidStream, endEarly, errorReply, hangReply, openAIReply, ScriptedUpstream } from './support/upstream.js';
import { recordedTurn, startProxy, type ProxyHandle } from './support/proxy.js';

/**
 * Turns recorded once every earlier request's record is written: a marker request is answered and
 * recorded after them (records are written in the order requests finish), and counts itself.
 */
async function turnsAfterMarker(proxy: ProxyHandle, client: OpenAI): Promise<number> {
  const { response } = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'marker' }] }).withResponse();
  await recordedTurn(proxy.url, response.headers.get('x-metaclaw-request-id')!);
  return ((await (await fetch(`${proxy.url}/status`)).json()) as { sessions: { turns: number } }).sessions.turns;
}

describe('upstream failures reach the client honestly', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let client: OpenAI;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    proxy = await startProxy({
      config: {
        llm: { api_base: `${upstream.url}/v1`, api_key: 'sk-up', max_retries: 2, timeout_seconds: 1, max_retry_wait_seconds: 5 },
        proxy: { max_body_mb: 0.05 },
      },
    });
    client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  const ask = () => client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });

  test('an upstream 400 reaches the client with its status and body, without retries', async () => {
    upstream.reply(errorReply(400, { error: { message: 'bad parameter foo', type: 'invalid_request_error', param: 'foo', code: null } }));
    const error = await ask().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof OpenAI.BadRequestError);
    assert.equal(error.status, 400);
    assert.match(error.message, /bad parameter foo/);
    assert.equal(upstream.modelRequests().length, 1);
  });

  test('an upstream 401 reaches the client as 401', async () => {
    upstream.reply(errorReply(401, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } }));
    const error = await ask().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof OpenAI.AuthenticationError);
    assert.equal(upstream.modelRequests().length, 1);
  });

  test('a 429 with retry-after is waited out and retried', async () => {
    let refusedAt = 0;
    let retriedAt = 0;
    const refuse = errorReply(429, { error: { message: 'slow down', type: 'rate_limit_exceeded' } }, { 'retry-after': '1' });
    const answer = openAIReply({ text: 'after the wait' });
    upstream.reply(
      (request, response) => ((refusedAt = Date.now()), refuse(request, response)),
      (request, response) => ((retriedAt = Date.now()), answer(request, response)),
    );
    const completion = await ask();
    assert.equal(completion.choices[0]!.message.content, 'after the wait');
    // The wait is the behaviour here, so it is timed, from the upstream's side: a lower bound only
    // (a loaded machine only makes it longer), a little under 1 s for timer and clock granularity.
    assert.ok(retriedAt - refusedAt >= 950, `the proxy honoured retry-after (retried ${retriedAt - refusedAt} ms after the 429)`);
    assert.equal(upstream.modelRequests().length, 2);
  });

  test('a persistent 500 is retried, then reaches the client with its status', async () => {
    upstream.reply(...[1, 2, 3].map(() => errorReply(500, { error: { message: 'upstream exploded', type: 'server_error' } })));
    const error = await ask().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof OpenAI.InternalServerError);
    assert.equal(error.status, 500);
    assert.match(error.message, /upstream exploded/);
    assert.equal(upstream.modelRequests().length, 3, 'one try and two retries');
  });

  test('an upstream that never answers gives 504 after the retries', async () => {
    upstream.reply(hangReply(), hangReply(), hangReply());
    const error = await ask().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof OpenAI.APIError);
    assert.equal(error.status, 504);
    assert.equal(upstream.modelRequests().length, 3);
  });

  test('a connection dropped mid-stream ends the stream with an error, not a hang', async () => {
    upstream.reply(dropMidStream('openai', 'this answer will be cut short', 3));
    const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let received = '';
    const error = await (async () => {
      for await (const chunk of stream) received += chunk.choices[0]?.delta.content ?? '';
    })().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof OpenAI.APIError, `expected an APIError, got ${String(error)}`);
    assert.match(String((error as Error).message), /stream broke/);
    assert.ok(received.length > 0, 'the part sent before the drop arrived');
  });

  describe('bad input gets a clear error, reaches no upstream and stores nothing', () => {
    const post = (path: string, body: string, headers: Record<string, string> = {}) =>
      fetch(`${proxy.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

    test("malformed JSON is a 400 in each API's error shape", async () => {
      const before = await turnsAfterMarker(proxy, client);
      upstream.reset();
      const openai = await post('/v1/chat/completions', '{"model": "m", "messages": [');
      assert.equal(openai.status, 400);
      const openaiBody = (await openai.json()) as any;
      assert.equal(openaiBody.error.type, 'invalid_request_error');
      assert.equal(openaiBody.error.code, 'invalid_json');
      assert.ok(openai.headers.get('x-metaclaw-request-id'));
      const anthropic = await post('/v1/messages', 'not json', { 'anthropic-version': '2023-06-01' });
      assert.equal(anthropic.status, 400);
      const anthropicBody = (await anthropic.json()) as any;
      assert.equal(anthropicBody.type, 'error');
      assert.equal(anthropicBody.error.type, 'invalid_request_error');
      assert.equal(upstream.requests.length, 0);
      assert.equal(await turnsAfterMarker(proxy, client), before + 1, 'only the marker after them was recorded');
    });

    test('missing or empty messages are a 400 naming the field', async () => {
      const missing = await post('/v1/chat/completions', JSON.stringify({ model: 'm' }));
      assert.equal(missing.status, 400);
      assert.match(((await missing.json()) as any).error.message, /^messages: required/);
      const empty = await post('/v1/chat/completions', JSON.stringify({ model: 'm', messages: [] }));
      assert.equal(empty.status, 400);
      const emptyBody = (await empty.json()) as any;
      assert.equal(emptyBody.error.param, 'messages');
      assert.match(emptyBody.error.message, /at least one message/);
      const anthropicEmpty = await post('/v1/messages', JSON.stringify({ model: 'm', max_tokens: 5, messages: [] }));
      assert.equal(anthropicEmpty.status, 400);
      assert.equal(upstream.requests.length, 0);
    });

    test('wrong types are a 400 naming the field', async () => {
      const role = await post('/v1/chat/completions', JSON.stringify({ model: 'm', messages: [{ role: 'robot', content: 'x' }] }));
      assert.equal(role.status, 400);
      assert.equal(((await role.json()) as any).error.param, 'messages.0.role');
      const temperature = await post('/v1/chat/completions', JSON.stringify({ model: 'm', temperature: 'hot', messages: [{ role: 'user', content: 'x' }] }));
      assert.equal(((await temperature.json()) as any).error.param, 'temperature');
      const maxTokens = await post('/v1/messages', JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }));
      assert.equal(maxTokens.status, 400);
      assert.match(((await maxTokens.json()) as any).error.message, /^max_tokens: required/);
      const stream = await post('/v1/chat/completions', JSON.stringify({ model: 'm', stream: 'yes', messages: [{ role: 'user', content: 'x' }] }));
      assert.equal(((await stream.json()) as any).error.param, 'stream');
      assert.equal(upstream.requests.length, 0);
    });

    test('a body over proxy.max_body_mb is a 413', async () => {
      const before = await turnsAfterMarker(proxy, client);
      upstream.reset();
      const big = await post('/v1/chat/completions', JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(80_000) }] }));
      assert.equal(big.status, 413);
      assert.equal(((await big.json()) as any).error.type, 'request_too_large');
      assert.equal(upstream.requests.length, 0);
      assert.equal(await turnsAfterMarker(proxy, client), before + 1, 'only the marker after it was recorded');
    });

    test("a chunked body (no content-length) over proxy.max_body_mb to a memory route is a 413 in the client's error shape and imports nothing", async () => {
      // JSONL lines that import fine one by one; together well over the 0.05 MiB limit.
      const line = (index: number) =>
        `${JSON.stringify({ type: 'semantic', content: `Chunked import line ${index}: the staging cluster runs in eu-west.` })}\n`;
      const chunked = (path: string, lines: number, headers: Record<string, string> = {}) => {
        const body = new ReadableStream<Uint8Array>({
          start(controller) {
            for (let index = 0; index < lines; index++) controller.enqueue(new TextEncoder().encode(line(index)));
            controller.close();
          },
        });
        return fetch(`${proxy.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/x-ndjson', ...headers }, body, duplex: 'half' });
      };
      const scope = { 'x-memory-scope': 'chunked-limit' };
      const units = async () => ((await (await fetch(`${proxy.url}/v1/memory/stats`, { headers: scope })).json()) as { total_units: number }).total_units;

      const openai = await chunked('/v1/memory/import', 1_000, scope);
      assert.equal(openai.status, 413);
      const openaiBody = (await openai.json()) as any;
      assert.equal(openaiBody.error.type, 'request_too_large');
      assert.match(openaiBody.error.message, /proxy\.max_body_mb/);
      const anthropic = await chunked('/v1/memory/import', 1_000, { ...scope, 'anthropic-version': '2023-06-01' });
      assert.equal(anthropic.status, 413);
      const anthropicBody = (await anthropic.json()) as any;
      assert.equal(anthropicBody.type, 'error');
      assert.equal(anthropicBody.error.type, 'request_too_large');
      assert.equal(await units(), 0, 'nothing of the refused bodies was imported');

      // Under the limit, a chunked body is read whole and imported as before.
      const small = await chunked('/v1/memory/import', 3, scope);
      assert.equal(small.status, 200);
      assert.equal(((await small.json()) as any).imported, 3);
      assert.equal(await units(), 3);
    });

    test('unknown routes are a 404 JSON error', async () => {
      const response = await fetch(`${proxy.url}/v1/no-such-thing`);
      assert.equal(response.status, 404);
      assert.equal(((await response.json()) as any).error.code, 'route_not_found');
      const wrongMethod = await fetch(`${proxy.url}/v1/chat/completions`);
      assert.equal(wrongMethod.status, 405);
    });
  });
});

describe('failover and mid-stream errors across formats', () => {
  let broken: ScriptedUpstream;
  let healthy: ScriptedUpstream;
  let proxy: ProxyHandle;

  before(async () => {
    broken = await ScriptedUpstream.start();
    healthy = await ScriptedUpstream.start();
    broken.defaultHandler = errorReply(503, { error: { message: 'overloaded', type: 'server_error' } });
    proxy = await startProxy({
      config: {
        llm: {
          api_base: `${broken.url}/v1`,
          api_key: 'sk-broken',
          max_retries: 1,
          fallbacks: [{ name: 'backup', api_base: healthy.url, api_format: 'anthropic', api_key: 'sk-ant-backup', model_id: 'claude-backup' }],
        },
      },
    });
  });
  after(async () => {
    await proxy?.dispose();
    await broken?.close();
    await healthy?.close();
  });

  test('when the main upstream keeps failing, the next one in llm.fallbacks answers', async () => {
    healthy.reply(anthropicReply({ text: 'The backup answered.' }));
    const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const { data, response } = await client.chat.completions.create({ model: 'gpt-main', messages: [{ role: 'user', content: 'hello?' }] }).withResponse();
    assert.equal(data.choices[0]!.message.content, 'The backup answered.');
    assert.equal(broken.modelRequests().length, 2, 'main tried once and retried once');
    const sent = healthy.modelRequests()[0]!;
    assert.equal(sent.headers['x-api-key'], 'sk-ant-backup');
    assert.equal(sent.body.model, 'claude-backup');
    const explained = (await (await fetch(`${proxy.url}/v1/requests/${response.headers.get('x-metaclaw-request-id')}`)).json()) as any;
    assert.equal(explained.forwarded.upstream, 'backup');
    assert.equal(explained.outcome.attempts, 3);
  });

  test('a fallback that cannot be sent a part the main upstream takes is skipped: the main upstream’s failure is answered, not a 400 about the request', async () => {
    const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const before = healthy.modelRequests().length;
    const content = [
      { type: 'text' as const, text: 'Summarise this report.' },
      { type: 'file' as const, file: { file_id: 'file-abc' } },
    ];
    await assert.rejects(client.chat.completions.create({ model: 'gpt-main', messages: [{ role: 'user', content }] }), (error: unknown) => {
      assert.ok(error instanceof OpenAI.APIError, String(error));
      assert.equal(error.status, 503);
      assert.match(error.message, /overloaded/);
      return true;
    });
    assert.equal(healthy.modelRequests().length, before, 'nothing went to the fallback, which cannot read an OpenAI file_id');
  });

  /**
   * An Anthropic client in front of an OpenAI upstream whose 200s carry `bodies`, one per request:
   * what the client got for each, and the upstream errors the proxy counted.
   */
  async function anthropicAnswersTo(bodies: string[]): Promise<{ outcomes: unknown[]; upstreamErrors: number | undefined }> {
    const upstream = await ScriptedUpstream.start();
    const translating = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k', max_retries: 0 } } });
    try {
      const client = new Anthropic({ baseURL: translating.url, apiKey: 'x', maxRetries: 0 });
      const outcomes: unknown[] = [];
      for (const body of bodies) {
        upstream.reply((_request, response) => {
          response.writeHead(200, { 'content-type': 'application/json' });
          response.end(body);
        });
        outcomes.push(
          await client.messages.create({ model: 'c', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }).then(
            (message) => message,
            (caught: unknown) => caught,
          ),
        );
      }
      const status = (await (await fetch(`${translating.url}/status`)).json()) as { requests: { errors: Record<string, number> } };
      return { outcomes, upstreamErrors: status.requests.errors['upstream'] };
    } finally {
      await translating.dispose();
      await upstream.close();
    }
  }

  test('a 200 whose body is not JSON, from an upstream of the other format, reaches an Anthropic client as a 502 Anthropic error, not as a success', async () => {
    const { outcomes, upstreamErrors } = await anthropicAnswersTo(['<html>gateway page</html>']);
    const error = outcomes[0];
    assert.ok(error instanceof Anthropic.APIError, `an API error, not ${String(error)}`);
    assert.equal(error.status, 502);
    assert.equal((error.error as { type: string }).type, 'error');
    assert.match(error.message, /not JSON/);
    assert.equal(upstreamErrors, 1);
  });

  test('a 200 whose JSON is not an answer of its API (no choices), from an upstream of the other format, reaches an Anthropic client as a 502, not as an empty message', async () => {
    const { outcomes } = await anthropicAnswersTo([
      JSON.stringify({ object: 'chat.completion', choices: 5 }),
      // A gateway's error object in a 200: its message reaches the client.
      JSON.stringify({ error: { message: 'model overloaded, try later', code: 'overloaded' } }),
    ]);
    const [error, gateway] = outcomes;
    assert.ok(error instanceof Anthropic.APIError, `an API error, not ${String(error)}`);
    assert.equal(error.status, 502);
    assert.match((error.error as { error: { message: string } }).error.message, /not an answer of the openai API \(it has no "choices" list\)/);
    assert.ok(gateway instanceof Anthropic.APIError && gateway.status === 502, `a 502, not ${String(gateway)}`);
    assert.match((gateway.error as { error: { message: string } }).error.message, /it holds an error: model overloaded, try later/);
  });

  test('an Anthropic stream cut midway ends with an Anthropic error event', async () => {
    broken.reply(dropMidStream('anthropic', 'partial anthropic answer', 5));
    const anthropicProxy = await startProxy({ config: { llm: { api_base: broken.url, api_format: 'anthropic', api_key: 'k' } } });
    try {
      const client = new Anthropic({ baseURL: anthropicProxy.url, apiKey: 'x', maxRetries: 0 });
      const stream = client.messages.stream({ model: 'c', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] });
      const error = await stream.finalMessage().then(
        () => undefined,
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof Error, 'the SDK raised instead of hanging');
      assert.match(String(error.message), /stream broke/);
    } finally {
      await anthropicProxy.dispose();
    }
  });
});

describe('a translated stream whose upstream ends without its final event is an error in the client’s stream, not a whole answer', () => {
  let chatUpstream: ScriptedUpstream;
  let anthropicUpstream: ScriptedUpstream;
  let toChat: ProxyHandle;
  let toAnthropic: ProxyHandle;

  before(async () => {
    chatUpstream = await ScriptedUpstream.start();
    anthropicUpstream = await ScriptedUpstream.start();
    toChat = await startProxy({ config: { llm: { api_base: `${chatUpstream.url}/v1`, api_key: 'k', max_retries: 0 } } });
    toAnthropic = await startProxy({ config: { llm: { api_base: anthropicUpstream.url, api_format: 'anthropic', api_key: 'k', max_retries: 0 } } });
  });
  after(async () => {
    await toChat?.dispose();
    await toAnthropic?.dispose();
    await chatUpstream?.close();
    await anthropicUpstream?.close();
  });

  /** What /status counted as broken streams, and the turn's record once written. */
  async function brokenTurn(proxy: ProxyHandle, requestId: string): Promise<{ turn: any; brokenStreams: number }> {
    const turn = await recordedTurn(proxy.url, requestId);
    const status = (await (await fetch(`${proxy.url}/status`)).json()) as { requests: { errors: { stream_broken: number } } };
    return { turn, brokenStreams: status.requests.errors.stream_broken };
  }

  test('an Anthropic client gets an Anthropic error event (api_error) when its chat upstream ends with no finish reason nor [DONE]; the turn is recorded as broken with the part that came', async () => {
    chatUpstream.reply(endEarly('openai', 'Step one is done, step two', 3));
    const client = new Anthropic({ baseURL: toChat.url, apiKey: 'x', maxRetries: 0 });
    const { data: stream, response } = await client.messages
      .create({ model: 'c', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'Do both steps.' }] })
      .withResponse();
    const events: string[] = [];
    const error = await (async () => {
      for await (const event of stream) events.push(event.type);
    })().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof Anthropic.APIError, `an API error, not ${String(error)}`);
    assert.deepEqual(error.error, {
      type: 'error',
      error: { type: 'api_error', message: 'The upstream stream broke before it finished (the upstream ended the stream without its final event).' },
    });
    assert.equal(events.includes('message_stop'), false, events.join(' '));
    assert.equal(events.includes('message_delta'), false, 'no stop reason was made up');
    const { turn, brokenStreams } = await brokenTurn(toChat, response.headers.get('x-metaclaw-request-id')!);
    assert.equal(turn.outcome.result, 'stream_broken');
    assert.match(turn.outcome.error, /without its final event/);
    assert.equal(turn.outcome.response.text, 'Step one i');
    assert.equal(brokenStreams, 1);
  });

  test('a chat client gets the same error chunk (server_error, upstream_stream_broken) when its Anthropic upstream ends with no message_stop as when its own-format upstream is cut', async () => {
    anthropicUpstream.reply(endEarly('anthropic', 'Half of the answer', 4));
    const client = new OpenAI({ baseURL: `${toAnthropic.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const streamed = async (openai: OpenAI) => {
      const { data: stream, response } = await openai.chat.completions
        .create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'Answer in full.' }] })
        .withResponse();
      let finish: string | null = null;
      const error = await (async () => {
        for await (const chunk of stream) finish = chunk.choices[0]?.finish_reason ?? finish;
      })().then(
        () => undefined,
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof OpenAI.APIError, `an API error, not ${String(error)}`);
      return { error, finish, requestId: response.headers.get('x-metaclaw-request-id')! };
    };
    const translated = await streamed(client);
    assert.equal(translated.finish, null, 'no finish reason was made up');
    assert.equal(translated.error.type, 'server_error');
    assert.equal(translated.error.code, 'upstream_stream_broken');
    assert.match(translated.error.message, /stream broke before it finished/);
    const { turn } = await brokenTurn(toAnthropic, translated.requestId);
    assert.equal(turn.outcome.result, 'stream_broken');

    chatUpstream.reply(dropMidStream('openai', 'cut in its own format', 3));
    const untranslated = await streamed(new OpenAI({ baseURL: `${toChat.url}/v1`, apiKey: 'x', maxRetries: 0 }));
    assert.deepEqual([untranslated.error.type, untranslated.error.code], [translated.error.type, translated.error.code]);
  });

  test('a Responses client gets response.failed and an error event when its chat upstream ends with no finish reason; the response is recorded as failed', async () => {
    chatUpstream.reply(endEarly('openai', 'An unfinished thought', 3));
    const client = new OpenAI({ baseURL: `${toChat.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const { data: stream, response } = await client.responses.create({ model: 'm', input: 'Think it through.', stream: true }).withResponse();
    const events: string[] = [];
    let responseId = '';
    const error = await (async () => {
      for await (const event of stream) {
        events.push(event.type);
        if (event.type === 'response.created') responseId = event.response.id;
      }
    })().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof OpenAI.APIError, `an API error, not ${String(error)}`);
    assert.equal(error.code, 'upstream_stream_broken');
    assert.ok(events.includes('response.failed'), events.join(' '));
    assert.equal(events.includes('response.completed'), false);
    const { turn } = await brokenTurn(toChat, response.headers.get('x-metaclaw-request-id')!);
    assert.equal(turn.outcome.result, 'stream_broken');
    const recorded = await client.responses.retrieve(responseId);
    assert.equal(recorded.status, 'failed');
  });

  test('a chat upstream that sends its finish reason but leaves out [DONE] still gives a whole answer', async () => {
    chatUpstream.reply(endEarly('openai', 'All of it.', -1));
    const client = new Anthropic({ baseURL: toChat.url, apiKey: 'x', maxRetries: 0 });
    const message = await client.messages.stream({ model: 'c', max_tokens: 50, messages: [{ role: 'user', content: 'Say it all.' }] }).finalMessage();
    assert.equal(message.stop_reason, 'end_turn');
    assert.deepEqual(message.content, [{ type: 'text', text: 'All of it.' }]);
  });
});
