import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import {
  anthropicReply,
  dropMidStream,
  endEarly,
  errorMidStream,
  errorReply,
  hangReply,
  type Handler,
  openAIReply,
  recordingWrites,
  ScriptedUpstream,
} from './support/upstream.js';
import { recordedTurn, searchMemory, startProxy, waitFor, type ProxyHandle } from './support/proxy.js';

/**
 * Turns recorded once every earlier request's record is written: a marker request is answered and
 * recorded after them (records are written in the order requests finish), and counts itself.
 */
async function turnsAfterMarker(proxy: ProxyHandle, client: OpenAI): Promise<number> {
  const { response } = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'marker' }] }).withResponse();
  await recordedTurn(proxy.url, response.headers.get('x-metaclaw-request-id')!);
  return ((await (await fetch(`${proxy.url}/status`)).json()) as { sessions: { turns: number } }).sessions.turns;
}

/** Reads an SDK's stream to its end, handing on each item: what the SDK raised, or undefined when the stream ended well. */
async function readAll<T>(stream: AsyncIterable<T>, each: (item: T) => void = () => undefined): Promise<unknown> {
  try {
    for await (const item of stream) each(item);
    return undefined;
  } catch (caught) {
    return caught;
  }
}

/** A streamed chat completion through `proxy`: its text, its finish reason, what the SDK raised, and the request id. */
async function chatStream(proxy: ProxyHandle, content: string, headers: Record<string, string> = {}) {
  const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
  const { data: stream, response } = await client.chat.completions
    .create({ model: 'm', stream: true, messages: [{ role: 'user', content }] }, { headers })
    .withResponse();
  let text = '';
  let finish: string | null = null;
  const error = await readAll(stream, (chunk) => {
    text += chunk.choices[0]?.delta.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  });
  return { text, finish, error, requestId: response.headers.get('x-metaclaw-request-id')! };
}

/** A streamed Anthropic message through `proxy`: its event types, what the SDK raised, and the request id. */
async function anthropicStream(proxy: ProxyHandle, content: string) {
  const client = new Anthropic({ baseURL: proxy.url, apiKey: 'x', maxRetries: 0 });
  const { data: stream, response } = await client.messages
    .create({ model: 'c', max_tokens: 50, stream: true, messages: [{ role: 'user', content }] })
    .withResponse();
  const events: string[] = [];
  const error = await readAll(stream, (event) => events.push(event.type));
  return { events, error, requestId: response.headers.get('x-metaclaw-request-id')! };
}

/** A streamed Responses answer through `proxy`: its event types, the response id, what the SDK raised, and the request id. */
async function responsesStream(proxy: ProxyHandle, input: string) {
  const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
  const { data: stream, response } = await client.responses.create({ model: 'm', input, stream: true }).withResponse();
  const events: string[] = [];
  let responseId = '';
  const error = await readAll(stream, (event) => {
    events.push(event.type);
    if (event.type === 'response.created') responseId = event.response.id;
  });
  return { events, responseId, error, client, requestId: response.headers.get('x-metaclaw-request-id')! };
}

/** The proxy's own key for the upstream in the suite below (`llm.api_key`): its clients send another. */
const UPSTREAM_KEY = 'sk-proxy-own-0123456789abcdef';

describe('upstream failures reach the client honestly', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let client: OpenAI;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    proxy = await startProxy({
      config: {
        llm: { api_base: `${upstream.url}/v1`, api_key: UPSTREAM_KEY, max_retries: 2, timeout_seconds: 1, max_retry_wait_seconds: 5 },
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

  test("an upstream error that echoes the proxy's own key (llm.api_key) reaches the client with its status and message, the key replaced by [redacted], also after the retries are spent", async () => {
    const echo = `Invalid API key: ${UPSTREAM_KEY}. Check your key.`;
    upstream.reply(errorReply(401, { error: { message: echo, type: 'invalid_request_error', code: 'invalid_api_key' } }));
    const rejected = await ask().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    assert.ok(rejected instanceof OpenAI.AuthenticationError);
    assert.match(rejected.message, /Invalid API key: \[redacted\]\. Check your key\./);
    assert.ok(!JSON.stringify(rejected.error).includes(UPSTREAM_KEY));
    for (let index = 0; index < 3; index++) upstream.reply(errorReply(500, { error: { message: `server error near ${UPSTREAM_KEY}`, type: 'server_error' } }));
    const failed = await ask().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    assert.ok(failed instanceof OpenAI.InternalServerError);
    assert.match(failed.message, /server error near \[redacted\]/);
    assert.equal(upstream.modelRequests().length, 4);
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

  test('an upstream error whose body stalls or runs over 1 MB reaches the client with its status within llm.timeout_seconds, not a hang nor a 502, and a 400 is not retried', async () => {
    const stalls: Handler = (_request, response) => {
      response.writeHead(400, { 'content-type': 'application/json' });
      response.write('{"error":');
    };
    const huge: Handler = (_request, response) => {
      response.writeHead(400, { 'content-type': 'text/plain' });
      response.end('x'.repeat(2 * 1024 * 1024));
    };
    for (const handler of [stalls, huge]) {
      upstream.reset();
      upstream.reply(handler);
      const error = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }, { timeout: 8_000 }).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof OpenAI.BadRequestError, String(error));
      assert.equal(error.code, 'upstream_error_unreadable');
      assert.match(
        error.message,
        /^400 The upstream answered 400, and its error body could not be read \((upstream sent nothing for 1 s|upstream response larger than 1048576 bytes)\)\.$/,
      );
      assert.equal(upstream.modelRequests().length, 1);
    }
  });

  test('a connection dropped mid-stream ends the stream with an error, not a hang', async () => {
    upstream.reply(dropMidStream('openai', 'this answer will be cut short', 3));
    const { text: received, error } = await chatStream(proxy, 'hi');
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
    const { events, error, requestId } = await anthropicStream(toChat, 'Do both steps.');
    assert.ok(error instanceof Anthropic.APIError, `an API error, not ${String(error)}`);
    assert.deepEqual(error.error, {
      type: 'error',
      error: { type: 'api_error', message: 'The upstream stream broke before it finished (the upstream ended the stream without its final event).' },
    });
    assert.equal(events.includes('message_stop'), false, events.join(' '));
    assert.equal(events.includes('message_delta'), false, 'no stop reason was made up');
    const { turn, brokenStreams } = await brokenTurn(toChat, requestId);
    assert.equal(turn.outcome.result, 'stream_broken');
    assert.match(turn.outcome.error, /without its final event/);
    assert.equal(turn.outcome.response.text, 'Step one i');
    assert.equal(brokenStreams, 1);
  });

  test('a chat client gets the same error chunk (server_error, upstream_stream_broken) when its Anthropic upstream ends with no message_stop as when its own-format upstream is cut', async () => {
    anthropicUpstream.reply(endEarly('anthropic', 'Half of the answer', 4));
    const streamed = async (proxy: ProxyHandle) => {
      const { error, finish, requestId } = await chatStream(proxy, 'Answer in full.');
      assert.ok(error instanceof OpenAI.APIError, `an API error, not ${String(error)}`);
      return { error, finish, requestId };
    };
    const translated = await streamed(toAnthropic);
    assert.equal(translated.finish, null, 'no finish reason was made up');
    assert.equal(translated.error.type, 'server_error');
    assert.equal(translated.error.code, 'upstream_stream_broken');
    assert.match(translated.error.message, /stream broke before it finished/);
    const { turn } = await brokenTurn(toAnthropic, translated.requestId);
    assert.equal(turn.outcome.result, 'stream_broken');

    chatUpstream.reply(dropMidStream('openai', 'cut in its own format', 3));
    const untranslated = await streamed(toChat);
    assert.deepEqual([untranslated.error.type, untranslated.error.code], [translated.error.type, translated.error.code]);
  });

  test('a Responses client gets response.failed and an error event when its chat upstream ends with no finish reason; the response is recorded as failed', async () => {
    chatUpstream.reply(endEarly('openai', 'An unfinished thought', 3));
    const { events, responseId, error, client, requestId } = await responsesStream(toChat, 'Think it through.');
    assert.ok(error instanceof OpenAI.APIError, `an API error, not ${String(error)}`);
    assert.equal(error.code, 'upstream_stream_broken');
    assert.ok(events.includes('response.failed'), events.join(' '));
    assert.equal(events.includes('response.completed'), false);
    const { turn } = await brokenTurn(toChat, requestId);
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

/** A scripted upstream of each API and a proxy in front of each, that learns from raw turns only. */
interface EachFormat {
  chatUpstream: ScriptedUpstream;
  anthropicUpstream: ScriptedUpstream;
  responsesUpstream: ScriptedUpstream;
  toChat: ProxyHandle;
  toAnthropic: ProxyHandle;
  toResponses: ProxyHandle;
  stop(): Promise<void>;
}

async function eachFormat(): Promise<EachFormat> {
  const [chatUpstream, anthropicUpstream, responsesUpstream] = await Promise.all([
    ScriptedUpstream.start(),
    ScriptedUpstream.start(),
    ScriptedUpstream.start(),
  ]);
  // A short idle timeout: a stream left open after the upstream's error ends a test instead of hanging it.
  const proxyTo = (llm: Record<string, unknown>) =>
    startProxy({
      config: { llm: { api_key: 'k', max_retries: 0, timeout_seconds: 5, ...llm }, memory: { auto_extract: false }, skills: { auto_evolve: false } },
    });
  const toChat = await proxyTo({ api_base: `${chatUpstream.url}/v1` });
  const toAnthropic = await proxyTo({ api_base: anthropicUpstream.url, api_format: 'anthropic' });
  const toResponses = await proxyTo({ api_base: `${responsesUpstream.url}/v1`, api_format: 'openai-responses' });
  const stop = async () => {
    await Promise.all([toChat.dispose(), toAnthropic.dispose(), toResponses.dispose()]);
    await Promise.all([chatUpstream.close(), anthropicUpstream.close(), responsesUpstream.close()]);
  };
  return { chatUpstream, anthropicUpstream, responsesUpstream, toChat, toAnthropic, toResponses, stop };
}

describe('an error event the upstream sends in the middle of its stream fails the turn: the client gets the error, the record says upstream_error, learning skips it', () => {
  let each: EachFormat;

  before(async () => {
    each = await eachFormat();
  });
  after(() => each?.stop());

  /** The turn's record once written, /status's error counts, and its last_errors entry for the request. */
  async function failedTurn(proxy: ProxyHandle, requestId: string) {
    const turn = await recordedTurn(proxy.url, requestId);
    const status = (await (await fetch(`${proxy.url}/status`)).json()) as {
      requests: { errors: Record<string, number>; last_errors: Array<{ request_id: string; status: number | null; error: string }> };
    };
    return { turn, errors: status.requests.errors, listed: status.requests.last_errors.find((entry) => entry.request_id === requestId) };
  }

  test('a chat client whose chat upstream sends an error chunk after some text gets that error, and the turn is recorded as upstream_error with its message, counted and listed in /status', async () => {
    each.chatUpstream.reply(errorMidStream('openai', 'The first half of it, then', 3, 'The server had an error while processing your request.'));
    const { text, error, requestId } = await chatStream(each.toChat, 'Answer at length.');
    assert.ok(error instanceof OpenAI.APIError, `an API error, not ${String(error)}`);
    assert.equal(error.message, 'The server had an error while processing your request.');
    assert.ok(text.length > 0, 'the text before the error arrived');
    const { turn, errors, listed } = await failedTurn(each.toChat, requestId);
    assert.equal(turn.outcome.result, 'upstream_error');
    assert.equal(turn.outcome.error, 'the upstream sent an error event in its stream: The server had an error while processing your request.');
    assert.equal(turn.outcome.response.text, text, 'the part that came is kept on the record');
    assert.equal(errors['upstream'], 1);
    assert.equal(errors['stream_broken'], 0);
    assert.match(listed!.error, /error event in its stream: The server had an error/);
  });

  test('an Anthropic client whose Anthropic upstream sends overloaded_error after some text gets that error event as it came, and the turn is recorded as upstream_error', async () => {
    each.anthropicUpstream.reply(errorMidStream('anthropic', 'Partly written answer', 5, 'Overloaded'));
    const { error, requestId } = await anthropicStream(each.toAnthropic, 'Write it.');
    assert.ok(error instanceof Anthropic.APIError, `an API error, not ${String(error)}`);
    assert.deepEqual(error.error, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    const { turn } = await failedTurn(each.toAnthropic, requestId);
    assert.equal(turn.outcome.result, 'upstream_error');
    assert.match(turn.outcome.error, /: Overloaded$/);
  });

  test('a chat client whose Anthropic upstream sends overloaded_error gets the error chunk, and its stream ends there though the upstream holds its connection open; recorded as upstream_error', async () => {
    each.anthropicUpstream.reply(errorMidStream('anthropic', 'Begun but not', 5, 'Overloaded', { hold: true }));
    // Read to its end as bytes (an SDK hangs up by itself on the error): the proxy ends the stream, not the idle timeout.
    const response = await fetch(`${each.toAnthropic.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'Go on.' }] }),
    });
    const events = (await response.text()).split('\n\n').filter(Boolean);
    assert.deepEqual(JSON.parse(events.at(-1)!.slice('data: '.length)), {
      error: { message: 'Overloaded', type: 'server_error', param: null, code: 'upstream_stream_error' },
    });
    const text = events
      .slice(0, -1)
      .map((event) => (JSON.parse(event.slice('data: '.length)) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? '')
      .join('');
    assert.ok(text.length > 0);
    const { turn } = await failedTurn(each.toAnthropic, response.headers.get('x-metaclaw-request-id')!);
    assert.equal(turn.outcome.result, 'upstream_error');
    assert.match(turn.outcome.error, /: Overloaded$/);
    assert.equal(turn.outcome.response.text, text);
  });

  test('an Anthropic client whose chat upstream sends an error chunk gets an Anthropic error event, and a Responses client response.failed (GET /v1/responses/{id} says failed); both recorded as upstream_error', async () => {
    each.chatUpstream.reply(errorMidStream('openai', 'Some of the answer', 3, 'Internal failure upstream'));
    const anthropic = await anthropicStream(each.toChat, 'Explain.');
    assert.ok(anthropic.error instanceof Anthropic.APIError, `an API error, not ${String(anthropic.error)}`);
    assert.deepEqual(anthropic.error.error, { type: 'error', error: { type: 'api_error', message: 'Internal failure upstream' } });
    assert.equal(anthropic.events.includes('message_stop'), false);
    assert.equal((await failedTurn(each.toChat, anthropic.requestId)).turn.outcome.result, 'upstream_error');

    each.chatUpstream.reply(errorMidStream('openai', 'Another partial answer', 3, 'Internal failure upstream'));
    const responses = await responsesStream(each.toChat, 'Explain again.');
    assert.ok(responses.error instanceof OpenAI.APIError, `an API error, not ${String(responses.error)}`);
    assert.ok(responses.events.includes('response.failed'), responses.events.join(' '));
    const { turn } = await failedTurn(each.toChat, responses.requestId);
    assert.equal(turn.outcome.result, 'upstream_error');
    assert.equal((await responses.client.responses.retrieve(responses.responseId)).status, 'failed');
  });

  test('a Responses client whose Responses upstream sends response.failed after some text gets it as it came, and the turn is recorded as upstream_error with its message', async () => {
    each.responsesUpstream.reply(errorMidStream('responses', 'A response that fails', 6, 'The model crashed.'));
    const { events, error, requestId } = await responsesStream(each.toResponses, 'Try.');
    assert.equal(error, undefined, 'the SDK reads response.failed as an event, as the upstream sent it');
    assert.equal(events.at(-1), 'response.failed');
    const { turn } = await failedTurn(each.toResponses, requestId);
    assert.equal(turn.outcome.result, 'upstream_error');
    assert.equal(turn.outcome.error, 'the upstream sent an error event in its stream: The model crashed.');
  });

  test('a chat client that hangs up on the upstream’s error chunk while the upstream holds its connection open: recorded as upstream_error, not client_aborted', async () => {
    each.chatUpstream.reply(errorMidStream('openai', 'Half a reply', 3, 'Upstream went wrong', { hold: true }));
    const { error, requestId } = await chatStream(each.toChat, 'Reply.');
    assert.ok(error instanceof OpenAI.APIError, `an API error, not ${String(error)}`);
    // The SDK aborts its request as it raises; the proxy records the turn once it sees the close.
    const { turn } = await waitFor(() => failedTurn(each.toChat, requestId).catch(() => undefined));
    assert.equal(turn.outcome.result, 'upstream_error');
    assert.match(turn.outcome.error, /: Upstream went wrong$/);
  });

  test('learning skips a turn whose stream the upstream failed: memory keeps nothing of it, while an ok turn after it is remembered', async () => {
    const session = { 'X-Session-Id': 'failed-then-ok' };
    each.chatUpstream.reply(errorMidStream('openai', 'Noted, the heronvault', 3, 'The server had an error'));
    const failed = await chatStream(each.toChat, 'Remember that the heronvault code is 8812.', session);
    assert.ok(failed.error instanceof OpenAI.APIError);
    each.chatUpstream.reply(openAIReply({ text: 'Noted.' }));
    const ok = await chatStream(each.toChat, 'Remember that the kestrelvault code is 4417.', session);
    assert.equal(ok.error, undefined);
    await recordedTurn(each.toChat.url, ok.requestId);
    const remembered = await waitFor(
      async () => {
        const status = (await (await fetch(`${each.toChat.url}/status`)).json()) as { queue: Record<string, number> };
        if ((status.queue['queued'] ?? 0) + (status.queue['leased'] ?? 0) > 0) return undefined;
        const found = await searchMemory(each.toChat, 'kestrelvault code');
        return found.length > 0 ? found : undefined;
      },
      15_000,
      100,
    );
    assert.ok(remembered.some((content) => content.includes('kestrelvault')));
    const failedWords = (await searchMemory(each.toChat, 'heronvault')).filter((content) => content.includes('heronvault'));
    assert.deepEqual(failedWords, [], 'the failed turn was not remembered');
  });
});

describe('an own-format stream whose upstream ends its body without its final event is relayed as it came and recorded as stream_broken', () => {
  let each: EachFormat;

  before(async () => {
    each = await eachFormat();
  });
  after(() => each?.stop());

  /** Posts a streaming request as an SDK would and reads the whole body: the bytes the client got. */
  async function rawStream(url: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ ...body, stream: true }),
    });
    return { body: await response.text(), requestId: response.headers.get('x-metaclaw-request-id')! };
  }

  async function brokenCount(proxy: ProxyHandle): Promise<number> {
    return ((await (await fetch(`${proxy.url}/status`)).json()) as { requests: { errors: { stream_broken: number } } }).requests.errors.stream_broken;
  }

  test('chat: no finish reason nor [DONE] — the client gets the upstream’s bytes unchanged, the turn is stream_broken with the part that came', async () => {
    const written: string[] = [];
    each.chatUpstream.reply(recordingWrites(endEarly('openai', 'Step one is done, step two', 3), written));
    const { body, requestId } = await rawStream(`${each.toChat.url}/v1/chat/completions`, { model: 'm', messages: [{ role: 'user', content: 'Do it.' }] });
    assert.equal(body, written.join(''), 'relayed byte for byte, nothing added');
    const turn = await recordedTurn(each.toChat.url, requestId);
    assert.equal(turn.outcome.result, 'stream_broken');
    assert.equal(turn.outcome.error, 'the upstream ended the stream without its final event');
    assert.ok(turn.outcome.response.text.length > 0 && 'Step one is done, step two'.startsWith(turn.outcome.response.text));
    assert.equal(await brokenCount(each.toChat), 1);
  });

  test('Anthropic: no message_stop — relayed unchanged, recorded as stream_broken', async () => {
    const written: string[] = [];
    each.anthropicUpstream.reply(recordingWrites(endEarly('anthropic', 'Half of the answer', 5), written));
    const { body, requestId } = await rawStream(
      `${each.toAnthropic.url}/v1/messages`,
      { model: 'c', max_tokens: 50, messages: [{ role: 'user', content: 'Go.' }] },
      { 'anthropic-version': '2023-06-01' },
    );
    assert.equal(body, written.join(''));
    assert.equal((await recordedTurn(each.toAnthropic.url, requestId)).outcome.result, 'stream_broken');
  });

  test('Responses: no response.completed — relayed unchanged, recorded as stream_broken', async () => {
    const written: string[] = [];
    each.responsesUpstream.reply(recordingWrites(endEarly('responses', 'An unfinished response', -1), written));
    const { body, requestId } = await rawStream(`${each.toResponses.url}/v1/responses`, { model: 'm', input: 'Go.' });
    assert.equal(body, written.join(''));
    assert.equal(body.includes('response.completed'), false);
    assert.equal((await recordedTurn(each.toResponses.url, requestId)).outcome.result, 'stream_broken');
  });

  test('chat: a finish reason without [DONE] is a whole answer, as on the translated path; a whole stream is ok', async () => {
    each.chatUpstream.reply(endEarly('openai', 'All of it.', -1));
    const before = await brokenCount(each.toChat);
    const chat = await chatStream(each.toChat, 'All.');
    assert.deepEqual([chat.text, chat.finish, chat.error], ['All of it.', 'stop', undefined]);
    assert.equal((await recordedTurn(each.toChat.url, chat.requestId)).outcome.result, 'ok');
    each.anthropicUpstream.reply(anthropicReply({ text: 'Whole.' }));
    const message = await anthropicStream(each.toAnthropic, 'Whole?');
    assert.equal(message.error, undefined);
    assert.equal(message.events.at(-1), 'message_stop');
    assert.equal((await recordedTurn(each.toAnthropic.url, message.requestId)).outcome.result, 'ok');
    assert.equal(await brokenCount(each.toChat), before);
  });
});

describe('an upstream that fails its stream in the very first event (200, then overloaded_error) is retried before the client has a byte', () => {
  let anthropicUpstream: ScriptedUpstream;
  let chatUpstream: ScriptedUpstream;
  let toAnthropic: ProxyHandle;
  let toChat: ProxyHandle;
  const overloadedFirst = () => errorMidStream('anthropic', '', 0, 'Overloaded');

  before(async () => {
    [anthropicUpstream, chatUpstream] = await Promise.all([ScriptedUpstream.start(), ScriptedUpstream.start()]);
    const proxyTo = (llm: Record<string, unknown>) =>
      startProxy({
        config: { llm: { api_key: 'k', max_retries: 2, timeout_seconds: 5, ...llm }, memory: { auto_extract: false }, skills: { auto_evolve: false } },
      });
    toAnthropic = await proxyTo({ api_base: anthropicUpstream.url, api_format: 'anthropic' });
    toChat = await proxyTo({ api_base: `${chatUpstream.url}/v1` });
  });
  after(async () => {
    await Promise.all([toAnthropic?.dispose(), toChat?.dispose()]);
    await Promise.all([anthropicUpstream?.close(), chatUpstream?.close()]);
  });
  beforeEach(() => {
    anthropicUpstream.reset();
    chatUpstream.reset();
  });

  test('an Anthropic client gets the whole answer of the retry, with no error; the turn is ok after 2 attempts', async () => {
    anthropicUpstream.reply(overloadedFirst(), anthropicReply({ text: 'The answer after a busy moment.' }));
    const { events, error, requestId } = await anthropicStream(toAnthropic, 'Answer me.');
    assert.equal(error, undefined, `no error reached the client: ${String(error)}`);
    assert.equal(events.at(-1), 'message_stop');
    assert.equal(anthropicUpstream.modelRequests().length, 2);
    const turn = await recordedTurn(toAnthropic.url, requestId);
    assert.equal(turn.outcome.result, 'ok');
    assert.equal(turn.outcome.attempts, 2);
    assert.equal(turn.outcome.response.text, 'The answer after a busy moment.');
  });

  test('a chat client whose Anthropic upstream opens with overloaded_error gets the retry’s answer translated, with no error chunk', async () => {
    anthropicUpstream.reply(overloadedFirst(), anthropicReply({ text: 'Translated after the retry.' }));
    const { text, finish, error, requestId } = await chatStream(toAnthropic, 'Answer in chat.');
    assert.equal(error, undefined, `no error reached the client: ${String(error)}`);
    assert.equal(text, 'Translated after the retry.');
    assert.equal(finish, 'stop');
    assert.equal((await recordedTurn(toAnthropic.url, requestId)).outcome.attempts, 2);
  });

  test('a chat client whose chat upstream opens with a server_error chunk gets the retry’s answer', async () => {
    chatUpstream.reply(errorMidStream('openai', '', 0, 'The server had an error'), openAIReply({ text: 'Fine now.' }));
    const { text, error } = await chatStream(toChat, 'Try.');
    assert.equal(error, undefined, `no error reached the client: ${String(error)}`);
    assert.equal(text, 'Fine now.');
    assert.equal(chatUpstream.modelRequests().length, 2);
  });

  test('when every try opens with overloaded_error, the last one reaches the client as it came (the SDK raises overloaded_error) and the turn is upstream_error', async () => {
    anthropicUpstream.reply(overloadedFirst(), overloadedFirst(), overloadedFirst());
    const { error, requestId } = await anthropicStream(toAnthropic, 'Still busy?');
    assert.ok(error instanceof Anthropic.APIError, `an API error, not ${String(error)}`);
    assert.deepEqual(error.error, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    assert.equal(anthropicUpstream.modelRequests().length, 3, 'one try and two retries');
    const turn = await recordedTurn(toAnthropic.url, requestId);
    assert.equal(turn.outcome.result, 'upstream_error');
    assert.equal(turn.outcome.attempts, 3);
  });

  test('an opening error that blames the request (invalid_request_error) is relayed at once, not retried', async () => {
    anthropicUpstream.reply((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.end(`event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long' } })}\n\n`);
    });
    const { error } = await anthropicStream(toAnthropic, 'Too long?');
    assert.ok(error instanceof Anthropic.APIError, `an API error, not ${String(error)}`);
    assert.match(error.message, /prompt is too long/);
    assert.equal(anthropicUpstream.modelRequests().length, 1);
  });

  test('keep-alives that come first are relayed at once (a slow model’s client sees bytes flow), so an error after them is the client’s to see, not retried', async () => {
    anthropicUpstream.reply((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(': still queued\n\n');
      setTimeout(
        () => response.end(`event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })}\n\n`),
        300,
      );
    });
    const started = performance.now();
    const response = await fetch(`${toAnthropic.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'x', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'c', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'Queued?' }] }),
    });
    const reader = response.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    assert.ok(performance.now() - started < 250, 'the keep-alive came before the upstream’s error');
    assert.equal(first, ': still queued\n\n');
    let rest = '';
    for (let part = await reader.read(); !part.done; part = await reader.read()) rest += new TextDecoder().decode(part.value);
    assert.match(rest, /overloaded_error/);
    assert.equal(anthropicUpstream.modelRequests().length, 1);
  });
});
