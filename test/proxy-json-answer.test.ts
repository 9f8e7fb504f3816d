import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import { anthropicReply, ScriptedUpstream, type Handler } from './support/upstream.js';
import { recordedTurn, startProxy, type ProxyHandle } from './support/proxy.js';

/**
 * Structured output asked of an Anthropic upstream through the proxy: a JSON Schema is enforced as
 * a forced tool and its call comes back as the answer's text; JSON mode, and a schema next to the
 * client's own tools, are a system instruction.
 */

const schema = {
  type: 'object',
  properties: { city: { type: 'string' }, celsius: { type: 'number' } },
  required: ['city', 'celsius'],
  additionalProperties: false,
};
const answer = { city: 'Paris', celsius: 22 };
const ANSWER_JSON = JSON.stringify(answer);
/** `weather report.v1` is no Anthropic tool name: it goes as `weather_report_v1`. */
const TOOL_NAME = 'weather_report_v1';
const responseFormat = { type: 'json_schema' as const, json_schema: { name: 'weather report.v1', schema, strict: true } };
const forcedCall = () => anthropicReply({ toolCalls: [{ id: 'toolu_json', name: TOOL_NAME, arguments: ANSWER_JSON }] });
/** The upstream answers as if `stream` said `stream`, whatever it says (some servers do). */
const answeringAsIf =
  (stream: boolean) =>
  (reply: Handler): Handler =>
  (request, response) =>
    reply({ ...request, body: { ...request.body, stream } }, response);
const weatherTool: OpenAI.Chat.Completions.ChatCompletionTool = {
  type: 'function',
  function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
};

describe('structured output towards an Anthropic upstream', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let client: OpenAI;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    // Nothing recalled or injected: the system prompt the upstream gets is the client's and the translation's alone.
    proxy = await startProxy({
      config: {
        llm: { api_base: upstream.url, api_format: 'anthropic', api_key: 'sk-ant-upstream', model_id: 'claude-upstream' },
        skills: { enabled: false },
        memory: { enabled: false },
      },
    });
    client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  /** What the upstream was asked for: the forced tool, and nothing the client did not send. */
  function assertForcedTool(sent: Record<string, unknown>): void {
    assert.deepEqual(sent['tools'], [
      {
        name: TOOL_NAME,
        description: 'Give your answer by calling this tool: its input is your whole answer, as the JSON the user asked for.',
        input_schema: schema,
      },
    ]);
    assert.deepEqual(sent['tool_choice'], { type: 'tool', name: TOOL_NAME, disable_parallel_tool_use: true });
    assert.equal(sent['response_format'], undefined);
    assert.equal(sent['system'], undefined, 'an enforced schema needs no instruction');
  }

  test('chat json_schema, not streamed: the upstream gets a forced tool, the client the JSON as content, finish_reason stop, and the turn is recorded so', async () => {
    upstream.reply(forcedCall());
    const { data: completion, response } = await client.chat.completions
      .create({ model: 'gpt-client', messages: [{ role: 'user', content: 'Weather in Paris?' }], response_format: responseFormat })
      .withResponse();
    assertForcedTool(upstream.modelRequests()[0]!.body);
    const choice = completion.choices[0]!;
    assert.equal(choice.message.content, ANSWER_JSON);
    assert.deepEqual(JSON.parse(choice.message.content), answer);
    assert.equal(choice.message.tool_calls, undefined);
    assert.equal(choice.finish_reason, 'stop');
    const turn = await recordedTurn(proxy.url, response.headers.get('x-metaclaw-request-id')!);
    assert.deepEqual(turn.outcome.response, { text: ANSWER_JSON, tool_calls: [], finish_reason: 'stop' }, 'the record holds what the client got');
  });

  test('chat json_schema, streamed: the tool input arrives as content deltas, piece by piece, finish_reason stop, and is recorded as text', async () => {
    upstream.reply(forcedCall());
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'gpt-client', messages: [{ role: 'user', content: 'Weather in Paris?' }], response_format: responseFormat, stream: true })
      .withResponse();
    const deltas: string[] = [];
    const finishReasons: string[] = [];
    let toolCalls = 0;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (choice?.delta.content) deltas.push(choice.delta.content);
      if (choice?.finish_reason) finishReasons.push(choice.finish_reason);
      toolCalls += choice?.delta.tool_calls?.length ?? 0;
    }
    assertForcedTool(upstream.modelRequests()[0]!.body);
    assert.ok(deltas.length >= 2, `the JSON streams as it comes: ${JSON.stringify(deltas)}`);
    assert.equal(deltas.join(''), ANSWER_JSON);
    assert.equal(toolCalls, 0);
    assert.deepEqual(finishReasons, ['stop']);
    const turn = await recordedTurn(proxy.url, response.headers.get('x-metaclaw-request-id')!);
    assert.deepEqual(turn.outcome.response, { text: ANSWER_JSON, tool_calls: [], finish_reason: 'stop' });
  });

  test('an upstream that ignores `stream` (one JSON body to a stream request, a stream to a request for none): the client still gets the JSON as content', async () => {
    upstream.reply(answeringAsIf(false)(forcedCall()), answeringAsIf(true)(forcedCall()));
    const streamed = await client.chat.completions
      .stream({ model: 'gpt-client', messages: [{ role: 'user', content: 'Weather in Paris?' }], response_format: responseFormat })
      .finalChatCompletion();
    assert.equal(streamed.choices[0]!.message.content, ANSWER_JSON);
    assert.deepEqual(streamed.choices[0]!.message.tool_calls ?? [], []);
    assert.equal(streamed.choices[0]!.finish_reason, 'stop');
    const whole = await client.chat.completions.create({
      model: 'gpt-client',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      response_format: responseFormat,
    });
    assert.equal(whole.choices[0]!.message.content, ANSWER_JSON);
    assert.equal(whole.choices[0]!.message.tool_calls, undefined);
    assert.equal(whole.choices[0]!.finish_reason, 'stop');
  });

  test('Responses text.format json_schema, created and streamed: output_text is the JSON', async () => {
    upstream.reply(forcedCall(), forcedCall());
    const text = { format: { type: 'json_schema' as const, name: 'weather report.v1', schema, strict: true } };
    const response = await client.responses.create({ model: 'claude-test', input: 'Weather in Paris?', text });
    assertForcedTool(upstream.modelRequests()[0]!.body);
    assert.equal(response.status, 'completed');
    assert.equal(response.output_text, ANSWER_JSON);
    assert.deepEqual(
      response.output.map((item) => item.type),
      ['message'],
    );

    const deltas: string[] = [];
    const stream = client.responses.stream({ model: 'claude-test', input: 'Weather in Paris?', text });
    stream.on('response.output_text.delta', (event) => deltas.push(event.delta));
    const final = await stream.finalResponse();
    assertForcedTool(upstream.modelRequests()[1]!.body);
    assert.ok(deltas.length >= 2, JSON.stringify(deltas));
    assert.equal(deltas.join(''), ANSWER_JSON);
    assert.equal(final.output_text, ANSWER_JSON);
    assert.deepEqual(
      final.output.map((item) => item.type),
      ['message'],
    );
  });

  test('chat json_object: the system prompt asks for one JSON object, and no tool is added', async () => {
    upstream.reply(anthropicReply({ text: ANSWER_JSON }));
    const completion = await client.chat.completions.create({
      model: 'gpt-client',
      messages: [
        { role: 'system', content: 'You report weather.' },
        { role: 'user', content: 'Weather in Paris?' },
      ],
      response_format: { type: 'json_object' },
    });
    const sent = upstream.modelRequests()[0]!.body;
    assert.equal(sent.system, 'You report weather.\n\nAnswer with one JSON object and nothing else: no other text, no Markdown code fence.');
    assert.equal(sent.tools, undefined);
    assert.equal(sent.tool_choice, undefined);
    assert.equal(completion.choices[0]!.message.content, ANSWER_JSON);
  });

  test("json_schema next to the client's tools: its tools and tool_choice go unchanged, the schema as an instruction, and their calls stay calls", async () => {
    upstream.reply(anthropicReply({ toolCalls: [{ id: 'toolu_w', name: 'get_weather', arguments: '{"city":"Paris"}' }] }));
    const completion = await client.chat.completions.create({
      model: 'gpt-client',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [weatherTool],
      tool_choice: 'auto',
      response_format: responseFormat,
    });
    const sent = upstream.modelRequests()[0]!.body;
    assert.deepEqual(sent.tools, [{ name: 'get_weather', description: 'Weather for a city', input_schema: weatherTool.function.parameters }]);
    assert.deepEqual(sent.tool_choice, { type: 'auto' });
    assert.equal(
      sent.system,
      `When you give your final answer (not a tool call), give it as one JSON value that matches this JSON Schema, and nothing else (no other text, no Markdown code fence):\n${JSON.stringify(schema)}`,
    );
    const choice = completion.choices[0]!;
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.deepEqual(
      choice.message.tool_calls?.map((call) => (call.type === 'function' ? [call.function.name, call.function.arguments] : [])),
      [['get_weather', '{"city":"Paris"}']],
    );
  });
  test('json_schema with Anthropic thinking on (no forced tool allowed then): the schema goes as an instruction, thinking as sent', async () => {
    upstream.reply(anthropicReply({ text: ANSWER_JSON }));
    const thinking = { type: 'enabled', budget_tokens: 1024 };
    const completion = await client.chat.completions.create({
      model: 'gpt-client',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      response_format: responseFormat,
      thinking,
    } as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
    const sent = upstream.modelRequests()[0]!.body;
    assert.deepEqual(sent.thinking, thinking);
    assert.equal(sent.tools, undefined);
    assert.equal(sent.tool_choice, undefined);
    assert.match(sent.system, /^Answer with one JSON value that matches this JSON Schema/);
    assert.equal(completion.choices[0]!.message.content, ANSWER_JSON);
  });
});
