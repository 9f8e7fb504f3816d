import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import zlib from 'node:zlib';
import OpenAI from 'openai';
import { anthropicReply, errorReply, openAIReply, ScriptedUpstream, type Handler } from './support/upstream.js';
import { recordedTurn, startProxy, type ProxyHandle } from './support/proxy.js';

/** The upstream answers with these headers beside its own. */
function withHeaders(handler: Handler, headers: Record<string, string>): Handler {
  return (request, response) => {
    for (const [name, value] of Object.entries(headers)) response.setHeader(name, value);
    return handler(request, response);
  };
}

const OPENAI_LIMITS = { 'x-ratelimit-limit-requests': '500', 'x-ratelimit-remaining-requests': '499', 'x-ratelimit-reset-tokens': '6ms' };
const ANTHROPIC_LIMITS = { 'anthropic-ratelimit-requests-limit': '50', 'anthropic-ratelimit-requests-remaining': '49', 'retry-after': '3' };

/**
 * The upstream compresses its answer with `coding` although the proxy asked for identity (as some
 * servers and CDNs do), flushing after every write so a stream stays a stream.
 */
function compressed(handler: Handler, coding: 'gzip' | 'deflate' | 'br'): Handler {
  return (request, response) => {
    const encoder = coding === 'gzip' ? zlib.createGzip() : coding === 'deflate' ? zlib.createDeflate() : zlib.createBrotliCompress();
    const writeHead = response.writeHead.bind(response) as (status: number, headers: Record<string, string | number>) => void;
    const write = response.write.bind(response) as (chunk: Buffer) => boolean;
    const end = response.end.bind(response) as () => void;
    encoder.on('data', (chunk: Buffer) => write(chunk));
    encoder.on('end', () => end());
    response.writeHead = ((status: number, headers: Record<string, string | number> = {}) => {
      const { 'content-length': _length, ...rest } = headers;
      writeHead(status, { ...rest, 'content-encoding': coding });
      return response;
    }) as typeof response.writeHead;
    response.write = ((chunk: string | Buffer) => {
      encoder.write(chunk);
      encoder.flush();
      return true;
    }) as typeof response.write;
    response.end = ((chunk?: string | Buffer) => {
      if (chunk !== undefined) encoder.write(chunk);
      encoder.end();
      return response;
    }) as typeof response.end;
    return handler(request, response);
  };
}

interface ProxiesInFront {
  upstream: ScriptedUpstream;
  openaiProxy: ProxyHandle;
  anthropicProxy: ProxyHandle;
}

/**
 * For the enclosing suite: one scripted upstream and two proxies in front of it with these `llm`
 * settings, one calling it in the OpenAI format and one in Anthropic's. The object is filled in
 * once the suite starts (read it inside tests).
 */
function proxiesInFront(llm: Record<string, unknown>): ProxiesInFront {
  const proxies = {} as ProxiesInFront;
  before(async () => {
    const upstream = await ScriptedUpstream.start();
    const [openaiProxy, anthropicProxy] = await Promise.all([
      startProxy({ config: { llm: { ...llm, api_base: `${upstream.url}/v1` } } }),
      startProxy({ config: { llm: { ...llm, api_base: upstream.url, api_format: 'anthropic' } } }),
    ]);
    Object.assign(proxies, { upstream, openaiProxy, anthropicProxy });
  });
  after(async () => {
    await Promise.all([proxies.openaiProxy?.dispose(), proxies.anthropicProxy?.dispose()]);
    await proxies.upstream?.close();
  });
  return proxies;
}

/** The error a promise rejects with. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
}

describe("the upstream's request id and rate limits reach the client, and its retries are the proxy's alone", () => {
  const proxies = proxiesInFront({ api_key: 'sk-up', max_retries: 2, timeout_seconds: 2, max_retry_wait_seconds: 5 });
  beforeEach(() => {
    proxies.upstream.reset();
    proxies.upstream.defaultHandler = (request, response) =>
      (request.path.endsWith('/messages') ? anthropicReply({ text: 'hello' }) : openAIReply({ text: 'hello' }))(request, response);
  });

  test('an OpenAI client gets x-request-id and x-ratelimit-* on a complete answer, a stream and an upstream error', async () => {
    const client = new OpenAI({ baseURL: `${proxies.openaiProxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const messages = [{ role: 'user' as const, content: 'hi' }];

    proxies.upstream.reply(withHeaders(openAIReply({ text: 'complete' }), { 'x-request-id': 'req_complete', ...OPENAI_LIMITS }));
    const complete = await client.chat.completions.create({ model: 'm', messages }).withResponse();
    assert.equal(complete.request_id, 'req_complete');
    for (const [name, value] of Object.entries(OPENAI_LIMITS)) assert.equal(complete.response.headers.get(name), value, name);
    assert.ok(complete.response.headers.get('x-metaclaw-request-id'), "the proxy's own id is still there");

    proxies.upstream.reply(withHeaders(openAIReply({ text: 'streamed' }), { 'x-request-id': 'req_stream', ...OPENAI_LIMITS }));
    const stream = await client.chat.completions.create({ model: 'm', messages, stream: true }).withResponse();
    let text = '';
    for await (const chunk of stream.data) text += chunk.choices[0]?.delta.content ?? '';
    assert.equal(text, 'streamed');
    assert.equal(stream.response.headers.get('x-request-id'), 'req_stream');
    assert.equal(stream.response.headers.get('x-ratelimit-remaining-requests'), '499');

    proxies.upstream.reply(
      withHeaders(errorReply(400, { error: { message: 'bad parameter', type: 'invalid_request_error' } }), {
        'x-request-id': 'req_rejected',
        ...OPENAI_LIMITS,
      }),
    );
    const error = await rejection(client.chat.completions.create({ model: 'm', messages }));
    assert.ok(error instanceof OpenAI.BadRequestError);
    assert.equal(error.requestID, 'req_rejected');
    assert.equal(error.headers?.get('x-ratelimit-limit-requests'), '500');
  });

  test("an Anthropic upstream's request-id and anthropic-ratelimit-* reach an Anthropic client, and an OpenAI client as they are", async () => {
    const headers = { 'request-id': 'req_anthropic', ...ANTHROPIC_LIMITS };
    proxies.upstream.reply(withHeaders(anthropicReply({ text: 'same format' }), headers));
    const anthropic = new Anthropic({ baseURL: proxies.anthropicProxy.url, apiKey: 'x', maxRetries: 0 });
    const message = await anthropic.messages.create({ model: 'm', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    assert.equal(message.request_id, 'req_anthropic');
    for (const [name, value] of Object.entries(ANTHROPIC_LIMITS)) assert.equal(message.response.headers.get(name), value, name);

    const openai = new OpenAI({ baseURL: `${proxies.anthropicProxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
    proxies.upstream.reply(withHeaders(anthropicReply({ text: 'translated' }), headers));
    const complete = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    assert.equal(complete.data.choices[0]!.message.content, 'translated');
    for (const [name, value] of Object.entries(headers)) assert.equal(complete.response.headers.get(name), value, name);

    proxies.upstream.reply(withHeaders(anthropicReply({ text: 'translated stream' }), headers));
    const stream = await openai.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    let text = '';
    for await (const chunk of stream.data) text += chunk.choices[0]?.delta.content ?? '';
    assert.equal(text, 'translated stream');
    assert.equal(stream.response.headers.get('request-id'), 'req_anthropic');
    assert.equal(stream.response.headers.get('anthropic-ratelimit-requests-remaining'), '49');
  });

  test('a persistent 500 gets exactly llm.max_retries + 1 upstream attempts behind the openai SDK at its default maxRetries', async () => {
    proxies.upstream.defaultHandler = errorReply(500, { error: { message: 'upstream exploded', type: 'server_error' } });
    const client = new OpenAI({ baseURL: `${proxies.openaiProxy.url}/v1`, apiKey: 'x' });
    assert.equal(client.maxRetries, 2, "the SDK's own default retries are on");
    const error = await rejection(client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }));
    assert.ok(error instanceof OpenAI.InternalServerError);
    assert.equal(proxies.upstream.modelRequests().length, 3, 'one try and the proxy’s two retries, none from the SDK');
    assert.equal(error.headers?.get('x-should-retry'), 'false');
  });

  test('a persistent 529 gets exactly llm.max_retries + 1 upstream attempts behind the Anthropic SDK at its default maxRetries', async () => {
    proxies.upstream.defaultHandler = errorReply(529, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    const client = new Anthropic({ baseURL: proxies.anthropicProxy.url, apiKey: 'x' });
    assert.equal(client.maxRetries, 2, "the SDK's own default retries are on");
    const error = await rejection(client.messages.create({ model: 'm', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }));
    assert.ok(error instanceof Anthropic.APIError);
    assert.equal(error.status, 529);
    assert.equal(proxies.upstream.modelRequests().length, 3, 'one try and the proxy’s two retries, none from the SDK');
    assert.equal(error.headers?.get('x-should-retry'), 'false');
  });

  test("the error after the proxy's retries carries the last upstream answer's retry-after and request id", async () => {
    const unavailable = { error: { message: 'try later', type: 'server_error' } };
    // The second answer asks for a wait longer than llm.max_retry_wait_seconds: the proxy stops there.
    proxies.upstream.reply(
      withHeaders(errorReply(503, unavailable), { 'x-request-id': 'req_first' }),
      withHeaders(errorReply(503, unavailable), { 'x-request-id': 'req_last', 'retry-after': '30' }),
    );
    const client = new OpenAI({ baseURL: `${proxies.openaiProxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const error = await rejection(client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }));
    assert.ok(error instanceof OpenAI.APIError);
    assert.equal(error.status, 503);
    assert.equal(error.headers?.get('retry-after'), '30');
    assert.equal(error.requestID, 'req_last');
    assert.equal(error.headers?.get('x-should-retry'), 'false');
    assert.equal(proxies.upstream.modelRequests().length, 2);
  });

  test("a client's x-request-id is kept on its turn record (GET /v1/requests/{id})", async () => {
    const response = await fetch(`${proxies.openaiProxy.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'client-side-42' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(response.status, 200);
    const turn = await recordedTurn(proxies.openaiProxy.url, response.headers.get('x-metaclaw-request-id')!);
    assert.equal(turn.received.headers['x-request-id'], 'client-side-42');
  });
});

describe('an upstream that compresses its answer although the proxy asked for identity', () => {
  const proxies = proxiesInFront({ api_key: 'sk-up', max_retries: 0, timeout_seconds: 5 });
  beforeEach(() => proxies.upstream.reset());

  test('a gzip stream, a deflate answer and a br error reach an OpenAI client decoded, and the turn records the decoded answer', async () => {
    const client = new OpenAI({ baseURL: `${proxies.openaiProxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const messages = [{ role: 'user' as const, content: 'hi' }];

    proxies.upstream.reply(compressed(openAIReply({ text: 'streamed through gzip', pieces: 4, gapMs: 20 }), 'gzip'));
    const { data: stream, response } = await client.chat.completions.create({ model: 'm', stream: true, messages }).withResponse();
    assert.equal(response.headers.get('content-encoding'), null, 'the client is not told of a coding its bytes no longer have');
    let text = '';
    let chunks = 0;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      chunks += 1;
    }
    assert.equal(text, 'streamed through gzip');
    assert.ok(chunks >= 5, `the stream came event by event (${chunks} chunks)`);
    const turn = await recordedTurn(proxies.openaiProxy.url, response.headers.get('x-metaclaw-request-id')!);
    assert.equal(turn.outcome.response.text, 'streamed through gzip');

    proxies.upstream.reply(compressed(openAIReply({ text: 'whole through deflate' }), 'deflate'));
    const whole = await client.chat.completions.create({ model: 'm', messages });
    assert.equal(whole.choices[0]?.message.content, 'whole through deflate');

    proxies.upstream.reply(compressed(errorReply(400, { error: { message: 'context too long for this model', type: 'invalid_request_error' } }), 'br'));
    const error = await rejection(client.chat.completions.create({ model: 'm', messages }));
    assert.ok(error instanceof OpenAI.BadRequestError, `a 400 reaches the client as one: ${String(error)}`);
    assert.match(error.message, /context too long for this model/);
  });

  test('an answer in a coding the proxy cannot decode (zstd) is a 502 that names it, and such an error body keeps its status', async () => {
    const client = new OpenAI({ baseURL: `${proxies.openaiProxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const messages = [{ role: 'user' as const, content: 'hi' }];
    const zstd =
      (status: number): Handler =>
      (_request, response) => {
        response.writeHead(status, { 'content-type': 'application/json', 'content-encoding': 'zstd' });
        response.end(Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58, 0x31, 0x00, 0x00]));
      };
    for (const stream of [false, true]) {
      proxies.upstream.reply(zstd(200));
      const answer = await rejection(client.chat.completions.create({ model: 'm', messages, stream }).then((value) => value));
      assert.ok(answer instanceof OpenAI.APIError && answer.status === 502, `stream ${stream}: a 502, not bytes posing as JSON: ${String(answer)}`);
      assert.match(answer.message, /content-encoding "zstd"/);
    }
    proxies.upstream.reply(zstd(400));
    const error = await rejection(client.chat.completions.create({ model: 'm', messages }));
    assert.ok(error instanceof OpenAI.BadRequestError, `the upstream's 400 is kept: ${String(error)}`);
    assert.match(error.message, /could not be read .*zstd/);
  });

  test('a gzip stream from an Anthropic upstream reaches an OpenAI client translated, and an Anthropic client as it came', async () => {
    proxies.upstream.reply(compressed(anthropicReply({ text: 'translated after gunzip', pieces: 3 }), 'gzip'));
    const openai = new OpenAI({ baseURL: `${proxies.anthropicProxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
    let text = '';
    for await (const chunk of await openai.chat.completions.create({ model: 'c', stream: true, messages: [{ role: 'user', content: 'hi' }] }))
      text += chunk.choices[0]?.delta.content ?? '';
    assert.equal(text, 'translated after gunzip');

    proxies.upstream.reply(compressed(anthropicReply({ text: 'relayed after gunzip', pieces: 3 }), 'gzip'));
    const anthropic = new Anthropic({ baseURL: proxies.anthropicProxy.url, apiKey: 'x', maxRetries: 0 });
    const message = await anthropic.messages.stream({ model: 'c', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    assert.deepEqual(
      message.content.map((block) => (block.type === 'text' ? block.text : block.type)),
      ['relayed after gunzip'],
    );
  });
});
