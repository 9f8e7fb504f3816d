import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { anthropicReply, openAIReply, ScriptedUpstream, type Handler, type ReplyOptions } from './support/upstream.js';
import { refusalTrace, startProxy, type ProxyHandle } from './support/proxy.js';

const weatherToolOpenAI: OpenAI.Chat.Completions.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const weatherToolAnthropic: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Weather for a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

describe('Anthropic client through the proxy to an Anthropic upstream', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let client: Anthropic;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    proxy = await startProxy({ config: { llm: { api_base: upstream.url, api_format: 'anthropic', api_key: 'sk-ant-upstream' } } });
    client = new Anthropic({ baseURL: proxy.url, apiKey: 'sk-ant-client', maxRetries: 0 });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  test('messages.create and messages.stream work unchanged', async () => {
    upstream.reply(anthropicReply({ text: 'Bonjour.' }), anthropicReply({ text: 'A streamed answer.', pieces: 4 }));
    const message = await client.messages.create({
      model: 'claude-test',
      max_tokens: 100,
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Say hello in French.' }],
    });
    assert.deepEqual(message.content, [{ type: 'text', text: 'Bonjour.' }]);
    const sent = upstream.modelRequests()[0]!;
    assert.equal(sent.path, '/v1/messages');
    assert.equal(sent.headers['x-api-key'], 'sk-ant-upstream');
    assert.match(String(sent.headers['anthropic-version']), /^\d{4}-\d{2}-\d{2}$/, "the client's anthropic-version passes through");
    assert.equal(sent.body.system, 'Be brief.');

    const texts: string[] = [];
    const stream = client.messages.stream({ model: 'claude-test', max_tokens: 100, messages: [{ role: 'user', content: 'Stream please.' }] });
    stream.on('text', (text) => texts.push(text));
    const final = await stream.finalMessage();
    assert.equal(texts.join(''), 'A streamed answer.');
    assert.equal(final.stop_reason, 'end_turn');
    assert.equal(final.usage.output_tokens, 5);
  });
});

describe('Anthropic client in front of an OpenAI-compatible upstream (translated both ways)', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let client: Anthropic;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    proxy = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'sk-openai-upstream', model_id: 'gpt-upstream' } } });
    client = new Anthropic({ baseURL: proxy.url, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  test('a non-streaming message is translated to chat completions and back', async () => {
    upstream.reply(openAIReply({ text: 'Translated reply.', usage: { input: 12, output: 3 } }));
    const message = await client.messages.create({
      model: 'claude-test',
      max_tokens: 50,
      system: 'System rules.',
      messages: [{ role: 'user', content: 'Hi' }],
    });
    assert.equal(message.type, 'message');
    assert.deepEqual(message.content, [{ type: 'text', text: 'Translated reply.' }]);
    assert.equal(message.stop_reason, 'end_turn');
    assert.equal(message.usage.input_tokens, 12);
    const sent = upstream.modelRequests()[0]!;
    assert.equal(sent.path, '/v1/chat/completions');
    assert.equal(sent.headers['authorization'], 'Bearer sk-openai-upstream');
    assert.equal(sent.body.model, 'gpt-upstream', "the configured upstream model replaces the client's");
    assert.deepEqual(sent.body.messages, [
      { role: 'system', content: 'System rules.' },
      { role: 'user', content: 'Hi' },
    ]);
    assert.equal(sent.body.max_tokens, 50);
  });

  test('a streamed message with a tool call is translated event by event', async () => {
    upstream.reply(openAIReply({ text: 'Let me check.', toolCalls: [{ id: 'call_w', name: 'get_weather', arguments: '{"city":"Paris"}' }] }));
    const stream = client.messages.stream({
      model: 'claude-test',
      max_tokens: 50,
      tools: [weatherToolAnthropic],
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    const final = await stream.finalMessage();
    assert.equal(final.stop_reason, 'tool_use');
    assert.equal(final.content[0]!.type, 'text');
    const toolUse = final.content.find((block) => block.type === 'tool_use')!;
    assert.ok(toolUse.type === 'tool_use');
    assert.equal(toolUse.name, 'get_weather');
    assert.equal(toolUse.id, 'call_w');
    assert.deepEqual(toolUse.input, { city: 'Paris' });
    const sent = upstream.modelRequests()[0]!.body;
    assert.equal(sent.stream, true);
    assert.deepEqual(sent.tools, [weatherToolOpenAI]);
  });

  test('tool results and images are translated into the upstream format', async () => {
    upstream.reply(openAIReply({ text: 'Done.' }));
    await client.messages.create({
      model: 'claude-test',
      max_tokens: 50,
      tools: [weatherToolAnthropic],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather here?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
          ],
        },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '3°C' }] },
      ],
    });
    const messages = upstream.modelRequests()[0]!.body.messages;
    assert.deepEqual(messages[0].content[1], { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } });
    assert.equal(messages[1].tool_calls[0].id, 'toolu_1');
    assert.equal(messages[1].tool_calls[0].function.arguments, '{"city":"Oslo"}');
    assert.deepEqual(
      { role: messages[2].role, tool_call_id: messages[2].tool_call_id, content: messages[2].content },
      { role: 'tool', tool_call_id: 'toolu_1', content: '3°C' },
    );
  });
  test('an image or document the chat format cannot carry (from the file store, a document by URL) is refused with a 400 naming the block, never left out; nothing goes upstream and, as for any bad input, no turn is recorded while the refusal is listed in /status; a content document goes on as its text', async () => {
    const question = { type: 'text' as const, text: 'Summarise this.' };
    const refused: Array<[Record<string, unknown>, string]> = [
      [{ type: 'document', source: { type: 'url', url: 'https://example.com/report.pdf' } }, 'messages.0.content.1'],
      [{ type: 'image', source: { type: 'file', file_id: 'file_011abc' } }, 'messages.0.content.1'],
    ];
    for (const [block, param] of refused) {
      let requestId = '';
      await assert.rejects(
        client.messages.create({ model: 'claude-test', max_tokens: 50, messages: [{ role: 'user', content: [question, block] as never }] }),
        (error: unknown) => {
          assert.ok(error instanceof Anthropic.BadRequestError, String(error));
          const body = error.error as { type: string; error: { type: string; message: string } };
          assert.equal(body.error.type, 'invalid_request_error');
          assert.match(body.error.message, new RegExp(`^${param.replaceAll('.', '\\.')}: `));
          requestId = error.headers?.get('x-metaclaw-request-id') ?? '';
          return true;
        },
      );
      const { recorded, listed } = await refusalTrace(proxy.url, requestId);
      assert.equal(recorded, false, 'no turn was recorded');
      assert.equal(listed?.status, 400);
      assert.match(listed?.error ?? '', new RegExp(`POST /v1/messages: ${param.replaceAll('.', '\\.')}: `));
    }
    assert.equal(upstream.modelRequests().length, 0, 'nothing went upstream');
    upstream.reply(openAIReply({ text: 'A short report.' }));
    await client.messages.create({
      model: 'claude-test',
      max_tokens: 50,
      messages: [
        { role: 'user', content: [question, { type: 'document', source: { type: 'content', content: [{ type: 'text', text: 'Sales rose 4 %.' }] } }] },
      ],
    });
    assert.deepEqual(upstream.modelRequests()[0]!.body.messages, [{ role: 'user', content: 'Summarise this.\n\nSales rose 4 %.' }]);
  });
});

describe('OpenAI client in front of an Anthropic upstream (translated both ways)', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let client: OpenAI;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    proxy = await startProxy({ config: { llm: { api_base: upstream.url, api_format: 'anthropic', api_key: 'sk-ant-upstream', model_id: 'claude-upstream' } } });
    client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  test('a file known only by its OpenAI id, or audio, is refused with a 400 naming the part, never left out; nothing goes upstream and, as for any bad input, no turn is recorded while the refusal is listed in /status', async () => {
    const question = { type: 'text' as const, text: 'What does it say?' };
    const refused: Array<[Record<string, unknown>, RegExp]> = [
      [{ type: 'file', file: { file_id: 'file-abc' } }, /messages\.0\.content\.1: .*file_data/],
      [{ type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } }, /messages\.0\.content\.1: .*no audio/],
    ];
    for (const [part, why] of refused) {
      let requestId = '';
      await assert.rejects(
        client.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: [question, part] as never }] }),
        (error: unknown) => {
          assert.ok(error instanceof OpenAI.BadRequestError, String(error));
          assert.equal(error.code, 'unsupported_content_part');
          assert.equal(error.param, 'messages.0.content.1');
          assert.match(error.message, why);
          requestId = error.headers?.get('x-metaclaw-request-id') ?? '';
          return true;
        },
      );
      const { recorded, listed } = await refusalTrace(proxy.url, requestId);
      assert.equal(recorded, false, 'no turn was recorded');
      assert.equal(listed?.status, 400);
      assert.match(listed?.error ?? '', why);
    }
    assert.equal(upstream.modelRequests().length, 0, 'nothing went upstream');
  });

  test('a non-streaming completion is translated to messages and back', async () => {
    upstream.reply(anthropicReply({ text: 'From Claude.', usage: { input: 9, output: 2 } }));
    const completion = await client.chat.completions.create({
      model: 'gpt-client',
      messages: [
        { role: 'system', content: 'Be nice.' },
        { role: 'user', content: 'Hello' },
      ],
    });
    assert.equal(completion.choices[0]!.message.content, 'From Claude.');
    assert.equal(completion.choices[0]!.finish_reason, 'stop');
    assert.equal(completion.usage?.prompt_tokens, 9);
    const sent = upstream.modelRequests()[0]!;
    assert.equal(sent.path, '/v1/messages');
    assert.equal(sent.headers['x-api-key'], 'sk-ant-upstream');
    assert.equal(sent.body.model, 'claude-upstream');
    assert.equal(sent.body.system, 'Be nice.');
    assert.equal(sent.body.max_tokens, 4096, 'Anthropic needs max_tokens; the configured default is sent');
  });

  test('a streamed completion with tool calls is translated event by event, usage included', async () => {
    upstream.reply(
      anthropicReply({
        text: 'Checking.',
        toolCalls: [{ id: 'toolu_9', name: 'get_weather', arguments: '{"city":"Rome"}' }],
        usage: { input: 40, output: 12 },
      }),
    );
    const stream = await client.chat.completions.create({
      model: 'gpt-client',
      stream: true,
      stream_options: { include_usage: true },
      tools: [weatherToolOpenAI],
      messages: [{ role: 'user', content: 'Rome weather?' }],
    });
    let text = '';
    let argumentsText = '';
    let toolId = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (choice?.delta.content) text += choice.delta.content;
      const call = choice?.delta.tool_calls?.[0];
      if (call?.id) toolId = call.id;
      if (call?.function?.arguments) argumentsText += call.function.arguments;
      if (choice?.finish_reason) finish = choice.finish_reason;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, 'Checking.');
    assert.equal(toolId, 'toolu_9');
    assert.equal(argumentsText, '{"city":"Rome"}');
    assert.equal(finish, 'tool_calls');
    assert.equal(usage?.prompt_tokens, 40);
    assert.equal(usage?.completion_tokens, 12);
    const sent = upstream.modelRequests()[0]!.body;
    assert.deepEqual(sent.tools, [weatherToolAnthropic]);
  });
});

/** A get_weather call and its tool, as the tests of upstreams that ignore `stream` ask for it. */
const call = { id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' };
const weather = { type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };

/** The same question with the tool in Anthropic's form. */
const anthropicWeatherQuestion: Anthropic.MessageCreateParamsNonStreaming = {
  model: 'm',
  max_tokens: 100,
  messages: [{ role: 'user', content: 'Weather in Paris?' }],
  tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
};

/** The upstream answers as if the request's `stream` said `stream`, whatever it says. */
const answeringAsIf =
  (stream: boolean) =>
  (reply: Handler): Handler =>
  (request, response) =>
    reply({ ...request, body: { ...request.body, stream } }, response);

/** The scripted answer of an upstream of this format. */
const replyOf = (wire: 'openai' | 'anthropic') => (options: ReplyOptions) => (wire === 'openai' ? openAIReply(options) : anthropicReply(options));

/** A scripted upstream of each format with a proxy in front, started before the describe's tests and closed after them. */
function proxyPerFormat(): Record<'openai' | 'anthropic', { upstream: ScriptedUpstream; proxy: ProxyHandle }> {
  const upstreams: Record<'openai' | 'anthropic', { upstream: ScriptedUpstream; proxy: ProxyHandle }> = {} as never;
  before(async () => {
    for (const format of ['openai', 'anthropic'] as const) {
      const upstream = await ScriptedUpstream.start();
      const llm = format === 'openai' ? { api_base: `${upstream.url}/v1`, api_key: 'k' } : { api_base: upstream.url, api_format: 'anthropic', api_key: 'k' };
      upstreams[format] = { upstream, proxy: await startProxy({ config: { llm } }) };
    }
  });
  after(async () => {
    for (const { upstream, proxy } of Object.values(upstreams)) {
      await proxy?.dispose();
      await upstream?.close();
    }
  });
  return upstreams;
}

describe('a client that asked for no stream gets one JSON answer from an upstream that streams anyway', () => {
  const upstreams = proxyPerFormat();
  /** The upstream streams whatever the request's `stream` says. */
  const streamingAnyway = answeringAsIf(true);

  for (const wire of ['openai', 'anthropic'] as const) {
    const reply = replyOf(wire);

    test(`chat.completions.create from ${wire === 'openai' ? 'a chat' : 'an Anthropic'} upstream: the same chat.completion as from its JSON answer, text and tool calls`, async () => {
      const { upstream, proxy } = upstreams[wire];
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      const ask = () =>
        client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: [weather] }).withResponse();
      upstream.reply(reply({ text: 'Checking.', toolCalls: [call] }), streamingAnyway(reply({ text: 'Checking.', toolCalls: [call] })));
      const fromJson = await ask();
      const fromStream = await ask();
      assert.match(fromStream.response.headers.get('content-type') ?? '', /application\/json/);
      assert.equal(fromStream.data.object, 'chat.completion');
      assert.deepEqual(fromStream.data.choices, fromJson.data.choices);
      // A chat stream has usage only when asked; an Anthropic one always does, and so the answer made from it.
      if (wire === 'anthropic') assert.deepEqual(fromStream.data.usage, fromJson.data.usage);
      assert.deepEqual(fromStream.data.choices[0]!.message.tool_calls?.[0], {
        id: 'call_1',
        type: 'function',
        function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
      });
    });

    test(`messages.create from ${wire === 'openai' ? 'a chat' : 'an Anthropic'} upstream: the same message as from its JSON answer`, async () => {
      const { upstream, proxy } = upstreams[wire];
      const client = new Anthropic({ baseURL: proxy.url, apiKey: 'x', maxRetries: 0 });
      const ask = () => client.messages.create(anthropicWeatherQuestion).withResponse();
      upstream.reply(reply({ text: 'Checking.', toolCalls: [call] }), streamingAnyway(reply({ text: 'Checking.', toolCalls: [call] })));
      const fromJson = await ask();
      const fromStream = await ask();
      assert.match(fromStream.response.headers.get('content-type') ?? '', /application\/json/);
      assert.equal(fromStream.data.type, 'message');
      assert.deepEqual(fromStream.data.content, fromJson.data.content);
      assert.equal(fromStream.data.stop_reason, 'tool_use');
      if (wire === 'anthropic') assert.deepEqual(fromStream.data.usage, fromJson.data.usage);
    });
  }

  test('a stream that ends before its final event is a 502 in the client API’s error shape, not a partial answer', async () => {
    const { upstream, proxy } = upstreams.anthropic;
    upstream.reply((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.end(
        `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { id: 'msg_cut', type: 'message', role: 'assistant', content: [] } })}\n\n`,
      );
    });
    const client = new Anthropic({ baseURL: proxy.url, apiKey: 'x', maxRetries: 0 });
    await assert.rejects(client.messages.create({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'Hi' }] }), (error: unknown) => {
      assert.ok(error instanceof Anthropic.APIError, String(error));
      assert.equal(error.status, 502);
      assert.match(error.message, /asked for no stream.*message_stop/);
      return true;
    });
  });

  test('a translated stream that ends before its final event is a 502 too, not a partial answer closed as finished', async () => {
    const { upstream, proxy } = upstreams.anthropic;
    upstream.reply((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const event = (data: Record<string, unknown>) => `event: ${String(data.type)}\ndata: ${JSON.stringify(data)}\n\n`;
      response.end(
        event({
          type: 'message_start',
          message: { id: 'msg_cut', type: 'message', role: 'assistant', content: [], usage: { input_tokens: 5, output_tokens: 0 } },
        }) +
          event({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }) +
          event({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'The first half of' } }),
      );
    });
    const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
    await assert.rejects(client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] }), (error: unknown) => {
      assert.ok(error instanceof OpenAI.APIError, String(error));
      assert.equal(error.status, 502);
      assert.match(error.message, /asked for no stream.*message_stop/);
      return true;
    });
  });
});

describe('a client that asked for a stream gets one from an upstream that answers with one JSON body anyway', () => {
  const upstreams = proxyPerFormat();
  /** The upstream answers with one JSON body whatever the request's `stream` says (as some servers do). */
  const jsonAnyway = answeringAsIf(false);

  for (const wire of ['openai', 'anthropic'] as const) {
    const reply = (options: ReplyOptions) => jsonAnyway(replyOf(wire)(options));
    const from = wire === 'openai' ? 'a chat' : 'an Anthropic';

    test(`chat.completions.stream from ${from} upstream: events the SDK reads into the answer, text and tool call (was the JSON answer, which the SDK read as no events)`, async () => {
      const { upstream, proxy } = upstreams[wire];
      upstream.reply(reply({ text: 'Checking.', toolCalls: [call], usage: { input: 12, output: 4 } }));
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      const stream = client.chat.completions.stream({
        model: 'm',
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools: [weather],
        stream_options: { include_usage: true },
      });
      const answer = await stream.finalChatCompletion();
      assert.equal(answer.choices[0]!.message.content, 'Checking.');
      assert.deepEqual(answer.choices[0]!.message.tool_calls?.[0], {
        id: 'call_1',
        type: 'function',
        function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
      });
      assert.equal(answer.choices[0]!.finish_reason, 'tool_calls');
      assert.deepEqual([answer.usage?.prompt_tokens, answer.usage?.completion_tokens], [12, 4]);
    });

    test(`messages.stream from ${from} upstream: the message the SDK assembles from the events`, async () => {
      const { upstream, proxy } = upstreams[wire];
      upstream.reply(reply({ text: 'Checking.', toolCalls: [call], usage: { input: 12, output: 4 } }));
      const client = new Anthropic({ baseURL: proxy.url, apiKey: 'x', maxRetries: 0 });
      const message = await client.messages.stream(anthropicWeatherQuestion).finalMessage();
      assert.deepEqual(
        message.content.map((block) => (block.type === 'text' ? block.text : block.type === 'tool_use' ? block.input : block.type)),
        ['Checking.', { city: 'Paris' }],
      );
      assert.equal(message.stop_reason, 'tool_use');
      assert.deepEqual([message.usage.input_tokens, message.usage.output_tokens], [12, 4]);
    });
  }

  test('responses.stream from a chat upstream: the response the SDK assembles from the events', async () => {
    const { upstream, proxy } = upstreams.openai;
    upstream.reply(jsonAnyway(openAIReply({ text: 'Bonjour.' })));
    const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const response = await client.responses.stream({ model: 'm', input: 'Hello in French?' }).finalResponse();
    assert.equal(response.status, 'completed');
    assert.equal(response.output_text, 'Bonjour.');
  });
});
