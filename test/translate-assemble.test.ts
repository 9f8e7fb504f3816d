import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeSse, SseParser } from '../src/upstream/sse.js';
import {
  AnthropicStreamAssembler,
  OpenAIStreamAssembler,
  assembleAnthropicResponse,
  assembleOpenAIResponse,
  assembleStream,
} from '../src/upstream/translate/index.js';
import type { AssembledResponse } from '../src/types/index.js';

const EMPTY: AssembledResponse = { text: '', reasoning: '', toolCalls: [], finishReason: null, usage: null, model: null };

describe('assembleOpenAIResponse', () => {
  it('reads text, reasoning, tool calls, finish reason, usage and model of a completion', () => {
    const result = assembleOpenAIResponse({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      model: 'gpt-4o',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Checking.',
            reasoning_content: 'Think.',
            tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
          },
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120, prompt_tokens_details: { cached_tokens: 64 } },
    });
    assert.deepEqual(result, {
      text: 'Checking.',
      reasoning: 'Think.',
      toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }],
      finishReason: 'tool_calls',
      usage: { inputTokens: 100, outputTokens: 20, cacheReadTokens: 64 },
      model: 'gpt-4o',
    });
  });

  it('normalises the legacy function_call finish reason to tool_calls', () => {
    const result = assembleOpenAIResponse({
      choices: [{ message: { content: null, function_call: { name: 'clock', arguments: '{}' } }, finish_reason: 'function_call' }],
    });
    assert.equal(result.finishReason, 'tool_calls');
    assert.deepEqual(result.toolCalls, [{ id: 'call_clock', name: 'clock', arguments: '{}' }]);
  });

  it('answers an empty result for bodies that are not completions', () => {
    for (const body of [null, undefined, 'text', 42, [], { choices: 'nope' }, { choices: [null, 3] }, { error: { message: 'bad' } }]) {
      assert.deepEqual(assembleOpenAIResponse(body), EMPTY, JSON.stringify(body) ?? 'undefined');
    }
  });
});

describe('assembleAnthropicResponse', () => {
  it('reads text, thinking, tool uses, stop reason in OpenAI words, usage and model of a message', () => {
    const result = assembleAnthropicResponse({
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [
        { type: 'thinking', thinking: 'Think.', signature: 'sig' },
        { type: 'text', text: 'Checking.' },
        { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 20, cache_creation_input_tokens: 5, cache_read_input_tokens: 85 },
    });
    assert.deepEqual(result, {
      text: 'Checking.',
      reasoning: 'Think.',
      toolCalls: [{ id: 'toolu_1', name: 'get_weather', arguments: '{"city":"Paris"}' }],
      finishReason: 'tool_calls',
      usage: { inputTokens: 100, outputTokens: 20, cacheReadTokens: 85, cacheWriteTokens: 5 },
      model: 'claude-sonnet-4-5',
    });
  });

  it('answers an empty result for bodies that are not messages', () => {
    for (const body of [
      null,
      'text',
      { content: 'not blocks' },
      { content: [7, null, { type: 'text' }] },
      { type: 'error', error: { type: 'api_error', message: 'x' } },
    ]) {
      assert.deepEqual(assembleAnthropicResponse(body), EMPTY, JSON.stringify(body));
    }
  });
});

describe('stream assemblers on garbage', () => {
  it('skips non-JSON data, wrong shapes and keep-alives in an OpenAI stream and keeps the good chunks', () => {
    const raw = Buffer.from(
      [
        ': keep-alive\n\n',
        'data: not json at all\n\n',
        encodeSse(JSON.stringify({ choices: 'wrong' })),
        encodeSse(JSON.stringify({ model: 'm', choices: [{ index: 0, delta: { content: 'Hel' } }] })),
        encodeSse(JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', function: { name: 'f', arguments: '{"a"' } }] } }] })),
        encodeSse(JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: ':1}' } }, 'junk'] } }] })),
        encodeSse(JSON.stringify({ choices: [{ index: 0, delta: { content: 'lo' }, finish_reason: 'stop' }] })),
        encodeSse(JSON.stringify({ choices: [], usage: { prompt_tokens: 'many' } })),
        'data: {"choices": [{"delta": {"content": "truncated',
      ].join(''),
    );
    assert.deepEqual(assembleStream('openai', raw), {
      text: 'Hello',
      reasoning: '',
      toolCalls: [{ id: 'call_1', name: 'f', arguments: '{"a":1}' }],
      finishReason: 'stop',
      usage: null,
      model: 'm',
    });
  });

  it('skips garbage in an Anthropic stream, reads a tool input given whole at block start, and survives a UTF-8 character split across chunks', () => {
    const raw = Buffer.from(
      [
        encodeSse(JSON.stringify({ type: 'message_start', message: { model: 'claude', usage: { input_tokens: 12, output_tokens: 1 } } }), 'message_start'),
        'event: content_block_delta\ndata: {broken\n\n',
        encodeSse(JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Grüße' } }), 'content_block_delta'),
        encodeSse(JSON.stringify({ type: 'content_block_delta', index: 'x', delta: null }), 'content_block_delta'),
        encodeSse(
          JSON.stringify({ type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_9', name: 'f', input: { a: 1 } } }),
          'content_block_start',
        ),
        encodeSse(
          JSON.stringify({ type: 'content_block_delta', index: 7, delta: { type: 'input_json_delta', partial_json: 'orphan' } }),
          'content_block_delta',
        ),
        encodeSse(JSON.stringify({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 9 } }), 'message_delta'),
        encodeSse('[]', 'message_stop'),
      ].join(''),
    );
    const expected: AssembledResponse = {
      text: 'Grüße',
      reasoning: '',
      toolCalls: [{ id: 'toolu_9', name: 'f', arguments: '{"a":1}' }],
      finishReason: 'stop',
      usage: { inputTokens: 12, outputTokens: 9 },
      model: 'claude',
    };
    assert.deepEqual(assembleStream('anthropic', raw), expected);

    const splitInsideUmlaut = raw.indexOf(Buffer.from('ü')) + 1;
    const parser = new SseParser();
    const assembler = new AnthropicStreamAssembler();
    for (const piece of [raw.subarray(0, splitInsideUmlaut), raw.subarray(splitInsideUmlaut)]) {
      for (const event of parser.push(piece)) assembler.push(event);
    }
    for (const event of parser.end()) assembler.push(event);
    assert.deepEqual(assembler.result(), expected);
  });

  it('never throws on arbitrary bytes', () => {
    const junk = Buffer.from([0xff, 0xfe, 0x00, 0x0a, 0x64, 0x61, 0x74, 0x61, 0x3a, 0x0a, 0x0a, 0xc3]);
    assert.deepEqual(assembleStream('openai', junk), EMPTY);
    assert.deepEqual(assembleStream('anthropic', junk), EMPTY);
    const openAI = new OpenAIStreamAssembler();
    openAI.push({ event: undefined, data: '[DONE]' });
    openAI.push({ event: 'error', data: '{"error":{"message":"x"}}' });
    assert.deepEqual(openAI.result(), EMPTY);
  });
});
