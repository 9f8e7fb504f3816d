import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import net from 'node:net';
import zlib from 'node:zlib';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

/** `{"a":{"a":…1…}}`, `depth` objects deep. */
function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let level = 0; level < depth; level++) value = { a: value };
  return value;
}

/** Sends raw bytes and returns everything the server answers until it closes the connection. */
function rawExchange(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

describe('bad input gets a clear error in the client API shape and reaches nothing', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let openai: OpenAI;
  let anthropic: Anthropic;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    proxy = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'sk-up', max_retries: 0 } } });
    openai = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: proxy.url, apiKey: 'x', maxRetries: 0 });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  const errors = async () => ((await (await fetch(`${proxy.url}/status`)).json()) as { requests: { errors: Record<string, number> } }).requests.errors;
  const failure = (promise: Promise<unknown>) =>
    promise.then(
      () => assert.fail('expected an error'),
      (caught: unknown) => caught,
    );

  test('JSON nested more than 256 levels deep is a 400 json_too_deep for either client, counted as a bad request; 250 levels pass', async () => {
    const before = await errors();
    const fromOpenAI = await failure(
      openai.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
        extra: nested(300),
      } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming),
    );
    assert.ok(fromOpenAI instanceof OpenAI.BadRequestError);
    assert.equal(fromOpenAI.code, 'json_too_deep');
    assert.match(fromOpenAI.message, /more than 256 levels/);
    const fromAnthropic = await failure(
      anthropic.messages.create({
        model: 'm',
        max_tokens: 10,
        messages: [{ role: 'user', content: 'hi' }],
        extra: nested(300),
      } as Anthropic.MessageCreateParamsNonStreaming),
    );
    assert.ok(fromAnthropic instanceof Anthropic.BadRequestError);
    assert.equal((fromAnthropic.error as { error: { type: string } }).error.type, 'invalid_request_error');
    assert.match(fromAnthropic.message, /more than 256 levels/);

    // 100,000 levels: more than the client-side JSON.stringify could build, so written by hand.
    const deep = `{"model":"m","messages":[{"role":"user","content":"hi"}],"extra":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}`;
    const response = await fetch(`${proxy.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: deep });
    assert.equal(response.status, 400);
    assert.equal(((await response.json()) as { error: { code: string } }).error.code, 'json_too_deep');

    assert.equal(upstream.modelRequests().length, 0, 'nothing went upstream');
    const afterwards = await errors();
    assert.equal(afterwards['bad_request']! - before['bad_request']!, 3);
    assert.equal(afterwards['proxy'], before['proxy'], 'not a proxy error');
    assert.equal(afterwards['uncaught'], before['uncaught']);

    const fine = await openai.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      extra: nested(250),
    } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming);
    assert.match(fine.choices[0]!.message.content!, /scripted upstream/);
  });

  test('a request whose headers exceed the limit gets a 431 with a JSON error body, over a raw socket and through the SDK', async () => {
    const answer = await rawExchange(
      proxy.port,
      `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Big: ${'a'.repeat(20_000)}\r\nContent-Length: 2\r\n\r\n{}`,
    );
    const [head, body] = answer.split('\r\n\r\n');
    assert.match(head!, /^HTTP\/1\.1 431 Request Header Fields Too Large/);
    assert.match(head!, /content-type: application\/json/i);
    const error = (JSON.parse(body!) as { error: { type: string; code: string; message: string } }).error;
    assert.equal(error.type, 'invalid_request_error');
    assert.equal(error.code, 'headers_too_large');
    assert.match(error.message, /headers exceed the proxy's limit of \d+ bytes/);

    const fromSdk = await failure(
      openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'X-Big': 'a'.repeat(20_000) } }),
    );
    assert.ok(fromSdk instanceof OpenAI.APIError);
    assert.equal(fromSdk.status, 431);
    assert.equal(fromSdk.code, 'headers_too_large');
    assert.equal(upstream.modelRequests().length, 0);
  });

  test("a Messages request whose headers exceed the limit gets its 431 in Anthropic's error shape, through the SDK and over a raw socket; an OpenAI request's stays OpenAI's", async () => {
    const fromSdk = await failure(
      anthropic.messages.create({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'X-Big': 'a'.repeat(20_000) } }),
    );
    assert.ok(fromSdk instanceof Anthropic.APIError, String(fromSdk));
    assert.equal(fromSdk.status, 431);
    assert.deepEqual(fromSdk.error, {
      type: 'error',
      error: { type: 'invalid_request_error', message: `The request headers exceed the proxy's limit of 16384 bytes in all; send fewer or smaller headers.` },
    });
    for (const head of [
      'POST /messages?beta=true HTTP/1.1\r\nHost: 127.0.0.1',
      'GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAnthropic-Version: 2023-06-01',
    ]) {
      const answer = await rawExchange(proxy.port, `${head}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
      assert.match(answer, /^HTTP\/1\.1 431 /);
      assert.deepEqual(JSON.parse(answer.split('\r\n\r\n')[1]!).type, 'error', head);
    }
    const openaiAnswer = await rawExchange(proxy.port, `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    assert.equal(JSON.parse(openaiAnswer.split('\r\n\r\n')[1]!).error.code, 'headers_too_large');
    assert.equal(upstream.modelRequests().length, 0);
  });

  test('an Anthropic Messages body on /v1/chat/completions is a 400 that says to use /v1/messages; OpenAI content parts pass', async () => {
    const system = await failure(
      openai.chat.completions.create({
        model: 'm',
        system: 'You are terse.',
        messages: [{ role: 'user', content: 'hi' }],
      } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming),
    );
    assert.ok(system instanceof OpenAI.BadRequestError);
    assert.equal(system.code, 'anthropic_body_on_openai_route');
    assert.equal(system.param, 'system');
    assert.match(system.message, /send it to \/v1\/messages/);

    const toolResult = await failure(
      openai.chat.completions.create({
        model: 'm',
        messages: [
          { role: 'user', content: 'read it' },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'file text' }] },
        ],
      } as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming),
    );
    assert.ok(toolResult instanceof OpenAI.BadRequestError);
    assert.equal(toolResult.param, 'messages.1.content.0.type');
    assert.match(toolResult.message, /"tool_result" content block/);

    const image = await failure(
      openai.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] }],
      } as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming),
    );
    assert.ok(image instanceof OpenAI.BadRequestError);
    assert.equal(upstream.modelRequests().length, 0);

    const fine = await openai.chat.completions.create({
      model: 'm',
      messages: [
        { role: 'system', content: 'You are terse.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          ],
        },
      ],
    });
    assert.match(fine.choices[0]!.message.content!, /scripted upstream/);
    assert.equal(upstream.modelRequests().length, 1);
  });

  test('a client that leaves while sending its body is counted as a client abort, not a proxy error, on a model route and a memory route', async () => {
    const before = (await (await fetch(`${proxy.url}/status`)).json()) as { requests: { errors: Record<string, number> } };
    for (const path of ['/v1/chat/completions', '/v1/messages', '/v1/memory/search']) {
      // Half a body of a declared 500 bytes, then the connection is gone.
      await new Promise<void>((resolve) => {
        const socket = net.connect(proxy.port, '127.0.0.1', () =>
          socket.write(
            `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"model":"m","messages":[`,
            () => setTimeout(() => socket.destroy(), 100),
          ),
        );
        socket.on('error', () => undefined);
        socket.on('close', () => resolve());
      });
    }
    const counted = await waitFor(async () => {
      const now = await errors();
      return now['client_aborted']! - before.requests.errors['client_aborted']! === 3 && now;
    });
    assert.equal(counted['proxy'], before.requests.errors['proxy'], 'not a proxy error');
    assert.equal(counted['bad_request'], before.requests.errors['bad_request']);
    assert.equal(upstream.modelRequests().length, 0);
    const fine = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    assert.match(fine.choices[0]!.message.content!, /scripted upstream/);
  });

  test('a gzip, deflate or br body is decoded and served; a corrupt one is a 400, an unknown coding a 415, a bomb past the limit a 413, each in the client shape', async () => {
    const body = JSON.stringify({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'compressed hello' }] });
    const post = (encoding: string, bytes: Buffer) =>
      fetch(`${proxy.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': encoding }, body: bytes });
    for (const [encoding, bytes] of [
      ['gzip', zlib.gzipSync(body)],
      ['deflate', zlib.deflateSync(body)],
      ['br', zlib.brotliCompressSync(body)],
    ] as const) {
      const response = await post(encoding, bytes);
      assert.equal(response.status, 200, `${encoding}: ${await response.clone().text()}`);
      assert.match(((await response.json()) as { content: Array<{ text: string }> }).content[0]!.text, /scripted upstream/);
    }
    assert.equal(upstream.modelRequests().length, 3);
    assert.equal(upstream.modelRequests()[0]!.body.messages[0].content, 'compressed hello');
    upstream.reset();

    const corrupt = await post('gzip', Buffer.from([0x1f, 0x8b, 8, 0, 1, 2, 3, 4, 5]));
    assert.equal(corrupt.status, 400);
    const corruptError = (await corrupt.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(corruptError.type, 'error');
    assert.match(corruptError.error.message, /not valid gzip/);
    const unknown = await post('zstd', Buffer.from(body));
    assert.equal(unknown.status, 415);
    assert.match(((await unknown.json()) as { error: { message: string } }).error.message, /content-encoding "zstd"/);
    // 40 MiB of zeros in ~40 KB: over the 32 MiB limit once decoded.
    const bomb = await post('gzip', zlib.gzipSync(Buffer.concat([Buffer.from('{"x":"'), Buffer.alloc(40 * 1024 * 1024, 0x30), Buffer.from('"}')])));
    assert.equal(bomb.status, 413);
    assert.equal(upstream.modelRequests().length, 0);
  });

  test("the routes beside the model routes decode gzip, deflate and br bodies too; a corrupt one is a 400, an unknown coding a 415, a bomb a 413, each in that route's error shape and counted", async () => {
    const send = (path: string, encoding: string, bytes: Buffer, headers: Record<string, string> = {}) =>
      fetch(`${proxy.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': encoding, ...headers }, body: bytes });
    const json = (value: unknown) => Buffer.from(JSON.stringify(value));

    const counted = { model: 'm', messages: [{ role: 'user', content: 'count these compressed words please' }] };
    const plain = (await (await send('/v1/messages/count_tokens', 'identity', json(counted))).json()) as { input_tokens: number };
    const gzipped = await send('/v1/messages/count_tokens', 'gzip', zlib.gzipSync(json(counted)), { 'anthropic-version': '2023-06-01' });
    assert.equal(gzipped.status, 200, await gzipped.clone().text());
    assert.deepEqual(await gzipped.json(), plain);

    const embedded = await send('/v1/embeddings', 'deflate', zlib.deflateSync(json({ model: 'embedder', input: 'deflated text' })));
    assert.equal(embedded.status, 200, await embedded.clone().text());
    const passed = upstream.requests.find((request) => request.path.endsWith('/embeddings'));
    assert.deepEqual(passed?.body, { model: 'embedder', input: 'deflated text' }, 'the upstream gets the decoded JSON');

    const scope = { 'x-memory-scope': 'gzip-routes' };
    const added = await send(
      '/v1/memory',
      'br',
      zlib.brotliCompressSync(json({ type: 'project_state', content: 'The staging database lives on host kestrel.' })),
      scope,
    );
    assert.equal(added.status, 201, await added.clone().text());
    const found = await send('/v1/memory/search', 'gzip', zlib.gzipSync(json({ query: 'staging database host' })), scope);
    assert.equal(found.status, 200, await found.clone().text());
    assert.match(JSON.stringify(await found.json()), /kestrel/);

    const before = await errors();
    // Anthropic's shape where the client is Anthropic's, OpenAI's elsewhere, as every error of these routes.
    const corrupt = await send('/v1/messages/count_tokens', 'gzip', Buffer.from([0x1f, 0x8b, 8, 0, 1, 2, 3, 4, 5]), { 'anthropic-version': '2023-06-01' });
    assert.equal(corrupt.status, 400);
    const corruptError = (await corrupt.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(corruptError.type, 'error');
    assert.equal(corruptError.error.type, 'invalid_request_error');
    assert.match(corruptError.error.message, /not valid gzip/);
    const corruptMemory = await send('/v1/memory/search', 'deflate', Buffer.from('not deflate at all'), scope);
    assert.equal(corruptMemory.status, 400);
    assert.equal(((await corruptMemory.json()) as { error: { code: string } }).error.code, 'invalid_content_encoding');
    const unknown = await send('/v1/memory/search', 'zstd', json({ query: 'x' }), scope);
    assert.equal(unknown.status, 415);
    assert.match(((await unknown.json()) as { error: { message: string } }).error.message, /content-encoding "zstd"/);
    // ~40 KB on the wire, 40 MiB once decoded: the limit counts decoded bytes.
    const bomb = await send(
      '/v1/memory',
      'gzip',
      zlib.gzipSync(Buffer.concat([Buffer.from('{"type":"project_state","content":"'), Buffer.alloc(40 * 1024 * 1024, 0x30), Buffer.from('"}')])),
      scope,
    );
    assert.equal(bomb.status, 413);
    assert.equal(((await bomb.json()) as { error: { code: string } }).error.code, 'request_too_large');
    const after = await errors();
    assert.equal(after['bad_request']! - before['bad_request']!, 4, 'each refusal counted as a bad request');
    assert.deepEqual(
      upstream.requests.map((request) => request.path),
      ['/v1/embeddings'],
      'only the embeddings request went upstream',
    );
  });

  test('a body with a UTF-8 byte order mark before its JSON is served, and the upstream gets the JSON without the mark', async () => {
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'written by a Windows tool' }] });
    const response = await fetch(`${proxy.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(body)]),
    });
    assert.equal(response.status, 200, await response.clone().text());
    const sent = upstream.modelRequests();
    assert.equal(sent.length, 1);
    assert.equal(sent[0]!.body.messages[0].content, 'written by a Windows tool');
    assert.notEqual(sent[0]!.raw.charCodeAt(0), 0xfeff, 'no byte order mark reaches the upstream');
  });

  test('a session id over 256 characters is a 400 session_id_too_long in the client shape; 256 is accepted', async () => {
    const tooLong = await failure(
      openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'X-Session-Id': 's'.repeat(257) } }),
    );
    assert.ok(tooLong instanceof OpenAI.BadRequestError);
    assert.equal(tooLong.code, 'session_id_too_long');
    assert.match(tooLong.message, /257 characters long; MetaClaw accepts at most 256/);
    const inBody = await failure(
      anthropic.messages.create({
        model: 'm',
        max_tokens: 10,
        messages: [{ role: 'user', content: 'hi' }],
        metadata: { session_id: 's'.repeat(300) },
      } as Anthropic.MessageCreateParamsNonStreaming),
    );
    assert.ok(inBody instanceof Anthropic.BadRequestError);
    assert.match(inBody.message, /300 characters long/);
    assert.equal(upstream.modelRequests().length, 0);

    const id = 'k'.repeat(256);
    await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'X-Session-Id': id } });
    await waitFor(async () =>
      (JSON.parse((await proxy.cli(['sessions', 'list', '--json'])).stdout) as Array<{ id: string }>).some((session) => session.id === id),
    );
  });

  test('GET /v1/memory/export?scope= (empty) is a 400 naming the empty scope parameter, not a 403', async () => {
    const response = await fetch(`${proxy.url}/v1/memory/export?scope=`, { headers: { 'x-memory-scope': 'user:alice' } });
    assert.equal(response.status, 400);
    const body = (await response.json()) as { error: { code: string; message: string; param: string } };
    assert.equal(body.error.code, 'scope_empty');
    assert.equal(body.error.param, 'scope');
    assert.match(body.error.message, /scope parameter is empty/);
  });

  test('an X-Memory-Scope over 256 characters is a 400 memory_scope_too_long on the memory API and on model requests; 256 is accepted', async () => {
    const added = await fetch(`${proxy.url}/v1/memory`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-memory-scope': 's'.repeat(5000) },
      body: JSON.stringify({ type: 'semantic', content: 'The build runs on Fridays.' }),
    });
    assert.equal(added.status, 400);
    const body = (await added.json()) as { error: { code: string; message: string; param: string } };
    assert.equal(body.error.code, 'memory_scope_too_long');
    assert.equal(body.error.param, 'memory_scope');
    assert.match(body.error.message, /5000 characters long; MetaClaw accepts at most 256/);
    const model = await failure(
      openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'X-Memory-Scope': 's'.repeat(257) } }),
    );
    assert.ok(model instanceof OpenAI.BadRequestError);
    assert.equal(model.code, 'memory_scope_too_long');
    assert.equal(upstream.modelRequests().length, 0, 'nothing went upstream');
    const longest = 'k'.repeat(256);
    const accepted = await fetch(`${proxy.url}/v1/memory`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-memory-scope': longest },
      body: JSON.stringify({ type: 'semantic', content: 'The build runs on Fridays.' }),
    });
    assert.equal(accepted.status, 201, await accepted.clone().text());
    assert.equal(((await accepted.json()) as { scope: string }).scope, longest);
  });

  test('a scope named in a memory body or query (with the admin token, or without) over 256 characters is a 400 scope_too_long, as the headers are; an import line naming one is skipped; 256 is accepted', async () => {
    const admin = { 'x-metaclaw-admin': readFileSync(join(proxy.home, 'admin-token'), 'utf8').trim() };
    const long = 's'.repeat(257);
    const send = async (method: string, path: string, body: unknown, headers: Record<string, string>) => {
      const response = await fetch(`${proxy.url}${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...headers },
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      });
      return { status: response.status, body: (await response.json()) as { error?: { code: string; message: string; param: string }; [key: string]: unknown } };
    };
    for (const headers of [admin, { 'x-memory-scope': 'user:alice' }])
      for (const [method, path, body] of [
        ['POST', '/v1/memory', { scope: long, type: 'semantic', content: 'The build runs on Fridays.' }],
        ['POST', '/v1/memory/search', { scope: long, query: 'build' }],
        ['POST', '/v1/memory/ingest', { scope: long, session_id: 'long-scope', turns: [{ role: 'user', content: 'hi' }] }],
        ['GET', `/v1/memory/export?scope=${long}`, undefined],
        ['GET', `/v1/memory/stats?scope=${long}`, undefined],
        ['DELETE', `/v1/memory?scope=${long}`, undefined],
        ['POST', `/v1/memory/import?scope=${long}`, '{"type":"semantic","content":"The build runs on Fridays."}\n'],
      ] as const) {
        const refused = await send(method, path, body, headers);
        const label = `${method} ${path.slice(0, 30)} ${headers === admin ? 'admin' : 'alice'}`;
        assert.equal(refused.status, 400, label);
        assert.deepEqual({ code: refused.body.error?.code, param: refused.body.error?.param }, { code: 'scope_too_long', param: 'scope' }, label);
        assert.match(refused.body.error!.message, /scope is 257 characters long; MetaClaw accepts at most 256/, label);
      }
    const line = (scope: string) => `${JSON.stringify({ scope, type: 'semantic', content: 'Imported: the deploy runs on Mondays.' })}\n`;
    const imported = await send('POST', '/v1/memory/import', line(long), admin);
    assert.equal(imported.body['imported'], 0);
    assert.match(JSON.stringify(imported.body['skipped']), /scope.*at most 256/);
    const stats = await send('GET', '/v1/memory/stats', undefined, admin);
    assert.ok(!JSON.stringify(stats.body).includes(long), 'no scope over 256 characters was stored');

    const longest = 'k'.repeat(256);
    assert.equal((await send('POST', '/v1/memory', { scope: longest, type: 'semantic', content: 'The build runs on Fridays.' }, admin)).status, 201);
    assert.equal((await send('POST', '/v1/memory/import', line(longest), admin)).body['imported'], 1);
  });
});
