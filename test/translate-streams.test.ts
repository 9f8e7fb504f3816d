import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeSse, firstMalformedEvent, SseParser } from '../src/upstream/sse.js';
import type { SseEvent } from '../src/upstream/sse.js';
import { AnthropicStreamAssembler, AnthropicToOpenAIStream, OpenAIStreamAssembler, OpenAIToAnthropicStream } from '../src/upstream/translate/index.js';

/** Recorded-style upstream streams, written as the raw SSE text the real APIs send. */

function anthropicStream(events: Array<Record<string, unknown>>): string {
  return events.map((event) => encodeSse(JSON.stringify(event), String(event.type))).join('');
}

function openAIStream(chunks: Array<Record<string, unknown> | '[DONE]'>): string {
  return chunks.map((chunk) => encodeSse(chunk === '[DONE]' ? chunk : JSON.stringify(chunk))).join('');
}

function parse(text: string): SseEvent[] {
  const parser = new SseParser();
  return [...parser.push(text), ...parser.end()];
}

/** Feeds the upstream text through a translator in small byte pieces, as a socket would deliver it. */
function translate(translator: { push(event: SseEvent): string; finish(): string }, upstreamText: string, pieceSize = 7): string {
  const parser = new SseParser();
  const bytes = Buffer.from(upstreamText);
  let out = '';
  for (let offset = 0; offset < bytes.length; offset += pieceSize) {
    for (const event of parser.push(bytes.subarray(offset, offset + pieceSize))) out += translator.push(event);
  }
  for (const event of parser.end()) out += translator.push(event);
  return out + translator.finish();
}

/** OpenAI output as data payloads: parsed JSON, or the literal [DONE]. */
function openAIFrames(text: string): unknown[] {
  return parse(text).map((event) => (event.data === '[DONE]' ? '[DONE]' : (JSON.parse(event.data) as unknown)));
}

function anthropicFrames(text: string): Array<{ event: string | undefined; data: Record<string, unknown> }> {
  return parse(text).map((event) => ({ event: event.event, data: JSON.parse(event.data) as Record<string, unknown> }));
}

function assembleOpenAI(text: string) {
  const assembler = new OpenAIStreamAssembler();
  for (const event of parse(text)) assembler.push(event);
  return assembler.result();
}

function assembleAnthropic(text: string) {
  const assembler = new AnthropicStreamAssembler();
  for (const event of parse(text)) assembler.push(event);
  return assembler.result();
}

const MESSAGE_START = {
  type: 'message_start',
  message: {
    id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
    type: 'message',
    role: 'assistant',
    content: [],
    model: 'claude-sonnet-4-5-20250929',
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 472, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 2 },
  },
};

function textDelta(index: number, text: string): Record<string, unknown> {
  return { type: 'content_block_delta', index, delta: { type: 'text_delta', text } };
}

function jsonDelta(index: number, partialJson: string): Record<string, unknown> {
  return { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: partialJson } };
}

const ANTHROPIC_TEXT = anthropicStream([
  MESSAGE_START,
  { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  { type: 'ping' },
  textDelta(0, 'Hello'),
  textDelta(0, ', wörld!'),
  { type: 'content_block_stop', index: 0 },
  { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 15 } },
  { type: 'message_stop' },
]);

const ANTHROPIC_TEXT_THEN_TOOLS = anthropicStream([
  MESSAGE_START,
  { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Two lookups.' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'EqQBCgIYAhIM' } },
  { type: 'content_block_stop', index: 0 },
  { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
  textDelta(1, 'Let me check.'),
  { type: 'content_block_stop', index: 1 },
  { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather', input: {} } },
  jsonDelta(2, ''),
  jsonDelta(2, '{"city": '),
  jsonDelta(2, '"Par'),
  jsonDelta(2, 'is"}'),
  { type: 'content_block_stop', index: 2 },
  { type: 'content_block_start', index: 3, content_block: { type: 'tool_use', id: 'toolu_01U2y2gK45rBnl3uOUsO8Vq7', name: 'get_time', input: {} } },
  jsonDelta(3, '{"tz":'),
  jsonDelta(3, '"CET"}'),
  { type: 'content_block_stop', index: 3 },
  { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 89 } },
  { type: 'message_stop' },
]);

describe('AnthropicToOpenAIStream', () => {
  it('translates a text stream into a role chunk, content chunks, a finish chunk, a usage chunk and [DONE]', () => {
    const translator = new AnthropicToOpenAIStream({ includeUsage: true });
    const frames = openAIFrames(translate(translator, ANTHROPIC_TEXT));
    const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
      id: 'chatcmpl-msg_01XFDUDYJgAACzvnptvVoYEL',
      object: 'chat.completion.chunk',
      created: (frames[0] as { created: number }).created,
      model: 'claude-sonnet-4-5-20250929',
      choices: [{ index: 0, delta, finish_reason: finishReason }],
    });
    assert.deepEqual(frames, [
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: 'Hello' }),
      chunk({ content: ', wörld!' }),
      chunk({}, 'stop'),
      {
        id: 'chatcmpl-msg_01XFDUDYJgAACzvnptvVoYEL',
        object: 'chat.completion.chunk',
        created: (frames[0] as { created: number }).created,
        model: 'claude-sonnet-4-5-20250929',
        choices: [],
        usage: { prompt_tokens: 472, completion_tokens: 15, total_tokens: 487, prompt_tokens_details: { cached_tokens: 0 } },
      },
      '[DONE]',
    ]);
    assert.equal(translator.done, true);
  });

  it('leaves out the usage chunk when the client did not ask for usage, and uses the model override', () => {
    const frames = openAIFrames(translate(new AnthropicToOpenAIStream({ includeUsage: false, model: 'client-alias' }), ANTHROPIC_TEXT));
    assert.equal(frames.length, 5);
    assert.equal(frames.at(-1), '[DONE]');
    assert.equal((frames[0] as { model: string }).model, 'client-alias');
  });

  it('streams reasoning, text and two tool calls with their argument fragments at OpenAI tool indexes 0 and 1', () => {
    const output = translate(new AnthropicToOpenAIStream({ includeUsage: true }), ANTHROPIC_TEXT_THEN_TOOLS, 5);
    const deltas = openAIFrames(output).map((frame) =>
      frame === '[DONE]' ? frame : ((frame as { choices: Array<{ delta: unknown; finish_reason: unknown }> }).choices[0] ?? 'usage'),
    );
    assert.deepEqual(deltas, [
      { delta: { role: 'assistant', content: '' }, finish_reason: null, index: 0 },
      { delta: { reasoning_content: 'Two lookups.' }, finish_reason: null, index: 0 },
      { delta: { content: 'Let me check.' }, finish_reason: null, index: 0 },
      {
        delta: { tool_calls: [{ index: 0, id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', type: 'function', function: { name: 'get_weather', arguments: '' } }] },
        finish_reason: null,
        index: 0,
      },
      { delta: { tool_calls: [{ index: 0, function: { arguments: '{"city": ' } }] }, finish_reason: null, index: 0 },
      { delta: { tool_calls: [{ index: 0, function: { arguments: '"Par' } }] }, finish_reason: null, index: 0 },
      { delta: { tool_calls: [{ index: 0, function: { arguments: 'is"}' } }] }, finish_reason: null, index: 0 },
      {
        delta: { tool_calls: [{ index: 1, id: 'toolu_01U2y2gK45rBnl3uOUsO8Vq7', type: 'function', function: { name: 'get_time', arguments: '' } }] },
        finish_reason: null,
        index: 0,
      },
      { delta: { tool_calls: [{ index: 1, function: { arguments: '{"tz":' } }] }, finish_reason: null, index: 0 },
      { delta: { tool_calls: [{ index: 1, function: { arguments: '"CET"}' } }] }, finish_reason: null, index: 0 },
      { delta: {}, finish_reason: 'tool_calls', index: 0 },
      'usage',
      '[DONE]',
    ]);
    assert.deepEqual(assembleOpenAI(output), {
      text: 'Let me check.',
      reasoning: 'Two lookups.',
      toolCalls: [
        { id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather', arguments: '{"city": "Paris"}' },
        { id: 'toolu_01U2y2gK45rBnl3uOUsO8Vq7', name: 'get_time', arguments: '{"tz":"CET"}' },
      ],
      finishReason: 'tool_calls',
      usage: { inputTokens: 472, outputTokens: 89, cacheReadTokens: 0 },
      model: 'claude-sonnet-4-5-20250929',
    });
  });

  it('turns an upstream error event into one OpenAI error frame and then stays silent', () => {
    const upstream = anthropicStream([
      MESSAGE_START,
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      textDelta(0, 'Partial'),
      { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
    ]);
    const translator = new AnthropicToOpenAIStream({ includeUsage: true });
    const frames = openAIFrames(translate(translator, upstream));
    assert.equal(frames.length, 3);
    assert.deepEqual(frames[2], { error: { message: 'Overloaded', type: 'server_error', param: null, code: 'upstream_stream_error' } });
    assert.equal(translator.done, true);
    assert.equal(translator.push({ event: 'message_stop', data: '{"type":"message_stop"}' }), '');
    assert.equal(translator.fail('again'), '');
  });

  it('fail() after partial output emits only the error frame, with no [DONE]', () => {
    const translator = new AnthropicToOpenAIStream({ includeUsage: true });
    let output = '';
    for (const event of parse(anthropicStream([MESSAGE_START, textDelta(0, 'Hi')]))) output += translator.push(event);
    output += translator.fail('socket hang up');
    const frames = openAIFrames(output);
    assert.deepEqual(frames.at(-1), { error: { message: 'socket hang up', type: 'server_error', param: null, code: 'upstream_stream_error' } });
    assert.equal(frames.includes('[DONE]'), false);
    assert.equal(translator.finish(), '');
  });

  it('finish() without message_stop still closes the stream with a finish chunk and [DONE]', () => {
    const translator = new AnthropicToOpenAIStream({ includeUsage: false });
    const frames = openAIFrames(translator.finish());
    assert.equal(frames.length, 3);
    assert.deepEqual((frames[1] as { choices: unknown[] }).choices, [{ index: 0, delta: {}, finish_reason: 'stop' }]);
    assert.equal(frames[2], '[DONE]');
  });
});

function openAIChunk(delta: Record<string, unknown>, finishReason: string | null = null): Record<string, unknown> {
  return {
    id: 'chatcmpl-AbC123',
    object: 'chat.completion.chunk',
    created: 1694268190,
    model: 'gpt-4o-mini-2024-07-18',
    system_fingerprint: 'fp_44709d6fcb',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
}

function usageChunk(promptTokens: number, completionTokens: number, cachedTokens = 0): Record<string, unknown> {
  return {
    id: 'chatcmpl-AbC123',
    object: 'chat.completion.chunk',
    created: 1694268190,
    model: 'gpt-4o-mini-2024-07-18',
    choices: [],
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
      prompt_tokens_details: { cached_tokens: cachedTokens },
    },
  };
}

function toolFragment(index: number, fields: { id?: string; name?: string; arguments: string }): Record<string, unknown> {
  const fragment: Record<string, unknown> = { index, function: { ...(fields.name === undefined ? {} : { name: fields.name }), arguments: fields.arguments } };
  if (fields.id !== undefined) Object.assign(fragment, { id: fields.id, type: 'function' });
  return openAIChunk({ tool_calls: [fragment] });
}

const OPENAI_TEXT = openAIStream([
  openAIChunk({ role: 'assistant', content: '', refusal: null }),
  openAIChunk({ content: 'Hello' }),
  openAIChunk({ content: ', wörld!' }),
  openAIChunk({}, 'stop'),
  usageChunk(1200, 12, 1024),
  '[DONE]',
]);

const OPENAI_TEXT_THEN_TOOLS = openAIStream([
  openAIChunk({ role: 'assistant', content: '' }),
  openAIChunk({ reasoning_content: 'Two lookups.' }),
  openAIChunk({ content: 'Let me check.' }),
  toolFragment(0, { id: 'call_DdmO9pD3xa9XTPNJ32zg2hcA', name: 'get_weather', arguments: '' }),
  toolFragment(0, { arguments: '{"ci' }),
  toolFragment(0, { arguments: 'ty": "Paris"}' }),
  toolFragment(1, { id: 'call_Ee1P0qE4yb0YUQOK43ah3idB', name: 'get_time', arguments: '{"tz"' }),
  toolFragment(1, { arguments: ':"CET"}' }),
  openAIChunk({}, 'tool_calls'),
  usageChunk(300, 40),
  '[DONE]',
]);

describe('OpenAIToAnthropicStream', () => {
  it('emits message_start, one text block, then message_delta with the usage that came after the finish reason, then message_stop', () => {
    const translator = new OpenAIToAnthropicStream({});
    const frames = anthropicFrames(translate(translator, OPENAI_TEXT));
    assert.deepEqual(frames, [
      {
        event: 'message_start',
        data: {
          type: 'message_start',
          message: {
            id: 'msg_chatcmpl-AbC123',
            type: 'message',
            role: 'assistant',
            model: 'gpt-4o-mini-2024-07-18',
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: 0, output_tokens: 0 },
          },
        },
      },
      { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
      { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello' } } },
      { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: ', wörld!' } } },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      {
        event: 'message_delta',
        data: {
          type: 'message_delta',
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: { input_tokens: 176, output_tokens: 12, cache_read_input_tokens: 1024 },
        },
      },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ]);
    assert.equal(translator.done, true);
    assert.equal(translator.finish(), '', 'finish after [DONE] adds nothing');
    assert.deepEqual(assembleAnthropic(translate(new OpenAIToAnthropicStream({}), OPENAI_TEXT)), {
      text: 'Hello, wörld!',
      reasoning: '',
      toolCalls: [],
      finishReason: 'stop',
      usage: { inputTokens: 1200, outputTokens: 12, cacheReadTokens: 1024 },
      model: 'gpt-4o-mini-2024-07-18',
    });
  });

  it('closes each block before the next: thinking, text, then one tool_use block per tool call index', () => {
    const output = translate(new OpenAIToAnthropicStream({ model: 'client-alias' }), OPENAI_TEXT_THEN_TOOLS, 3);
    const frames = anthropicFrames(output);
    const summary = frames.map(({ event, data }) => {
      const delta = data.delta as Record<string, unknown> | undefined;
      const block = data.content_block as Record<string, unknown> | undefined;
      const detail = block
        ? `${String(block.type)}${block.id ? `:${block.id as string}:${block.name as string}` : ''}`
        : delta
          ? String(delta.text ?? delta.thinking ?? delta.partial_json ?? delta.stop_reason)
          : '';
      return `${event}${data.index === undefined ? '' : `[${data.index as number}]`}${detail ? ` ${detail}` : ''}`;
    });
    assert.deepEqual(summary, [
      'message_start',
      'content_block_start[0] thinking',
      'content_block_delta[0] Two lookups.',
      'content_block_stop[0]',
      'content_block_start[1] text',
      'content_block_delta[1] Let me check.',
      'content_block_stop[1]',
      'content_block_start[2] tool_use:call_DdmO9pD3xa9XTPNJ32zg2hcA:get_weather',
      'content_block_delta[2] {"ci',
      'content_block_delta[2] ty": "Paris"}',
      'content_block_stop[2]',
      'content_block_start[3] tool_use:call_Ee1P0qE4yb0YUQOK43ah3idB:get_time',
      'content_block_delta[3] {"tz"',
      'content_block_delta[3] :"CET"}',
      'content_block_stop[3]',
      'message_delta tool_use',
      'message_stop',
    ]);
    assert.deepEqual(frames[7]?.data.content_block, { type: 'tool_use', id: 'call_DdmO9pD3xa9XTPNJ32zg2hcA', name: 'get_weather', input: {} });
    assert.equal((frames[0]?.data.message as { model: string }).model, 'client-alias');
    assert.deepEqual(assembleAnthropic(output), {
      text: 'Let me check.',
      reasoning: 'Two lookups.',
      toolCalls: [
        { id: 'call_DdmO9pD3xa9XTPNJ32zg2hcA', name: 'get_weather', arguments: '{"city": "Paris"}' },
        { id: 'call_Ee1P0qE4yb0YUQOK43ah3idB', name: 'get_time', arguments: '{"tz":"CET"}' },
      ],
      finishReason: 'tool_calls',
      usage: { inputTokens: 300, outputTokens: 40 },
      model: 'client-alias',
    });
  });

  it('closes the stream at finish() when the upstream ends without [DONE]', () => {
    const upstream = openAIStream([openAIChunk({ role: 'assistant', content: 'Hi' }), openAIChunk({}, 'length')]);
    const events = anthropicFrames(translate(new OpenAIToAnthropicStream({}), upstream)).map((frame) => frame.event);
    assert.deepEqual(events, ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    const result = assembleAnthropic(translate(new OpenAIToAnthropicStream({}), upstream));
    assert.equal(result.finishReason, 'length');
    assert.equal(result.text, 'Hi');
  });

  it('produces a valid minimal message when the upstream sent nothing', () => {
    const frames = anthropicFrames(new OpenAIToAnthropicStream({ model: 'm' }).finish());
    assert.deepEqual(
      frames.map((frame) => frame.event),
      ['message_start', 'message_delta', 'message_stop'],
    );
    assert.deepEqual(frames[1]?.data, { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 0 } });
    assert.match(String((frames[0]?.data.message as { id: string }).id), /^msg_/);
  });

  it('turns an OpenAI error payload mid-stream into an Anthropic error event, leaving blocks open, and then stays silent', () => {
    const upstream = openAIStream([
      openAIChunk({ role: 'assistant', content: 'Partial' }),
      { error: { message: 'The server had an error', type: 'server_error', param: null, code: null } },
      openAIChunk({ content: 'late' }),
    ]);
    const translator = new OpenAIToAnthropicStream({});
    const frames = anthropicFrames(translate(translator, upstream));
    assert.deepEqual(
      frames.map((frame) => frame.event),
      ['message_start', 'content_block_start', 'content_block_delta', 'error'],
    );
    assert.deepEqual(frames[3]?.data, { type: 'error', error: { type: 'api_error', message: 'The server had an error' } });
    assert.equal(translator.done, true);
  });

  it('fail() emits only an error event', () => {
    const translator = new OpenAIToAnthropicStream({});
    let output = '';
    for (const event of parse(openAIStream([openAIChunk({ content: 'Hi' })]))) output += translator.push(event);
    output += translator.fail('upstream closed the connection');
    const frames = anthropicFrames(output);
    assert.deepEqual(frames.at(-1), { event: 'error', data: { type: 'error', error: { type: 'api_error', message: 'upstream closed the connection' } } });
    assert.equal(translator.finish(), '');
  });
});

describe('spotting a stream event that is not JSON without parsing it', () => {
  const scan = (text: string, final = false) => firstMalformedEvent(Buffer.from(text), Buffer.byteLength(text), final);

  it('accepts JSON objects, [DONE], named events, CRLF, comments and data split over lines', () => {
    assert.equal(scan('data: {"a":1}\n\ndata: [DONE]\n\n'), -1);
    assert.equal(scan('event: ping\ndata: {"type":"ping"}\r\n\r\n: keep-alive\n\n'), -1);
    assert.equal(scan('data: {"a":\ndata: 1}\n\n'), -1);
    assert.equal(scan('data:\n\n'), -1);
  });

  it('names the offset of the first event whose data cannot be JSON', () => {
    const good = 'data: {"a":1}\n\n';
    assert.equal(scan(`${good}data: oops\n\n${good}`), good.length);
    assert.equal(scan('data: {"truncated":\n\n'), 0);
  });

  it('judges a last event without its blank line only when told the stream ended', () => {
    assert.equal(scan('data: {"a":1}\n\ndata: {"cut', false), -1);
    assert.equal(scan('data: {"a":1}\n\ndata: {"cut', true), 15);
  });
});
