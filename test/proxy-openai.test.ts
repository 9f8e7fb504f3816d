import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import { gatedReply, openAIReply, ScriptedUpstream } from './support/upstream.js';
import { startProxy, waitFor, type ProxyHandle } from './support/proxy.js';

describe('OpenAI client through the proxy to an OpenAI-compatible upstream', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let client: OpenAI;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    proxy = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'sk-upstream-secret' } } });
    client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'sk-client-unused', maxRetries: 0 });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  test('a non-streaming completion comes back unchanged and carries a request id', async () => {
    upstream.reply(openAIReply({ text: 'Paris is the capital of France.', usage: { input: 20, output: 8 } }));
    const { data, response } = await client.chat.completions
      .create({ model: 'gpt-test', messages: [{ role: 'user', content: 'Capital of France?' }] })
      .withResponse();
    assert.equal(data.choices[0]!.message.content, 'Paris is the capital of France.');
    assert.equal(data.usage?.prompt_tokens, 20);
    assert.match(response.headers.get('x-metaclaw-request-id') ?? '', /^req_[0-9a-f]{24}$/);
    const forwarded = upstream.modelRequests()[0]!;
    assert.equal(forwarded.path, '/v1/chat/completions');
    assert.equal(forwarded.headers['authorization'], 'Bearer sk-upstream-secret', 'the configured upstream key is used');
    assert.equal(forwarded.body.model, 'gpt-test');
  });

  test('a streaming completion arrives as a stream with every delta', async () => {
    upstream.reply(openAIReply({ text: 'one two three four five', pieces: 5 }));
    const stream = await client.chat.completions.create({
      model: 'gpt-test',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'count' }],
    });
    const deltas: string[] = [];
    let usage: unknown;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) deltas.push(chunk.choices[0].delta.content);
      if (chunk.usage) usage = chunk.usage;
    }
    assert.ok(deltas.length >= 5, `expected several deltas, got ${deltas.length}`);
    assert.equal(deltas.join(''), 'one two three four five');
    assert.deepEqual(usage, { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 });
  });

  test('stream bytes reach the client as the upstream sends them, not at the end', async () => {
    const deltas: string[] = [];
    // The upstream sends the first piece and holds the rest back until the client has that piece:
    // a proxy that buffered the stream would deliver nothing until the wait gave up.
    const clientHadFirst = waitFor(() => deltas.length > 0, 10_000).then(
      () => true,
      () => false,
    );
    upstream.reply(gatedReply(openAIReply({ text: 'slow answer arriving in pieces', pieces: 4 }), 2, clientHadFirst));
    const stream = await client.chat.completions.create({ model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'go slowly' }] });
    for await (const chunk of stream) if (chunk.choices[0]?.delta.content) deltas.push(chunk.choices[0].delta.content);
    assert.equal(await clientHadFirst, true, 'the first piece reached the client while the upstream was still holding the rest');
    assert.equal(deltas.join(''), 'slow answer arriving in pieces');
  });

  test('tool calls come back and tool results go upstream intact, streaming and not', async () => {
    const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Weather for a city',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      },
    ];
    upstream.reply(openAIReply({ toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Oslo"}' }] }));
    const first = await client.chat.completions.create({ model: 'gpt-test', tools, messages: [{ role: 'user', content: 'Weather in Oslo?' }] });
    const call = first.choices[0]!.message.tool_calls![0]!;
    assert.equal(first.choices[0]!.finish_reason, 'tool_calls');
    assert.equal(call.type === 'function' && call.function.arguments, '{"city":"Oslo"}');

    upstream.reply(openAIReply({ toolCalls: [{ id: 'call_2', name: 'get_weather', arguments: '{"city":"Bergen"}' }] }));
    const stream = await client.chat.completions.create({ model: 'gpt-test', tools, stream: true, messages: [{ role: 'user', content: 'And Bergen?' }] });
    let argumentsText = '';
    let name = '';
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta.tool_calls?.[0];
      if (delta?.function?.name) name = delta.function.name;
      if (delta?.function?.arguments) argumentsText += delta.function.arguments;
    }
    assert.equal(name, 'get_weather');
    assert.equal(argumentsText, '{"city":"Bergen"}');

    upstream.reply(openAIReply({ text: 'It is 3°C in Oslo.' }));
    const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Weather in Oslo?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temp_c":3}' },
    ];
    const final = await client.chat.completions.create({ model: 'gpt-test', tools, messages });
    assert.equal(final.choices[0]!.message.content, 'It is 3°C in Oslo.');
    const sent = upstream.modelRequests().at(-1)!.body;
    assert.deepEqual(sent.messages, messages);
    assert.deepEqual(sent.tools, tools);
  });

  test('image parts and unknown fields pass through untouched while MetaClaw keys are stripped', async () => {
    upstream.reply(openAIReply({ text: 'A red square.' }));
    const image = { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' } } as const;
    const body = {
      model: 'gpt-test',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, image] }],
      some_future_field: { nested: [1, 2, 3] },
      session_id: 'must-not-leak',
      turn_type: 'main',
      user_id: 'u1',
    };
    await client.chat.completions.create(body as never);
    const sent = upstream.modelRequests()[0]!.body;
    assert.deepEqual(sent.messages[0].content[1], image);
    assert.deepEqual(sent.some_future_field, { nested: [1, 2, 3] });
    for (const key of ['session_id', 'turn_type', 'user_id']) assert.equal(key in sent, false, `${key} reached the upstream`);
  });

  test('GET /v1/requests/{id} explains what arrived, what was forwarded and the outcome', async () => {
    upstream.reply(openAIReply({ text: 'Recorded answer.', usage: { input: 30, output: 4 } }));
    const { response } = await client.chat.completions
      .create(
        {
          model: 'gpt-test',
          messages: [{ role: 'user', content: '[Sun 2026-11-29 19:50 UTC] What is recorded?\n\nRuntime: agent=main | sessionId=abc | os=linux' }],
        },
        { headers: { 'X-Session-Id': 'explain-session' } },
      )
      .withResponse();
    const id = response.headers.get('x-metaclaw-request-id')!;
    const explained = (await (await fetch(`${proxy.url}/v1/requests/${id}`)).json()) as any;
    assert.equal(explained.id, id);
    assert.equal(explained.session_id, 'explain-session');
    assert.equal(explained.received.user_request, 'What is recorded?');
    assert.equal(explained.received.body.messages[0].role, 'user');
    assert.equal(explained.forwarded.upstream, 'main');
    assert.equal(explained.forwarded.body.model, 'gpt-test');
    assert.equal(explained.outcome.status, 200);
    assert.equal(explained.outcome.result, 'ok');
    assert.equal(explained.outcome.response.text, 'Recorded answer.');
    assert.deepEqual(explained.outcome.usage, { input_tokens: 30, output_tokens: 4 });
    assert.equal(JSON.stringify(explained).includes('sk-upstream-secret'), false, 'no key in the record');
    assert.equal(JSON.stringify(explained).includes('sk-client-unused'), false, 'no client key in the record');

    const missing = await fetch(`${proxy.url}/v1/requests/req_does_not_exist`);
    assert.equal(missing.status, 404);
    assert.equal(((await missing.json()) as any).error.code, 'request_not_found');
  });

  test('/v1/models falls back to the configured model when the upstream has no list', async () => {
    upstream.reply((_request, response) => {
      response.writeHead(404).end();
    });
    const list = await client.models.list();
    assert.ok(list.data.length >= 1);
  });
});
