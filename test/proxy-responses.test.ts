import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import {
  anthropicReply,
  dropMidStream,
  errorReply,
  gatedReply,
  json,
  openAIReply,
  responsesReply,
  ScriptedUpstream,
  type Handler,
} from './support/upstream.js';
import { turnFromJournal } from '../src/proxy/index.js';
import { isEvolverCall, learningAwareUpstream, userText } from './support/evolver.js';
import { journalHeader } from './support/journal.js';
import { homeWithStarterSkills, recordedTurn, refusalTrace, startProxy, waitFor, type ProxyHandle } from './support/proxy.js';

/** The OpenAI Responses API through the proxy, driven by the `openai` SDK's own `responses.create` / `responses.stream`. */

const weatherTool: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

const GIT_QUESTION = 'my git commit history is a mess, how do I squash commits before merging?';

/** A Responses `usage` object for counts from a chat upstream (no cached or reasoning tokens). */
function responsesUsage(input: number, output: number) {
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + output,
  };
}

/** The distinct event types in the order they first came. */
function eventKinds(types: string[]): string[] {
  return types.filter((type, index) => type !== types[index - 1]);
}

/** The events of an answer that is one text message, in the order the Responses API sends them (each delta may repeat). */
const TEXT_ANSWER_EVENTS = [
  'response.created',
  'response.in_progress',
  'response.output_item.added',
  'response.content_part.added',
  'response.output_text.delta',
  'response.output_text.done',
  'response.content_part.done',
  'response.output_item.done',
  'response.completed',
];

/** An upstream that streams whatever the request's `stream` says (some do): `reply` as it answers a stream. */
function streamingAnyway(reply: Handler): Handler {
  return (request, response) => reply({ ...request, body: { ...request.body, stream: true } }, response);
}

/**
 * Streams `reply` whole, then holds the upstream connection open, and hangs up as Codex does: on
 * response.completed, before the upstream has closed. The turn's record, once written.
 */
async function hangUpOnCompleted(proxy: ProxyHandle, upstream: ScriptedUpstream, client: OpenAI, reply: Handler): Promise<any> {
  let release = () => {};
  upstream.reply(gatedReply(reply, Number.MAX_SAFE_INTEGER, new Promise<void>((resolve) => (release = resolve))));
  try {
    const { data: stream, response } = await client.responses.create({ model: 'gpt-5', input: 'Hello', stream: true }).withResponse();
    for await (const event of stream) if (event.type === 'response.completed') break;
    // The hang-up reaches the proxy on its own connection: the record exists once it has.
    const requestId = response.headers.get('x-metaclaw-request-id')!;
    return await waitFor(() => recordedTurn(proxy.url, requestId).catch(() => undefined));
  } finally {
    release();
  }
}

/**
 * Codex's tools as it sends them for its catalog's default model: no `tools` field, an
 * `additional_tools` item holding the `functions` namespace, with the freeform `exec` tool. A second
 * namespace here also has a `read_file`, so the two need their namespace in the chat name.
 */
const codexToolsItem: OpenAI.Responses.ResponseInputItem = {
  type: 'additional_tools',
  role: 'developer',
  tools: [
    {
      type: 'namespace',
      name: 'functions',
      description: 'Codex tools',
      tools: [
        { type: 'custom', name: 'exec', description: 'Runs a shell command.', format: { type: 'grammar', syntax: 'lark', definition: 'start: /.+/' } },
        { type: 'function', name: 'read_file', description: 'Reads a file', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
      ],
    },
    {
      type: 'namespace',
      name: 'mcp',
      description: 'An MCP server',
      tools: [{ type: 'function', name: 'read_file', parameters: { type: 'object', properties: {} } }],
    },
  ],
};

/** The upstream's tool calls, one per tool of codexToolsItem. */
const codexToolCalls = [
  { id: 'call_exec', name: 'exec', arguments: '{"input":"ls -la"}' },
  { id: 'call_read', name: 'functions__read_file', arguments: '{"path":"README.md"}' },
  { id: 'call_mcp', name: 'mcp__read_file', arguments: '{}' },
];

/** The client items those calls must come back as, ids left out. */
const codexCallItems = [
  { type: 'custom_tool_call', call_id: 'call_exec', name: 'exec', namespace: 'functions', input: 'ls -la' },
  { type: 'function_call', call_id: 'call_read', name: 'read_file', namespace: 'functions', arguments: '{"path":"README.md"}', status: 'completed' },
  { type: 'function_call', call_id: 'call_mcp', name: 'read_file', namespace: 'mcp', arguments: '{}', status: 'completed' },
];

/** Output items without their ids and the SDK's own `parsed_arguments`. */
function withoutIds(items: readonly object[]): object[] {
  return items.map(({ id: _id, parsed_arguments: _parsed, ...rest }: { id?: unknown; parsed_arguments?: unknown }) => rest);
}

/** What a following request sends back: the calls and their outputs. */
const codexCallsAndOutputs: OpenAI.Responses.ResponseInputItem[] = [
  { type: 'custom_tool_call', call_id: 'call_exec', name: 'exec', namespace: 'functions', input: 'ls -la' },
  { type: 'function_call', call_id: 'call_mcp', name: 'read_file', namespace: 'mcp', arguments: '{}' },
  { type: 'custom_tool_call_output', call_id: 'call_exec', output: 'README.md' },
  { type: 'function_call_output', call_id: 'call_mcp', output: 'nothing' },
];

/**
 * Codex's tool round trip through a translated upstream, whichever: the calls of the first answer
 * (complete, then streamed) come back as Codex's items; the second request's calls and outputs are
 * read by `sentBack`.
 */
async function codexToolRoundTrip(client: OpenAI, model: string): Promise<void> {
  const input: OpenAI.Responses.ResponseInputItem[] = [codexToolsItem, { role: 'user', content: 'List the files.' }];
  const complete = await client.responses.create({ model, input });
  assert.deepEqual(withoutIds(complete.output), codexCallItems);

  const events: string[] = [];
  const stream = client.responses.stream({ model, input });
  stream.on('event', (event) => events.push(event.type));
  const streamed = await stream.finalResponse();
  assert.deepEqual(withoutIds(streamed.output), codexCallItems);
  assert.ok(events.includes('response.custom_tool_call_input.done'), events.join());

  await client.responses.create({ model, input: [...input, ...codexCallsAndOutputs] });
}

describe('Responses API clients in front of a Chat Completions upstream (translated both ways)', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let client: OpenAI;

  const config = () => ({ llm: { api_base: `${upstream.url}/v1`, api_key: 'sk-openai-upstream' } });

  before(async () => {
    upstream = await ScriptedUpstream.start();
    proxy = await startProxy({ config: config() });
    client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  test('responses.create: instructions and input go upstream as chat messages, the answer comes back as a Responses object', async () => {
    upstream.reply(openAIReply({ text: 'Bonjour.', usage: { input: 12, output: 3 } }));
    const response = await client.responses.create({
      model: 'gpt-test',
      instructions: 'Be brief.',
      input: 'Say hello in French.',
      max_output_tokens: 50,
      temperature: 0.2,
    });
    assert.equal(response.object, 'response');
    assert.match(response.id, /^resp_[0-9a-f]{24}$/);
    assert.equal(response.status, 'completed');
    assert.equal(response.output_text, 'Bonjour.');
    assert.equal(response.output[0]?.type, 'message');
    assert.equal(response.instructions, 'Be brief.');
    assert.deepEqual(response.usage, responsesUsage(12, 3));
    const sent = upstream.modelRequests()[0]!;
    assert.equal(sent.path, '/v1/chat/completions');
    assert.equal(sent.headers['authorization'], 'Bearer sk-openai-upstream');
    assert.deepEqual(sent.body, {
      model: 'gpt-test',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Say hello in French.' },
      ],
      temperature: 0.2,
      max_tokens: 50,
    });
  });

  test('responses.stream: the SDK accumulates the translated events, in the order the Responses API sends them', async () => {
    upstream.reply(openAIReply({ text: 'A streamed answer.', pieces: 4, usage: { input: 9, output: 4 } }));
    const types: string[] = [];
    const deltas: string[] = [];
    const stream = client.responses.stream({ model: 'gpt-test', input: [{ role: 'user', content: [{ type: 'input_text', text: 'Stream please.' }] }] });
    stream.on('event', (event) => types.push(event.type));
    stream.on('response.output_text.delta', (event) => deltas.push(event.delta));
    const final = await stream.finalResponse();
    assert.deepEqual(deltas, ['A str', 'eamed', ' answ', 'er.']);
    assert.deepEqual(eventKinds(types), TEXT_ANSWER_EVENTS);
    assert.equal(final.output_text, 'A streamed answer.');
    assert.equal(final.status, 'completed');
    assert.equal(final.usage?.total_tokens, 13);
    const sent = upstream.modelRequests()[0]!.body;
    assert.equal(sent.stream, true);
    assert.deepEqual(sent.stream_options, { include_usage: true }, 'a chat stream reports usage only when asked');
    assert.deepEqual(sent.messages, [{ role: 'user', content: 'Stream please.' }]);
  });

  test('a function call round trip: the call streams as a function_call item, its output comes back by previous_response_id', async () => {
    upstream.reply(
      openAIReply({ toolCalls: [{ id: 'call_weather', name: 'get_weather', arguments: '{"city":"Paris"}' }] }),
      openAIReply({ text: 'It is 22°C in Paris.' }),
    );
    const argumentDeltas: string[] = [];
    const stream = client.responses.stream({ model: 'gpt-test', input: 'What is the weather in Paris?', tools: [weatherTool], tool_choice: 'auto' });
    stream.on('response.function_call_arguments.delta', (event) => argumentDeltas.push(event.delta));
    const first = await stream.finalResponse();
    const call = first.output.find((item) => item.type === 'function_call');
    assert.ok(call && call.type === 'function_call', JSON.stringify(first.output));
    assert.equal(call.call_id, 'call_weather');
    assert.equal(call.name, 'get_weather');
    assert.equal(call.arguments, '{"city":"Paris"}');
    assert.equal(argumentDeltas.join(''), '{"city":"Paris"}');
    assert.deepEqual(upstream.modelRequests()[0]!.body.tools, [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Weather for a city',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
          strict: false,
        },
      },
    ]);
    assert.equal(upstream.modelRequests()[0]!.body.tool_choice, 'auto');

    const second = await client.responses.create({
      model: 'gpt-test',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: '22°C, sunny' }],
      tools: [weatherTool],
    });
    assert.equal(second.output_text, 'It is 22°C in Paris.');
    assert.equal(second.previous_response_id, first.id);
    assert.deepEqual(upstream.modelRequests()[1]!.body.messages, [
      { role: 'user', content: 'What is the weather in Paris?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_weather', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_weather', content: '22°C, sunny' },
    ]);

    // The chain goes on: a third request names the second response and gets all of it.
    upstream.reply(openAIReply({ text: 'You are welcome.' }));
    await client.responses.create({ model: 'gpt-test', previous_response_id: second.id, input: 'Thanks!' });
    const third = upstream.modelRequests()[2]!.body.messages;
    assert.equal(third.length, 5);
    assert.deepEqual(third.slice(3), [
      { role: 'assistant', content: 'It is 22°C in Paris.' },
      { role: 'user', content: 'Thanks!' },
    ]);

    // GET /v1/responses/{id} serves both from the records, with the items the client first saw.
    const retrieved = await client.responses.retrieve(first.id);
    assert.equal(retrieved.id, first.id);
    assert.equal(retrieved.status, 'completed');
    assert.deepEqual(
      retrieved.output.map((item) => (item.type === 'function_call' ? [item.id, item.call_id, item.name, item.arguments] : item.type)),
      first.output.map((item) => (item.type === 'function_call' ? [item.id, item.call_id, item.name, item.arguments] : item.type)),
    );
    const retrievedSecond = await client.responses.retrieve(second.id);
    assert.equal(retrievedSecond.output_text, 'It is 22°C in Paris.');
    assert.equal(retrievedSecond.previous_response_id, first.id);
    await assert.rejects(client.responses.retrieve('resp_000000000000000000000000'), (error: unknown) => error instanceof OpenAI.NotFoundError);
  });

  test('a chat server that gives its tool calls no id: the call_id the client got is the one previous_response_id sends back with the call and GET /v1/responses/{id} shows (was a second made-up id, so the call and its output no longer paired)', async () => {
    const answers: Array<[string, () => Promise<OpenAI.Responses.Response>]> = [
      ['complete', () => client.responses.create({ model: 'gpt-test', input: 'Weather in Paris?', tools: [weatherTool] })],
      ['streamed', () => client.responses.stream({ model: 'gpt-test', input: 'Weather in Paris?', tools: [weatherTool] }).finalResponse()],
      // A server that ignores `stream` and answers with one JSON body.
      ['whole answer to a stream', () => client.responses.stream({ model: 'gpt-test', input: 'Weather in Paris?', tools: [weatherTool] }).finalResponse()],
    ];
    for (const [way, ask] of answers) {
      upstream.reset();
      const idless = openAIReply({ toolCalls: [{ id: '', name: 'get_weather', arguments: '{"city":"Paris"}' }] });
      upstream.reply(
        way === 'whole answer to a stream' ? (request, response) => idless({ ...request, body: { ...request.body, stream: false } }, response) : idless,
      );
      upstream.reply(openAIReply({ text: 'Sunny.' }));
      const first = await ask();
      const call = first.output.find((item) => item.type === 'function_call');
      assert.ok(call?.type === 'function_call' && call.call_id !== '', `${way}: ${JSON.stringify(first.output)}`);

      await client.responses.create({
        model: 'gpt-test',
        previous_response_id: first.id,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: 'sunny' }],
        tools: [weatherTool],
      });
      const [assistant, tool] = upstream.modelRequests()[1]!.body.messages.slice(1);
      assert.equal(assistant.tool_calls[0].id, call.call_id, `${way}: the call goes back with the id the client got`);
      assert.equal(tool.tool_call_id, call.call_id, way);

      const retrieved = await client.responses.retrieve(first.id);
      assert.deepEqual(
        retrieved.output.map((item) => (item.type === 'function_call' ? item.call_id : item.type)),
        [call.call_id],
        way,
      );
    }
  });

  test("Codex's tools in an additional_tools item (a namespace with a custom and a function tool) go upstream as chat function tools, and their calls come back as Codex's items", async () => {
    upstream.reply(openAIReply({ toolCalls: codexToolCalls }), openAIReply({ toolCalls: codexToolCalls }), openAIReply({ text: 'One file.' }));
    await codexToolRoundTrip(client, 'gpt-5.5');
    const [first, streamed, second] = upstream.modelRequests().map((request) => request.body);
    const tools = first.tools as Array<{ type: string; function: { name: string; description?: string; parameters?: unknown } }>;
    assert.deepEqual(
      tools.map((tool) => tool.function.name),
      ['exec', 'functions__read_file', 'mcp__read_file'],
    );
    assert.match(tools[0]!.function.description!, /Runs a shell command\.[\s\S]*lark grammar:\nstart: \/\.\+\//);
    assert.deepEqual(tools[0]!.function.parameters, {
      type: 'object',
      properties: { input: { type: 'string', description: 'The whole input for the tool, as free text.' } },
      required: ['input'],
      additionalProperties: false,
    });
    assert.deepEqual(tools[1], {
      type: 'function',
      function: { name: 'functions__read_file', description: 'Reads a file', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
    });
    assert.deepEqual(streamed.tools, first.tools);
    assert.deepEqual(second.messages.slice(1), [
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_exec', type: 'function', function: { name: 'exec', arguments: '{"input":"ls -la"}' } },
          { id: 'call_mcp', type: 'function', function: { name: 'mcp__read_file', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_exec', content: 'README.md' },
      { role: 'tool', tool_call_id: 'call_mcp', content: 'nothing' },
    ]);
  });

  test('a client that hangs up on response.completed while the upstream still holds the stream open got a whole answer: the turn is ok', async () => {
    const turn = await hangUpOnCompleted(proxy, upstream, client, openAIReply({ text: 'All of it.' }));
    assert.equal(turn.outcome.result, 'ok');
    assert.equal(turn.outcome.response.text, 'All of it.');
  });

  test('a previous_response_id the proxy never gave is a 400 naming it, and nothing goes upstream', async () => {
    await assert.rejects(
      client.responses.create({ model: 'gpt-test', previous_response_id: 'resp_unknown', input: 'Hello?' }),
      (error: unknown) => error instanceof OpenAI.BadRequestError && error.param === 'previous_response_id' && /resp_unknown/.test(error.message),
    );
    assert.equal(upstream.modelRequests().length, 0);
  });

  test("bad input is refused in OpenAI's error shape with the field named, and changes nothing: no upstream request, no turn recorded", async () => {
    const session = { originator: 'codex_exec', 'session-id': 'bad-input-session' };
    const refused: Array<[OpenAI.Responses.ResponseCreateParamsNonStreaming, RegExp]> = [
      [{ model: 'gpt-test', input: [{ type: 'function_call_output', output: 'x' } as never] }, /input\.0\.call_id/],
      [{ model: 'gpt-test', input: 42 as never }, /input/],
      [{ model: 'gpt-test', input: 'Hello?', tools: [{ type: 'function' } as never] }, /tools\.0/],
      [{ model: 'gpt-test', previous_response_id: 'resp_never_given', input: 'Hello?' }, /resp_never_given/],
      [{ model: 'gpt-test', previous_response_id: '', input: 'Hello?' }, /^400 previous_response_id: must not be empty/],
    ];
    for (const [body, named] of refused) {
      await assert.rejects(client.responses.create(body, { headers: session }), (error: unknown) => {
        assert.ok(error instanceof OpenAI.BadRequestError, String(error));
        assert.equal(error.type, 'invalid_request_error');
        assert.match(error.message, named);
        return true;
      });
    }
    assert.equal(upstream.modelRequests().length, 0);
    upstream.reply(openAIReply({ text: 'Hello.' }));
    const { response } = await client.responses.create({ model: 'gpt-test', input: 'Hello?' }, { headers: session }).withResponse();
    const turn = await recordedTurn(proxy.url, response.headers.get('x-metaclaw-request-id')!);
    assert.equal(turn.session_id, 'bad-input-session');
    assert.equal(turn.seq, 1, 'the refused requests left no turn in the session');
  });

  test('a content part without its payload (text that is not a string, an image with neither URL nor file), a store, parallel_tool_calls, reasoning or text.format of the wrong type, tool parameters that are no object and a forced tool without its name are refused, naming the field; nothing goes upstream', async () => {
    const user = (part: Record<string, unknown>) => [{ type: 'message', role: 'user', content: [part] }] as never;
    const refused: Array<[OpenAI.Responses.ResponseCreateParamsNonStreaming, string]> = [
      [{ model: 'gpt-test', input: user({ type: 'input_text', text: 42 }) }, 'input.0.content.0.text'],
      [{ model: 'gpt-test', input: user({ type: 'input_text' }) }, 'input.0.content.0.text'],
      [{ model: 'gpt-test', input: user({ type: 'input_image', detail: 'auto' }) }, 'input.0.content.0'],
      [{ model: 'gpt-test', input: 'Hello?', store: 'no' as never }, 'store'],
      [{ model: 'gpt-test', input: 'Hello?', tools: [{ type: 'function', name: 'f', parameters: 'x' as never, strict: false }] }, 'tools.0.parameters'],
      [{ model: 'gpt-test', input: 'Hello?', tool_choice: { type: 'function' } as never }, 'tool_choice'],
      [{ model: 'gpt-test', input: 'Hello?', tool_choice: 'always' as never }, 'tool_choice'],
      [{ model: 'gpt-test', input: 'Hello?', parallel_tool_calls: 'x' as never }, 'parallel_tool_calls'],
      [{ model: 'gpt-test', input: 'Hello?', reasoning: 5 as never }, 'reasoning'],
      [{ model: 'gpt-test', input: 'Hello?', text: { format: 5 as never } }, 'text.format'],
    ];
    upstream.reset();
    for (const [body, field] of refused) {
      await assert.rejects(client.responses.create(body), (error: unknown) => {
        assert.ok(error instanceof OpenAI.BadRequestError, String(error));
        assert.equal(error.param, field);
        return true;
      });
    }
    assert.equal(upstream.modelRequests().length, 0);
  });

  test('a part a chat server cannot be sent (an image by file_id, a file by file_url, an unknown kind of part, an image in a developer message) is refused with a 400 naming it, never left out; nothing goes upstream, no turn is recorded and the refusal is listed in /status', async () => {
    const session = { originator: 'codex_exec', 'session-id': 'uncarried-parts-session' };
    const question = { type: 'input_text', text: 'What is in this picture?' };
    const message = (role: string, ...parts: Array<Record<string, unknown>>) => ({ type: 'message', role, content: parts });
    const refused: Array<[unknown[], string, RegExp]> = [
      [[message('user', question, { type: 'input_image', file_id: 'file-abc', detail: 'auto' })], 'input.0.content.1', /file_id.*image_url/],
      [[message('user', question, { type: 'input_file', file_url: 'https://example.com/report.pdf' })], 'input.0.content.1', /file_url/],
      [[message('user', question, { type: 'input_video', video_url: 'https://example.com/v.mp4' })], 'input.0.content.1', /input_video/],
      [
        [message('developer', { type: 'input_image', image_url: 'https://example.com/logo.png' }), message('user', question)],
        'input.0.content.0',
        /user message/,
      ],
    ];
    for (const [input, param, why] of refused) {
      let requestId = '';
      await assert.rejects(client.responses.create({ model: 'gpt-test', input: input as never }, { headers: session }), (error: unknown) => {
        assert.ok(error instanceof OpenAI.BadRequestError, String(error));
        assert.equal(error.type, 'invalid_request_error');
        assert.equal(error.code, 'unsupported_content_part');
        assert.equal(error.param, param);
        assert.match(error.message, why);
        requestId = error.headers?.get('x-metaclaw-request-id') ?? '';
        return true;
      });
      const { recorded, listed } = await refusalTrace(proxy.url, requestId);
      assert.equal(recorded, false);
      assert.equal(listed?.status, 400);
      assert.match(listed?.error ?? '', why);
    }
    assert.equal(upstream.modelRequests().length, 0, 'nothing went upstream');
    // What chat can carry goes as chat has it: an image by URL, a file by its id or its data.
    upstream.reply(openAIReply({ text: 'A cat and a report.' }));
    const { response } = await client.responses
      .create(
        {
          model: 'gpt-test',
          input: [
            message(
              'user',
              question,
              { type: 'input_image', image_url: 'https://example.com/cat.png', detail: 'auto' },
              { type: 'input_file', file_id: 'file-report', filename: 'report.pdf' },
            ),
          ] as never,
        },
        { headers: session },
      )
      .withResponse();
    assert.deepEqual(upstream.modelRequests()[0]!.body.messages, [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in this picture?' },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
          { type: 'file', file: { file_id: 'file-report', filename: 'report.pdf' } },
        ],
      },
    ]);
    const turn = await recordedTurn(proxy.url, response.headers.get('x-metaclaw-request-id')!);
    assert.equal(turn.session_id, 'uncarried-parts-session');
    assert.equal(turn.seq, 1, 'the refused requests left no turn in the session');
  });

  test('a conversation or a stored prompt, which only OpenAI keeps, is refused with a 400 naming it instead of answered without the history or the instructions it stands for; nothing goes upstream, no turn is recorded', async () => {
    const refused: Array<[Partial<OpenAI.Responses.ResponseCreateParamsNonStreaming>, string]> = [
      [{ conversation: 'conv_68e5f0e3c6b08190' }, 'conversation'],
      [{ conversation: { id: 'conv_68e5f0e3c6b08190' } }, 'conversation'],
      [{ prompt: { id: 'pmpt_68e5f0e3c6b08190', variables: { city: 'Paris' } } }, 'prompt'],
    ];
    for (const [fields, param] of refused) {
      let requestId = '';
      await assert.rejects(client.responses.create({ model: 'gpt-test', input: 'What did I ask before?', ...fields }), (error: unknown) => {
        assert.ok(error instanceof OpenAI.BadRequestError, String(error));
        assert.equal(error.code, 'unsupported_parameter');
        assert.equal(error.param, param);
        assert.match(error.message, /kept by OpenAI/);
        requestId = error.headers?.get('x-metaclaw-request-id') ?? '';
        return true;
      });
      assert.equal((await refusalTrace(proxy.url, requestId)).recorded, false);
    }
    assert.equal(upstream.modelRequests().length, 0, 'nothing went upstream');
  });

  test("a tool output's image reaches a chat upstream in a user message after the run of tool messages (a chat tool message holds text only), not dropped or refused", async () => {
    upstream.reply(openAIReply({ text: 'The button is blue.' }));
    const screenshot = 'data:image/png;base64,iVBORw0KGgo=';
    const response = await client.responses.create({
      model: 'gpt-test',
      input: [
        { type: 'message', role: 'user', content: 'Take a screenshot and read the page title.' },
        { type: 'function_call', call_id: 'call_shot', name: 'screenshot', arguments: '{}' },
        { type: 'function_call', call_id: 'call_title', name: 'title', arguments: '{}' },
        {
          type: 'function_call_output',
          call_id: 'call_shot',
          output: [
            { type: 'input_text', text: 'Screenshot taken.' },
            { type: 'input_image', image_url: screenshot },
          ],
        },
        { type: 'function_call_output', call_id: 'call_title', output: 'Checkout' },
      ] as never,
      tools: [
        { type: 'function', name: 'screenshot', parameters: { type: 'object', properties: {} }, strict: false },
        { type: 'function', name: 'title', parameters: { type: 'object', properties: {} }, strict: false },
      ],
    });
    assert.equal(response.output_text, 'The button is blue.');
    const messages = upstream.modelRequests().at(-1)!.body.messages as Array<Record<string, unknown>>;
    assert.deepEqual(
      messages.slice(1).map((message) => [message.role, message.content]),
      [
        ['assistant', null],
        ['tool', 'Screenshot taken.'],
        ['tool', 'Checkout'],
        ['user', [{ type: 'image_url', image_url: { url: screenshot } }]],
      ],
    );
  });

  test('a request without stream whose chat upstream streams anyway gets the one Responses object it asked for, not an event stream; the turn is recorded and can be continued', async () => {
    upstream.reply(streamingAnyway(openAIReply({ text: 'Bonjour, monde.', pieces: 3 })));
    const { data: response, response: http } = await client.responses.create({ model: 'gpt-test', input: 'Say hello in French.' }).withResponse();
    assert.match(http.headers.get('content-type') ?? '', /application\/json/);
    assert.equal(response.object, 'response');
    assert.match(response.id, /^resp_[0-9a-f]{24}$/);
    assert.equal(response.status, 'completed');
    assert.equal(response.output_text, 'Bonjour, monde.');
    const turn = await recordedTurn(proxy.url, http.headers.get('x-metaclaw-request-id')!);
    assert.equal(turn.outcome.result, 'ok');
    upstream.reply(openAIReply({ text: 'Salut.' }));
    await client.responses.create({ model: 'gpt-test', previous_response_id: response.id, input: 'Shorter?' });
    assert.deepEqual(
      upstream.modelRequests()[1]!.body.messages.map((message: { role: string }) => message.role),
      ['user', 'assistant', 'user'],
      'the collected answer was remembered for previous_response_id',
    );
  });

  test('a request without stream whose chat upstream streams anyway reports the usage of the stream’s usage chunk, in the answer, the record and the stored response', async () => {
    const withUsageChunk: Handler = (request, response) =>
      openAIReply({ text: 'Hallo.', usage: { input: 31, output: 5 } })(
        { ...request, body: { ...request.body, stream: true, stream_options: { include_usage: true } } },
        response,
      );
    upstream.reply(withUsageChunk);
    const { data: answer, response: http } = await client.responses.create({ model: 'gpt-test', input: 'Say hello in German.' }).withResponse();
    assert.equal(answer.output_text, 'Hallo.');
    assert.deepEqual(answer.usage, responsesUsage(31, 5));
    const turn = await recordedTurn(proxy.url, http.headers.get('x-metaclaw-request-id')!);
    assert.deepEqual(turn.outcome.usage, { input_tokens: 31, output_tokens: 5 });
    assert.deepEqual((await client.responses.retrieve(answer.id)).usage, answer.usage);
  });

  test('an upstream error reaches the SDK as its own error; a stream that breaks midway raises from responses.stream and from the event iterator', async () => {
    upstream.reply(
      errorReply(400, { error: { message: 'The model does not exist.', type: 'invalid_request_error', param: 'model', code: 'model_not_found' } }),
    );
    await assert.rejects(
      client.responses.create({ model: 'nope', input: 'Hi' }),
      (error: unknown) => error instanceof OpenAI.BadRequestError && /does not exist/.test(error.message),
    );

    upstream.reply(dropMidStream('openai', 'This answer will not finish.', 4));
    const seen: string[] = [];
    const broken = client.responses.stream({ model: 'gpt-test', input: 'Go on.' });
    broken.on('event', (event) => seen.push(event.type));
    await assert.rejects(broken.finalResponse(), /stream broke/);
    assert.ok(seen.includes('response.failed'), seen.join(' '));

    upstream.reply(dropMidStream('openai', 'This one neither.', 4));
    const events = await client.responses.create({ model: 'gpt-test', input: 'Go on.', stream: true });
    await assert.rejects(
      (async () => {
        for await (const _event of events) {
          // drain until the error event
        }
      })(),
      (error: unknown) => error instanceof OpenAI.APIError && /stream broke/.test(error.message),
    );
  });

  test('after a restart, previous_response_id and GET /v1/responses/{id} are served from the turn records in SQLite', async () => {
    upstream.reply(openAIReply({ toolCalls: [{ id: 'call_hills', name: 'count_hills', arguments: '{}' }] }), openAIReply({ text: 'Lisbon has seven hills.' }));
    const first = await client.responses.create({ model: 'gpt-test', input: 'How many hills has Lisbon?' });
    const second = await client.responses.create({
      model: 'gpt-test',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: 'call_hills', output: '7' }],
    });
    await proxy.stop();
    proxy = await startProxy({ home: proxy.home, port: proxy.port, config: config() });

    upstream.reply(openAIReply({ text: 'Porto is further north.' }));
    await client.responses.create({ model: 'gpt-test', previous_response_id: second.id, input: 'And Porto?' });
    assert.deepEqual(upstream.modelRequests().at(-1)!.body.messages, [
      { role: 'user', content: 'How many hills has Lisbon?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_hills', type: 'function', function: { name: 'count_hills', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_hills', content: '7' },
      { role: 'assistant', content: 'Lisbon has seven hills.' },
      { role: 'user', content: 'And Porto?' },
    ]);
    const retrieved = await client.responses.retrieve(second.id);
    assert.equal(retrieved.output_text, 'Lisbon has seven hills.');
    assert.equal(retrieved.previous_response_id, first.id);
  });

  test('a response made with store: false can still be named by previous_response_id: it is read from the turn records', async () => {
    upstream.reply(openAIReply({ text: 'Noted.' }), openAIReply({ text: 'Still noted.' }));
    const first = await client.responses.create({ model: 'gpt-test', input: 'Remember the number 42.', store: false });
    await client.responses.create({ model: 'gpt-test', previous_response_id: first.id, input: 'Which number?' });
    assert.deepEqual(upstream.modelRequests()[1]!.body.messages, [
      { role: 'user', content: 'Remember the number 42.' },
      { role: 'assistant', content: 'Noted.' },
      { role: 'user', content: 'Which number?' },
    ]);
  });

  test('count_tokens is estimated when the main upstream is not Anthropic', async () => {
    const anthropic = new Anthropic({ baseURL: proxy.url, apiKey: 'unused', maxRetries: 0 });
    const counted = await anthropic.messages.countTokens({
      model: 'any',
      system: 'You are a helpful assistant.',
      messages: [{ role: 'user', content: 'Count the tokens of this sentence, please, and then some more words.' }],
    });
    assert.ok(counted.input_tokens > 10 && counted.input_tokens < 60, String(counted.input_tokens));
    assert.equal(upstream.requests.length, 0, 'nothing was asked of the upstream');
  });
});

describe('Responses API clients in front of an Anthropic upstream', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let client: OpenAI;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    proxy = await startProxy({ config: { llm: { api_base: upstream.url, api_format: 'anthropic', api_key: 'sk-ant-upstream', default_max_tokens: 1000 } } });
    client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  test('a file by file_id or file_url, and audio, have no Messages form: refused with a 400 naming the part, nothing sent upstream', async () => {
    const ask = (part: Record<string, unknown>) =>
      [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Summarise this.' }, part] }] as never;
    const refused: Array<[Record<string, unknown>, RegExp]> = [
      [{ type: 'input_file', file_id: 'file-report' }, /file_data/],
      [{ type: 'input_file', file_url: 'https://example.com/report.pdf' }, /file_data/],
      [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }, /audio/],
      [{ type: 'input_image', file_id: 'file-abc' }, /file_id/],
    ];
    for (const [part, why] of refused) {
      await assert.rejects(client.responses.create({ model: 'claude-test', input: ask(part) }), (error: unknown) => {
        assert.ok(error instanceof OpenAI.BadRequestError, String(error));
        assert.equal(error.param, 'input.0.content.1');
        assert.match(error.message, why);
        return true;
      });
    }
    assert.equal(upstream.modelRequests().length, 0);
    upstream.reply(anthropicReply({ text: 'A short report.' }));
    await client.responses.create({
      model: 'claude-test',
      input: ask({ type: 'input_file', file_data: 'data:application/pdf;base64,JVBERi0x', filename: 'r.pdf' }),
    });
    const content = upstream.modelRequests()[0]!.body.messages[0].content;
    assert.deepEqual(content[1], { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0x' } });
  });

  test('a request without stream whose Anthropic upstream streams anyway gets one Responses object', async () => {
    upstream.reply(streamingAnyway(anthropicReply({ text: 'Bonjour.', usage: { input: 20, output: 4 } })));
    const { data: response, response: http } = await client.responses.create({ model: 'claude-test', input: 'Say hello in French.' }).withResponse();
    assert.match(http.headers.get('content-type') ?? '', /application\/json/);
    assert.equal(response.status, 'completed');
    assert.equal(response.output_text, 'Bonjour.');
    assert.equal(response.usage?.output_tokens, 4);
  });

  test('create and stream are translated to Messages and back', async () => {
    upstream.reply(anthropicReply({ text: 'Bonjour.', usage: { input: 20, output: 4 } }), anthropicReply({ text: 'A streamed answer.', pieces: 3 }));
    const response = await client.responses.create({ model: 'claude-test', instructions: 'Be brief.', input: 'Say hello in French.' });
    assert.equal(response.output_text, 'Bonjour.');
    assert.equal(response.usage?.input_tokens, 20);
    const sent = upstream.modelRequests()[0]!;
    assert.equal(sent.path, '/v1/messages');
    assert.equal(sent.headers['x-api-key'], 'sk-ant-upstream');
    assert.deepEqual(sent.body, {
      model: 'claude-test',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Say hello in French.' }] }],
      max_tokens: 1000,
      system: 'Be brief.',
    });

    const deltas: string[] = [];
    const stream = client.responses.stream({ model: 'claude-test', input: 'Stream please.', max_output_tokens: 64 });
    stream.on('response.output_text.delta', (event) => deltas.push(event.delta));
    const final = await stream.finalResponse();
    assert.equal(deltas.join(''), 'A streamed answer.');
    assert.equal(final.output_text, 'A streamed answer.');
    assert.equal(final.status, 'completed');
    assert.equal(upstream.modelRequests()[1]!.body.max_tokens, 64);
  });

  test('a function call round trip with previous_response_id: tool_use and tool_result pair up', async () => {
    upstream.reply(
      anthropicReply({ toolCalls: [{ id: 'toolu_weather', name: 'get_weather', arguments: '{"city":"Paris"}' }] }),
      anthropicReply({ text: '22°C.' }),
    );
    const first = await client.responses.stream({ model: 'claude-test', input: 'Weather in Paris?', tools: [weatherTool] }).finalResponse();
    const call = first.output.find((item) => item.type === 'function_call');
    assert.ok(call && call.type === 'function_call', JSON.stringify(first.output));
    assert.equal(call.call_id, 'toolu_weather');
    assert.equal(call.arguments, '{"city":"Paris"}');
    assert.equal(upstream.modelRequests()[0]!.body.tools[0].name, 'get_weather');

    const second = await client.responses.create({
      model: 'claude-test',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: '22°C' }],
      tools: [weatherTool],
    });
    assert.equal(second.output_text, '22°C.');
    assert.deepEqual(upstream.modelRequests()[1]!.body.messages, [
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_weather', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_weather', content: '22°C' }] },
    ]);
  });
  test("Codex's additional_tools item reaches Anthropic as tools, and tool_use blocks come back as custom_tool_call and namespaced function_call items", async () => {
    const toolUse = anthropicReply({ toolCalls: codexToolCalls });
    upstream.reply(toolUse, toolUse, anthropicReply({ text: 'One file.' }));
    await codexToolRoundTrip(client, 'claude-test');
    const [first, , second] = upstream.modelRequests().map((request) => request.body);
    assert.deepEqual(
      first.tools.map((tool: { name: string }) => tool.name),
      ['exec', 'functions__read_file', 'mcp__read_file'],
    );
    assert.deepEqual(first.tools[0].input_schema.required, ['input']);
    assert.deepEqual(second.messages.slice(1), [
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'call_exec', name: 'exec', input: { input: 'ls -la' } },
          { type: 'tool_use', id: 'call_mcp', name: 'mcp__read_file', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_exec', content: 'README.md' },
          { type: 'tool_result', tool_use_id: 'call_mcp', content: 'nothing' },
        ],
      },
    ]);
  });
});

describe('Responses API passed through to an upstream that serves it (llm.api_format: openai-responses)', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let client: OpenAI;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    proxy = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_format: 'openai-responses', api_key: 'sk-openai-upstream' } } });
    client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  test('a request without stream whose Responses upstream streams anyway gets the response its response.completed event carries; a stream without that event is a 502 in the Responses error shape', async () => {
    upstream.reply(streamingAnyway(responsesReply({ id: 'resp_upstream_streamed', text: 'Hi there.', usage: { input: 9, output: 3 } })));
    const { data: response, response: http } = await client.responses.create({ model: 'gpt-5', input: 'Hello' }).withResponse();
    assert.match(http.headers.get('content-type') ?? '', /application\/json/);
    assert.equal(response.id, 'resp_upstream_streamed');
    assert.equal(response.output_text, 'Hi there.');
    assert.equal(response.usage?.total_tokens, 12);
    const turn = await recordedTurn(proxy.url, http.headers.get('x-metaclaw-request-id')!);
    assert.equal(turn.outcome.result, 'ok');

    upstream.reply((_request, reply) => {
      reply.writeHead(200, { 'content-type': 'text/event-stream' });
      reply.end(
        `event: response.created\ndata: ${JSON.stringify({ type: 'response.created', sequence_number: 0, response: { id: 'resp_cut', object: 'response', status: 'in_progress', output: [] } })}\n\n`,
      );
    });
    await assert.rejects(client.responses.create({ model: 'gpt-5', input: 'Hello' }), (error: unknown) => {
      assert.ok(error instanceof OpenAI.InternalServerError, String(error));
      assert.equal(error.status, 502);
      assert.equal(error.code, 'upstream_invalid_body');
      assert.match(error.message, /asked for no stream.*ended before its final event/);
      return true;
    });
  });

  /** A whole Responses answer, as an upstream that ignores `stream` sends it. */
  function wholeResponse(id: string, output: object[], status = 'completed') {
    return {
      id,
      object: 'response',
      created_at: 1_700_000_000,
      status,
      model: 'gpt-5',
      output,
      error: null,
      incomplete_details: null,
      usage: responsesUsage(9, 3),
    };
  }

  /** `responses.create` with `stream: true`: every event the SDK yields, and the turn recorded for it. */
  async function streamedEvents(params: Omit<OpenAI.Responses.ResponseCreateParamsStreaming, 'stream'>) {
    const { data: stream, response } = await client.responses.create({ ...params, stream: true }).withResponse();
    assert.match(response.headers.get('content-type') ?? '', /text\/event-stream/);
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    assert.equal(upstream.modelRequests().at(-1)!.body.stream, true);
    assert.deepEqual(
      events.map((event) => event.sequence_number),
      events.map((_, index) => index),
      'numbered in order',
    );
    return { events, turn: await recordedTurn(proxy.url, response.headers.get('x-metaclaw-request-id')!) };
  }

  test('a stream request its Responses upstream answers with one JSON body gets that answer as the events the API streams: text deltas, then response.completed with the upstream’s own response (was the JSON relayed, which the SDK read as no events)', async () => {
    const message = {
      type: 'message',
      id: 'msg_upstream',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: 'Hi there.', annotations: [] }],
    };
    const whole = wholeResponse('resp_upstream_whole', [message]);
    upstream.reply((_request, response) => json(response, 200, whole));
    const { events, turn } = await streamedEvents({ model: 'gpt-5', input: 'Hello' });
    assert.deepEqual(
      events.map((event) => event.type),
      TEXT_ANSWER_EVENTS,
    );
    assert.equal(events.map((event) => (event.type === 'response.output_text.delta' ? event.delta : '')).join(''), 'Hi there.');
    const completed = events.at(-1)!;
    assert.ok(completed.type === 'response.completed');
    assert.deepEqual(completed.response, whole, 'the upstream’s response, its id and items kept');
    assert.equal(turn.outcome.result, 'ok');
    assert.equal(turn.outcome.response.text, 'Hi there.');
    assert.deepEqual(turn.outcome.usage, { input_tokens: 9, output_tokens: 3 });
  });

  test('a function call (after a reasoning item) in a Responses upstream’s JSON answer to a stream request streams as function_call_arguments events; the turn records the call', async () => {
    const reasoning = { type: 'reasoning', id: 'rs_upstream', summary: [], encrypted_content: 'opaque' };
    const call = { type: 'function_call', id: 'fc_upstream', call_id: 'call_7', name: 'get_weather', arguments: '{"city":"Oslo"}', status: 'completed' };
    const whole = wholeResponse('resp_upstream_call', [reasoning, call]);
    upstream.reply((_request, response) => json(response, 200, whole));
    const { events, turn } = await streamedEvents({ model: 'gpt-5', input: 'Weather in Oslo?', tools: [weatherTool] });
    const added = events.filter((event) => event.type === 'response.output_item.added').map((event) => event.item);
    assert.deepEqual(added, [reasoning, { ...call, arguments: '', status: 'in_progress' }]);
    const deltas = events.filter((event) => event.type === 'response.function_call_arguments.delta');
    assert.deepEqual(
      deltas.map((event) => [event.item_id, event.output_index, event.delta]),
      [['fc_upstream', 1, '{"city":"Oslo"}']],
    );
    const done = events.find((event) => event.type === 'response.function_call_arguments.done');
    assert.equal(done?.type === 'response.function_call_arguments.done' ? done.arguments : undefined, '{"city":"Oslo"}');
    const completed = events.at(-1)!;
    assert.ok(completed.type === 'response.completed');
    assert.deepEqual(completed.response.output, whole.output);
    assert.equal(turn.outcome.result, 'ok');
    assert.deepEqual(turn.outcome.response.tool_calls, [{ id: 'call_7', name: 'get_weather', arguments: '{"city":"Oslo"}' }]);
  });

  test('an image by file_id goes to an upstream that serves the Responses API as sent (its file store can resolve it)', async () => {
    upstream.reply(responsesReply({ id: 'resp_upstream_img', text: 'A cat.' }));
    const input = [{ type: 'message', role: 'user', content: [{ type: 'input_image', file_id: 'file-abc', detail: 'auto' }] }];
    const response = await client.responses.create({ model: 'gpt-5', input: input as never });
    assert.equal(response.output_text, 'A cat.');
    assert.deepEqual(upstream.modelRequests()[0]!.body.input, input);
  });

  test('bodies go to /v1/responses as sent, previous_response_id and reasoning items included; answers come back unchanged and are recorded', async () => {
    upstream.reply(
      responsesReply({ id: 'resp_upstream_1', text: 'Hi there.' }),
      responsesReply({ id: 'resp_upstream_2', toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Oslo"}' }] }),
    );
    const { data: first, response } = await client.responses.create({ model: 'gpt-5', input: 'Hello', store: true }).withResponse();
    assert.equal(first.id, 'resp_upstream_1');
    assert.equal(first.output_text, 'Hi there.');
    const sent = upstream.modelRequests()[0]!;
    assert.equal(sent.path, '/v1/responses');
    assert.equal(sent.headers['authorization'], 'Bearer sk-openai-upstream');
    assert.deepEqual(sent.body, { model: 'gpt-5', input: 'Hello', store: true });

    const reasoning = { type: 'reasoning' as const, id: 'rs_1', summary: [], encrypted_content: 'opaque' };
    const types: string[] = [];
    const stream = client.responses.stream({
      model: 'gpt-5',
      previous_response_id: first.id,
      input: [reasoning, { role: 'user', content: 'Weather in Oslo?' }],
      tools: [weatherTool],
    });
    stream.on('event', (event) => types.push(event.type));
    const second = await stream.finalResponse();
    assert.deepEqual(upstream.modelRequests()[1]!.body.input, [reasoning, { role: 'user', content: 'Weather in Oslo?' }]);
    assert.equal(upstream.modelRequests()[1]!.body.previous_response_id, 'resp_upstream_1');
    assert.deepEqual(upstream.modelRequests()[1]!.body.tools, [weatherTool], 'tools pass unchanged');
    assert.equal(second.id, 'resp_upstream_2');
    assert.ok(types.includes('response.function_call_arguments.delta'));
    assert.equal(second.output[0]?.type === 'function_call' ? second.output[0].call_id : undefined, 'call_1');

    upstream.reply(responsesReply({ id: 'resp_upstream_3', text: 'Oslo: 4°C.' }));
    const output = { type: 'function_call_output' as const, call_id: 'call_1', output: '{"celsius":4}' };
    const third = await client.responses.create({ model: 'gpt-5', previous_response_id: second.id, input: [output], tools: [weatherTool] });
    assert.equal(third.output_text, 'Oslo: 4°C.');
    assert.deepEqual(upstream.modelRequests()[2]!.body, { model: 'gpt-5', previous_response_id: 'resp_upstream_2', input: [output], tools: [weatherTool] });

    const turn = await recordedTurn(proxy.url, response.headers.get('x-metaclaw-request-id')!);
    assert.equal(turn.received.format, 'responses');
    assert.equal(turn.forwarded.format, 'responses');
    assert.equal(turn.outcome.response.text, 'Hi there.');
    const retrieved = await client.responses.retrieve('resp_upstream_1');
    assert.equal(retrieved.output_text, 'Hi there.');
  });

  test("Codex's own fields (store: false, include, prompt_cache_key, client_metadata, namespace tools) and its session headers reach the upstream as sent", async () => {
    upstream.reply(responsesReply({ id: 'resp_upstream_codex', text: 'Hello.' }));
    const body = {
      model: 'gpt-5',
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'You are a coding agent running in the Codex CLI.' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'say hello' }] },
      ],
      tools: [{ type: 'namespace', name: 'multi_agent_v1', description: 'Sub-agents.', tools: [] }, { type: 'web_search' }],
      tool_choice: 'auto',
      parallel_tool_calls: true,
      reasoning: { summary: 'auto' },
      store: false,
      include: ['reasoning.encrypted_content'],
      prompt_cache_key: 'thread-1',
      client_metadata: { session_id: 'thread-1', turn_id: 'turn-1' },
    };
    const codexHeaders = { originator: 'codex_exec', 'session-id': 'thread-1', 'thread-id': 'thread-1', 'x-client-request-id': 'thread-1' };
    const response = await client.responses.create(body as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming, { headers: codexHeaders });
    assert.equal(response.output_text, 'Hello.');
    const sent = upstream.modelRequests()[0]!;
    assert.deepEqual(sent.body, body);
    for (const [name, value] of Object.entries(codexHeaders)) assert.equal(sent.headers[name], value, name);

    // What only OpenAI keeps (a conversation, a stored prompt) is the business of an upstream that serves the API: it goes as sent.
    upstream.reply(responsesReply({ id: 'resp_upstream_conversation', text: 'You asked about Paris.' }));
    const kept = { model: 'gpt-5', input: 'What did I ask?', conversation: 'conv_68e5f0e3c6b08190', prompt: { id: 'pmpt_68e5f0e3c6b08190' } };
    assert.equal((await client.responses.create(kept)).output_text, 'You asked about Paris.');
    assert.deepEqual(upstream.modelRequests()[1]!.body, kept);
  });

  test('a client that hangs up on a relayed response.completed while the upstream still holds the stream open got a whole answer: the turn is ok', async () => {
    const turn = await hangUpOnCompleted(proxy, upstream, client, responsesReply({ id: 'resp_upstream_held', text: 'All of it.' }));
    assert.equal(turn.outcome.result, 'ok');
    assert.equal(turn.outcome.response.text, 'All of it.');
  });

  test('a passed-through stream that breaks midway ends with an error event the SDK raises', async () => {
    upstream.reply((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const created = {
        type: 'response.created',
        sequence_number: 0,
        response: { id: 'resp_cut', object: 'response', created_at: 1, status: 'in_progress', model: 'gpt-5', output: [] },
      };
      response.write(`event: response.created\ndata: ${JSON.stringify(created)}\n\n`);
      setTimeout(() => response.socket?.destroy(), 20);
    });
    await assert.rejects(client.responses.stream({ model: 'gpt-5', input: 'Hi' }).finalResponse(), /stream broke/);
  });

  test('chat completions requests still go to /chat/completions on that upstream', async () => {
    upstream.reply(openAIReply({ text: 'Chat answer.' }));
    const completion = await client.chat.completions.create({ model: 'gpt-5', messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(completion.choices[0]?.message.content, 'Chat answer.');
    assert.equal(upstream.modelRequests()[0]!.path, '/v1/chat/completions');
  });
});

describe('Responses API turns get the same context, sessions and records as the other routes', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let client: OpenAI;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    const home = await homeWithStarterSkills();
    proxy = await startProxy({ home, config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' } } });
    client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  test('the skills block is appended to the instructions; the turn is recorded as a responses turn of the session Codex names', async () => {
    const { response } = await client.responses
      .create(
        { model: 'm', instructions: 'You are Codex.', input: GIT_QUESTION },
        { headers: { originator: 'codex_cli_rs', 'session-id': 'codex-session-1', 'thread-id': 'codex-thread-1' } },
      )
      .withResponse();
    const system = upstream.modelRequests()[0]!.body.messages[0];
    assert.equal(system.role, 'system');
    assert.ok(system.content.startsWith('You are Codex.\n\n<metaclaw-context>'), system.content.slice(0, 80));
    assert.match(system.content, /git-commit-hygiene/);

    const turn = await recordedTurn(proxy.url, response.headers.get('x-metaclaw-request-id')!);
    assert.equal(turn.session_id, 'codex-session-1');
    assert.equal(turn.received.format, 'responses');
    assert.equal(turn.received.user_request, GIT_QUESTION);
    assert.equal(turn.received.body.instructions, 'You are Codex.', 'the record keeps the request as received');
    assert.equal(turn.forwarded.format, 'openai');
    assert.ok(turn.added.sections.some((section: { provider: string }) => section.provider === 'skills'));

    const { response: second } = await client.responses
      .create({ model: 'm', input: 'hello', client_metadata: { session_id: 'codex-session-2' } } as OpenAI.Responses.ResponseCreateParamsNonStreaming, {
        headers: { originator: 'codex_cli_rs' },
      })
      .withResponse();
    assert.equal((await recordedTurn(proxy.url, second.headers.get('x-metaclaw-request-id')!)).session_id, 'codex-session-2');
  });

  test('without session headers, responses chained by previous_response_id are one session, and the user request is the newest user words', async () => {
    const { data: first, response: firstResponse } = await client.responses.create({ model: 'm', input: 'Plan a trip to Lisbon.' }).withResponse();
    const { response: secondResponse } = await client.responses
      .create({ model: 'm', previous_response_id: first.id, input: [{ role: 'user', content: [{ type: 'input_text', text: 'Now add a day in Porto.' }] }] })
      .withResponse();
    const firstTurn = await recordedTurn(proxy.url, firstResponse.headers.get('x-metaclaw-request-id')!);
    const secondTurn = await recordedTurn(proxy.url, secondResponse.headers.get('x-metaclaw-request-id')!);
    assert.equal(secondTurn.session_id, firstTurn.session_id);
    assert.equal(secondTurn.received.user_request, 'Now add a day in Porto.');
    assert.equal(secondTurn.received.body.previous_response_id, first.id);
  });
});

describe('Responses API sessions are learned from', () => {
  test('at session end the evolver reads the Responses session: the request, the function call, its output and the answer', async () => {
    const upstream = await ScriptedUpstream.start();
    upstream.defaultHandler = learningAwareUpstream({ evolver: () => JSON.stringify({ changes: [] }) });
    const proxy = await startProxy({
      config: { memory: { enabled: false }, llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, skills: { evolution_every_n_turns: 0 } },
    });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      upstream.reply(
        openAIReply({ toolCalls: [{ id: 'call_weather', name: 'get_weather', arguments: '{"city":"Paris"}' }] }),
        openAIReply({ text: 'It is 22°C in Paris.' }),
      );
      const session = { originator: 'codex_cli_rs', 'session-id': 'codex-learning' };
      const first = await client.responses.create({ model: 'm', input: 'What is the weather in Paris?', tools: [weatherTool] }, { headers: session });
      await client.responses.create(
        { model: 'm', previous_response_id: first.id, input: [{ type: 'function_call_output', call_id: 'call_weather', output: '22°C, sunny' }] },
        { headers: { ...session, 'x-session-done': 'true' } },
      );
      const evolverCall = await waitFor(() => upstream.modelRequests().find(isEvolverCall), 20_000);
      const transcript = userText(evolverCall);
      assert.match(transcript, /user: What is the weather in Paris\?/);
      assert.match(transcript, /tool call: get_weather\(\{"city":"Paris"\}\)/);
      assert.match(transcript, /tool result: 22°C, sunny/);
      assert.match(transcript, /assistant: It is 22°C in Paris\./);
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test("at session end the evolver reads Codex's freeform tool too: the exec call and its custom_tool_call_output", async () => {
    const upstream = await ScriptedUpstream.start();
    upstream.defaultHandler = learningAwareUpstream({ evolver: () => JSON.stringify({ changes: [] }) });
    const proxy = await startProxy({
      config: { memory: { enabled: false }, llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, skills: { evolution_every_n_turns: 0 } },
    });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      upstream.reply(openAIReply({ toolCalls: [codexToolCalls[0]!] }), openAIReply({ text: 'There is one file, README.md.' }));
      const session = { originator: 'codex_cli_rs', 'session-id': 'codex-freeform' };
      const input: OpenAI.Responses.ResponseInputItem[] = [codexToolsItem, { role: 'user', content: 'List the files.' }];
      await client.responses.create({ model: 'm', input }, { headers: session });
      await client.responses.create(
        { model: 'm', input: [...input, codexCallsAndOutputs[0]!, codexCallsAndOutputs[2]!] },
        { headers: { ...session, 'x-session-done': 'true' } },
      );
      const transcript = userText(await waitFor(() => upstream.modelRequests().find(isEvolverCall), 20_000));
      assert.match(transcript, /user: List the files\./);
      assert.match(transcript, /tool result: README\.md/);
      assert.match(transcript, /assistant: There is one file, README\.md\./);
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });
});

describe('the turn journal keeps Responses API turns', () => {
  test('a journaled Responses stream is rebuilt with its response id, so previous_response_id finds it after a crash', () => {
    const event = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
    const answer =
      event('response.created', { sequence_number: 0, response: { id: 'resp_journaled', status: 'in_progress', model: 'm', output: [] } }) +
      event('response.output_text.delta', { sequence_number: 1, item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'Hi' }) +
      event('response.completed', {
        sequence_number: 2,
        response: {
          id: 'resp_journaled',
          status: 'completed',
          model: 'm',
          output: [{ type: 'message', id: 'msg_1', role: 'assistant', content: [{ type: 'output_text', text: 'Hi' }] }],
          usage: { input_tokens: 3, output_tokens: 1 },
        },
      });
    const turn = turnFromJournal(journalHeader({}), Buffer.from('{"model":"m","input":"hello","stream":true}'), Buffer.from(answer));
    assert.equal(turn?.clientFormat, 'responses');
    assert.equal(turn?.outcome, 'ok');
    assert.equal(turn?.response?.id, 'resp_journaled');
    assert.equal(turn?.response?.text, 'Hi');
  });

  test('a policy-served turn whose journaled token ids do not parse is still recovered, as text without them; ids that parse are kept', () => {
    const request = Buffer.from('{"model":"m","messages":[{"role":"user","content":"hello"}]}');
    const answer = Buffer.from(
      JSON.stringify({
        id: 'chatcmpl-1',
        object: 'chat.completion',
        created: 1,
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'stop' }],
      }),
    );
    const policy = {
      turnId: 'req_0190000000000000000000aa',
      sessionId: 'codex-session',
      promptTokens: [1, 2, 3],
      response: { tokens: [4, 5], logprobs: [-0.5, -0.25], stopReason: 'stop' },
      policyVersion: 'step-0001',
      trainable: true,
    };
    const chat = { clientFormat: 'openai', stream: false, lineage: 'default|openai|m' };

    const broken = turnFromJournal(journalHeader({ ...chat, policy: { ...policy, promptTokens: [1, -2, 3] } }), request, answer);
    assert.ok(broken, 'the turn is recovered');
    assert.equal(broken.outcome, 'ok');
    assert.equal(broken.response?.text, 'Hi');
    assert.equal(broken.policy, undefined, 'without the ids that do not parse');

    const kept = turnFromJournal(journalHeader({ ...chat, policy }), request, answer);
    assert.deepEqual(kept?.policy, policy);
  });
});

describe('count_tokens and embeddings pass through to the upstream that has them', () => {
  let anthropicUpstream: ScriptedUpstream;
  let openaiUpstream: ScriptedUpstream;
  let proxy: ProxyHandle;

  before(async () => {
    anthropicUpstream = await ScriptedUpstream.start();
    openaiUpstream = await ScriptedUpstream.start();
    proxy = await startProxy({
      config: {
        llm: {
          api_base: anthropicUpstream.url,
          api_format: 'anthropic',
          api_key: 'sk-ant-upstream',
          fallbacks: [{ api_base: `${openaiUpstream.url}/v1`, api_key: 'sk-openai-fallback' }],
        },
      },
    });
  });
  after(async () => {
    await proxy?.dispose();
    await anthropicUpstream?.close();
    await openaiUpstream?.close();
  });

  test('messages.countTokens is answered by the Anthropic upstream, with its key and the client beta header', async () => {
    anthropicUpstream.reply((_request, response) => json(response, 200, { input_tokens: 42 }));
    const anthropic = new Anthropic({ baseURL: proxy.url, apiKey: 'unused', maxRetries: 0 });
    const counted = await anthropic.messages.countTokens(
      { model: 'claude-test', messages: [{ role: 'user', content: 'How many tokens is this?' }] },
      { headers: { 'anthropic-beta': 'token-counting-2024-11-01' } },
    );
    assert.equal(counted.input_tokens, 42);
    const sent = anthropicUpstream.requests[0]!;
    assert.equal(sent.path, '/v1/messages/count_tokens');
    assert.equal(sent.headers['x-api-key'], 'sk-ant-upstream');
    assert.equal(sent.headers['anthropic-beta'], 'token-counting-2024-11-01');
    assert.deepEqual(sent.body, { model: 'claude-test', messages: [{ role: 'user', content: 'How many tokens is this?' }] });
    await assert.rejects(
      anthropic.messages.countTokens({ model: 'claude-test', messages: [] }),
      (error: unknown) => error instanceof Anthropic.BadRequestError && /messages/.test(error.message),
    );
  });

  test('embeddings.create goes to the OpenAI-compatible upstream as sent, and /status counts both', async () => {
    openaiUpstream.reply((_request, response) =>
      json(response, 200, {
        object: 'list',
        data: [
          { object: 'embedding', index: 0, embedding: [0.1, 0.2] },
          { object: 'embedding', index: 1, embedding: [0.3, 0.4] },
        ],
        model: 'text-embedding-test',
        usage: { prompt_tokens: 4, total_tokens: 4 },
      }),
    );
    const openai = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const embedded = await openai.embeddings.create({ model: 'text-embedding-test', input: ['first', 'second'], encoding_format: 'float' });
    assert.deepEqual(
      embedded.data.map((item) => item.embedding),
      [
        [0.1, 0.2],
        [0.3, 0.4],
      ],
    );
    const sent = openaiUpstream.requests[0]!;
    assert.equal(sent.path, '/v1/embeddings');
    assert.equal(sent.headers['authorization'], 'Bearer sk-openai-fallback');
    assert.deepEqual(sent.body, { model: 'text-embedding-test', input: ['first', 'second'], encoding_format: 'float' });
    const status = (await (await fetch(`${proxy.url}/status`)).json()) as { requests: { passed_through: { count_tokens: number; embeddings: number } } };
    assert.deepEqual(status.requests.passed_through, { count_tokens: 1, embeddings: 1 });
  });
});
