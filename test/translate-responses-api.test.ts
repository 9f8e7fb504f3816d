import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import OpenAI from 'openai';
import { encodeSse, SseParser } from '../src/upstream/sse.js';
import type { SseEvent } from '../src/upstream/sse.js';
import {
  AnthropicToResponsesStream,
  assembleResponsesResponse,
  assembleStream,
  OpenAIToAnthropicStream,
  OpenAIToResponsesStream,
  openAIResponseToResponses,
  responsesRequestToOpenAI,
  translateRequest,
} from '../src/upstream/translate/index.js';

/** The Responses API translation both ways, read back by the `openai` SDK's own Responses stream. */

const CONTEXT = { responseId: 'resp_0123456789abcdef01234567', request: { model: 'gpt-test' } };

function translate(upstreamText: string, translator: { push(event: SseEvent): string; finish(): string }): string {
  const parser = new SseParser();
  let out = '';
  for (const event of [...parser.push(upstreamText), ...parser.end()]) out += translator.push(event);
  return out + translator.finish();
}

function sdkServing(body: string): OpenAI {
  const fetch = async () => new Response(body, { headers: { 'content-type': 'text/event-stream' } });
  return new OpenAI({ apiKey: 'test', fetch, maxRetries: 0 });
}

function chunk(delta: Record<string, unknown>, finishReason: string | null = null): Record<string, unknown> {
  return { id: 'chatcmpl-7', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta, finish_reason: finishReason }] };
}

function chatStream(chunks: Array<Record<string, unknown>>, usage = { prompt_tokens: 30, completion_tokens: 12, total_tokens: 42 }): string {
  const last = { id: 'chatcmpl-7', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [], usage };
  return [...chunks, last].map((value) => encodeSse(JSON.stringify(value))).join('') + encodeSse('[DONE]');
}

const ANSWER_START = [
  chunk({ role: 'assistant', content: '' }),
  chunk({ reasoning_content: 'Need weather.' }),
  chunk({ content: 'Checking ' }),
  chunk({ content: 'now.' }),
];
const FIRST_CALL = chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city"' } }] });
const FIRST_CALL_REST = chunk({ tool_calls: [{ index: 0, function: { arguments: ':"Paris"}' } }] });
const SECOND_CALL = chunk({ tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{}' } }] });

/** Some chat servers interleave the fragments of parallel calls. */
const CHAT_UPSTREAM = chatStream([...ANSWER_START, FIRST_CALL, SECOND_CALL, FIRST_CALL_REST, chunk({}, 'tool_calls')]);
const CHAT_UPSTREAM_IN_ORDER = chatStream([...ANSWER_START, FIRST_CALL, FIRST_CALL_REST, SECOND_CALL, chunk({}, 'tool_calls')]);

/** The SDK's finalResponse adds its own parse results (`parsed`, `parsed_arguments`). */
function withoutParsed(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (key, inner: unknown) => (key === 'parsed' || key === 'parsed_arguments' ? undefined : inner)));
}

const EXPECTED_OUTPUT = [
  { type: 'reasoning', id: 'rs_0123456789abcdef01234567', summary: [], content: [{ type: 'reasoning_text', text: 'Need weather.' }] },
  {
    type: 'message',
    id: 'msg_0123456789abcdef01234567',
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text: 'Checking now.', annotations: [], logprobs: [] }],
  },
  { type: 'function_call', id: 'fc_0123456789abcdef01234567', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' },
  { type: 'function_call', id: 'fc_0123456789abcdef01234567_1', call_id: 'call_2', name: 'get_time', arguments: '{}', status: 'completed' },
];

describe('responsesRequestToOpenAI', () => {
  it('turns a Codex-style request into chat messages: developer text, user parts, assistant text merged with its calls, outputs as tool messages', () => {
    const chat = responsesRequestToOpenAI(
      {
        model: 'gpt-5',
        instructions: 'You are a coding agent.',
        input: [
          { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Sandbox: read-only.' }] },
          {
            type: 'message',
            role: 'user',
            content: [
              { type: 'input_text', text: '<environment_context>cwd</environment_context>' },
              { type: 'input_text', text: 'Look at this.' },
              { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'high' },
            ],
          },
          { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'thinking' }], encrypted_content: 'opaque' },
          { type: 'message', role: 'assistant', id: 'msg_1', content: [{ type: 'output_text', text: 'Let me look.', annotations: [] }] },
          { type: 'function_call', id: 'fc_1', call_id: 'call_a', name: 'shell', arguments: '{"cmd":"ls"}' },
          { type: 'function_call', id: 'fc_2', call_id: 'call_b', name: 'shell', arguments: '{"cmd":"pwd"}' },
          { type: 'function_call_output', call_id: 'call_a', output: 'a.txt' },
          { type: 'function_call_output', call_id: 'call_b', output: [{ type: 'input_text', text: '/work' }] },
          { type: 'item_reference', id: 'msg_0' },
        ],
        tools: [
          { type: 'function', name: 'shell', description: 'Run a command', parameters: { type: 'object', properties: {} }, strict: false },
          { type: 'web_search' },
        ],
        tool_choice: { type: 'function', name: 'shell' },
        parallel_tool_calls: false,
        max_output_tokens: 256,
        text: { format: { type: 'json_schema', name: 'answer', schema: { type: 'object' }, strict: true } },
        reasoning: { effort: 'low', summary: 'auto' },
        store: false,
        include: ['reasoning.encrypted_content'],
        prompt_cache_key: 'abc',
        metadata: { run: '1' },
      },
      {},
    );
    assert.deepEqual(chat, {
      model: 'gpt-5',
      messages: [
        { role: 'system', content: 'You are a coding agent.' },
        { role: 'system', content: 'Sandbox: read-only.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: '<environment_context>cwd</environment_context>' },
            { type: 'text', text: 'Look at this.' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'high' } },
          ],
        },
        {
          role: 'assistant',
          content: 'Let me look.',
          tool_calls: [
            { id: 'call_a', type: 'function', function: { name: 'shell', arguments: '{"cmd":"ls"}' } },
            { id: 'call_b', type: 'function', function: { name: 'shell', arguments: '{"cmd":"pwd"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_a', content: 'a.txt' },
        { role: 'tool', tool_call_id: 'call_b', content: '/work' },
      ],
      parallel_tool_calls: false,
      max_tokens: 256,
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' }, strict: true } },
      reasoning_effort: 'low',
      tools: [{ type: 'function', function: { name: 'shell', description: 'Run a command', parameters: { type: 'object', properties: {} }, strict: false } }],
      tool_choice: { type: 'function', function: { name: 'shell' } },
    });
  });

  it('puts the earlier conversation before the input, and refuses a previous_response_id it has no conversation for', () => {
    const history = [
      { type: 'message', role: 'user', content: 'Hi' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hello!' }] },
    ];
    const chat = responsesRequestToOpenAI({ previous_response_id: 'resp_1', input: 'And you?', stream: true }, { history, model: 'fixed' });
    assert.deepEqual(chat, {
      model: 'fixed',
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello!' },
        { role: 'user', content: 'And you?' },
      ],
      stream: true,
      stream_options: { include_usage: true },
    });
    assert.throws(() => responsesRequestToOpenAI({ previous_response_id: 'resp_1', input: 'x' }, {}), /resp_1/);
  });

  it('leaves tool_choice and parallel_tool_calls out when no function tool remains', () => {
    const chat = responsesRequestToOpenAI({ input: 'x', tools: [{ type: 'web_search' }], tool_choice: 'required', parallel_tool_calls: true }, {});
    assert.equal(chat.tools, undefined);
    assert.equal(chat.tool_choice, undefined);
    assert.equal(chat.parallel_tool_calls, undefined);
  });
});

describe('translateRequest for Responses requests', () => {
  const body = { model: 'gpt-5', previous_response_id: 'resp_1', input: 'Next.' };
  const items = [{ type: 'message', role: 'user', content: 'First.' }];

  it('passes previous_response_id through to a Responses upstream that made the id, and sends the conversation instead when the proxy made it', () => {
    assert.equal(translateRequest('responses', 'responses', body, { defaultMaxTokens: 1, history: { items, upstreamKeeps: true } }), body);
    assert.deepEqual(translateRequest('responses', 'responses', body, { defaultMaxTokens: 1, history: { items, upstreamKeeps: false } }), {
      model: 'gpt-5',
      input: [...items, { type: 'message', role: 'user', content: 'Next.' }],
    });
  });

  it('refuses, for a fallback upstream of another format, a part that format cannot carry, naming it (the conversation before the request by previous_response_id)', () => {
    const image = { type: 'message', role: 'user', content: [{ type: 'input_image', file_id: 'file-1' }] };
    assert.throws(() => translateRequest('responses', 'openai', { model: 'm', input: [image] }, { defaultMaxTokens: 1 }), {
      code: 'unsupported_content_part',
      param: 'input.0.content.0',
    });
    const file = { type: 'message', role: 'user', content: [{ type: 'input_file', file_id: 'file-2' }] };
    assert.doesNotThrow(() => translateRequest('responses', 'openai', { model: 'm', input: [file] }, { defaultMaxTokens: 1 }));
    assert.throws(
      () => translateRequest('responses', 'anthropic', { ...body, input: 'Next.' }, { defaultMaxTokens: 1, history: { items: [file], upstreamKeeps: false } }),
      {
        param: 'previous_response_id',
      },
    );
  });

  it('reaches an Anthropic upstream through the chat form', () => {
    const anthropic = translateRequest(
      'responses',
      'anthropic',
      { ...body, instructions: 'Be brief.' },
      { defaultMaxTokens: 99, history: { items, upstreamKeeps: true } },
    );
    assert.deepEqual(anthropic, {
      model: 'gpt-5',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'First.' },
            { type: 'text', text: 'Next.' },
          ],
        },
      ],
      max_tokens: 99,
      system: 'Be brief.',
    });
  });
});

describe('answers translated to the Responses API', () => {
  it('a complete chat answer becomes a response object with its items, status and usage', () => {
    const response = openAIResponseToResponses(
      {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        created: 1,
        model: 'gpt-4o-mini',
        choices: [{ index: 0, message: { role: 'assistant', content: 'Cut', reasoning_content: 'hmm' }, finish_reason: 'length' }],
        usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7, completion_tokens_details: { reasoning_tokens: 1 } },
      },
      { ...CONTEXT, request: { model: 'gpt-test', instructions: 'Be brief.', max_output_tokens: 2 } },
    );
    assert.equal(response.status, 'incomplete');
    assert.deepEqual(response.incomplete_details, { reason: 'max_output_tokens' });
    assert.equal(response.model, 'gpt-4o-mini');
    assert.equal(response['instructions'], 'Be brief.');
    assert.equal(response['max_output_tokens'], 2);
    assert.deepEqual(
      response.output.map((item) => item.type),
      ['reasoning', 'message'],
    );
    assert.deepEqual(response.usage, {
      input_tokens: 5,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 2,
      output_tokens_details: { reasoning_tokens: 1 },
      total_tokens: 7,
    });
  });

  it('the SDK accumulates a chat stream translated to Responses events: reasoning, text, interleaved parallel calls, usage', async () => {
    const body = translate(CHAT_UPSTREAM, new OpenAIToResponsesStream(CONTEXT));
    const client = sdkServing(body);
    const stream = client.responses.stream({ model: 'gpt-test', input: 'hi' });
    const sequence: number[] = [];
    stream.on('event', (event) => sequence.push(event.sequence_number));
    const final = await stream.finalResponse();
    assert.deepEqual(withoutParsed(final.output), EXPECTED_OUTPUT);
    assert.equal(final.id, CONTEXT.responseId);
    assert.equal(final.status, 'completed');
    assert.equal(final.model, 'gpt-4o-mini');
    assert.equal(final.usage?.total_tokens, 42);
    assert.deepEqual(
      sequence,
      sequence.map((_number, index) => index),
      'every event is numbered in order from 0',
    );
  });

  it('the same answer through Anthropic events gives the same items', async () => {
    const anthropicBody = translate(CHAT_UPSTREAM_IN_ORDER, new OpenAIToAnthropicStream({}));
    const body = translate(anthropicBody, new AnthropicToResponsesStream(CONTEXT));
    const final = await sdkServing(body).responses.stream({ model: 'gpt-test', input: 'hi' }).finalResponse();
    assert.deepEqual(withoutParsed(final.output), EXPECTED_OUTPUT);
    assert.equal(final.usage?.input_tokens, 30);
    assert.equal(final.usage?.output_tokens, 12);
  });

  it('a chat stream cut off by max tokens ends with response.incomplete', async () => {
    const body = translate(chatStream([chunk({ content: 'Partial' }), chunk({}, 'length')]), new OpenAIToResponsesStream(CONTEXT));
    assert.match(body, /event: response\.incomplete/);
    const final = await sdkServing(body).responses.stream({ model: 'gpt-test', input: 'hi' }).finalResponse();
    assert.equal(final.status, 'incomplete');
    assert.deepEqual(final.incomplete_details, { reason: 'max_output_tokens' });
    assert.equal(final.output_text, 'Partial');
  });

  it('an upstream error event mid-stream becomes response.failed and an error the SDK raises', async () => {
    const translator = new OpenAIToResponsesStream(CONTEXT);
    const parser = new SseParser();
    let body = '';
    const upstream = encodeSse(JSON.stringify(chunk({ content: 'Half' }))) + encodeSse(JSON.stringify({ error: { message: 'overloaded upstream' } }));
    for (const event of parser.push(upstream)) body += translator.push(event);
    assert.equal(translator.finish(), '', 'nothing follows a failure');
    assert.match(body, /event: response\.failed/);
    await assert.rejects(sdkServing(body).responses.stream({ model: 'gpt-test', input: 'hi' }).finalResponse(), /overloaded upstream/);
  });
});

describe('Responses answers assembled for the record', () => {
  it('a streamed answer is assembled from its final event, and a cut one from its deltas and finished items', () => {
    const body = translate(CHAT_UPSTREAM, new OpenAIToResponsesStream(CONTEXT));
    const expected = {
      text: 'Checking now.',
      reasoning: 'Need weather.',
      toolCalls: [
        { id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { id: 'call_2', name: 'get_time', arguments: '{}' },
      ],
      finishReason: 'tool_calls',
      usage: { inputTokens: 30, outputTokens: 12, cacheReadTokens: 0 },
      model: 'gpt-4o-mini',
      id: CONTEXT.responseId,
    };
    assert.deepEqual(assembleStream('responses', Buffer.from(body)), expected);
    const cut = body.slice(0, body.indexOf('event: response.completed'));
    assert.deepEqual(assembleStream('responses', Buffer.from(cut)), { ...expected, finishReason: null, usage: null });
  });

  it('a complete response object, with an incomplete status read as a finish reason', () => {
    assert.deepEqual(
      assembleResponsesResponse({
        id: 'resp_x',
        status: 'incomplete',
        incomplete_details: { reason: 'content_filter' },
        model: 'gpt-5',
        output: [
          { type: 'reasoning', summary: [{ type: 'summary_text', text: 'Plan.' }] },
          {
            type: 'message',
            content: [
              { type: 'output_text', text: 'Hi' },
              { type: 'refusal', refusal: '!' },
            ],
          },
          { type: 'custom_tool_call', call_id: 'c1', name: 'apply_patch', input: '*** Begin Patch' },
          'junk',
        ],
        usage: { input_tokens: 3, output_tokens: 1, input_tokens_details: { cached_tokens: 2 } },
      }),
      {
        text: 'Hi!',
        reasoning: 'Plan.',
        toolCalls: [{ id: 'c1', name: 'apply_patch', arguments: '*** Begin Patch' }],
        finishReason: 'content_filter',
        usage: { inputTokens: 3, outputTokens: 1, cacheReadTokens: 2 },
        model: 'gpt-5',
        id: 'resp_x',
      },
    );
    assert.deepEqual(assembleResponsesResponse(null), { text: '', reasoning: '', toolCalls: [], finishReason: null, usage: null, model: null });
  });
});
