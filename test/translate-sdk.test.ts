import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { encodeSse, SseParser } from '../src/upstream/sse.js';
import type { SseEvent } from '../src/upstream/sse.js';
import { AnthropicToOpenAIStream, OpenAIToAnthropicStream } from '../src/upstream/translate/index.js';
import { collectStream } from '../src/upstream/translate/collect-stream.js';

/** The official SDKs are the strictest readers of our streams: they must accumulate them as real ones. */

function translate(upstreamText: string, translator: { push(event: SseEvent): string; finish(): string }): string {
  const parser = new SseParser();
  let out = '';
  for (const event of [...parser.push(upstreamText), ...parser.end()]) out += translator.push(event);
  return out + translator.finish();
}

function serving(body: string): typeof fetch {
  return async () => new Response(body, { headers: { 'content-type': 'text/event-stream' } });
}

function chunk(delta: Record<string, unknown>, finishReason: string | null = null): Record<string, unknown> {
  return { id: 'chatcmpl-7', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta, finish_reason: finishReason }] };
}

const OPENAI_UPSTREAM =
  [
    chunk({ role: 'assistant', content: '' }),
    chunk({ reasoning_content: 'Need weather.' }),
    chunk({ content: 'Checking ' }),
    chunk({ content: 'now.' }),
    chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city"' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: ':"Paris"}' } }] }),
    chunk({ tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{}' } }] }),
    chunk({}, 'tool_calls'),
    {
      id: 'chatcmpl-7',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'gpt-4o-mini',
      choices: [],
      usage: { prompt_tokens: 30, completion_tokens: 12, total_tokens: 42 },
    },
  ]
    .map((value) => encodeSse(JSON.stringify(value)))
    .join('') + encodeSse('[DONE]');

describe('official SDKs read the translated streams', () => {
  it('the Anthropic SDK accumulates an OpenAI stream translated to Anthropic events', async () => {
    const body = translate(OPENAI_UPSTREAM, new OpenAIToAnthropicStream({}));
    const client = new Anthropic({ apiKey: 'test', fetch: serving(body), maxRetries: 0 });
    const message = await client.messages.stream({ model: 'm', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    assert.deepEqual(message.content, [
      { type: 'thinking', thinking: 'Need weather.', signature: '' },
      { type: 'text', text: 'Checking now.' },
      { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: 'call_2', name: 'get_time', input: {} },
    ]);
    assert.equal(message.stop_reason, 'tool_use');
    assert.equal(message.usage.output_tokens, 12);
    assert.equal(message.usage.input_tokens, 30);
  });

  it('the OpenAI SDK accumulates that Anthropic stream translated back to OpenAI chunks', async () => {
    const anthropicBody = translate(OPENAI_UPSTREAM, new OpenAIToAnthropicStream({}));
    const body = translate(anthropicBody, new AnthropicToOpenAIStream({ includeUsage: true }));
    const client = new OpenAI({ apiKey: 'test', fetch: serving(body), maxRetries: 0 });
    const completion = await client.chat.completions
      .stream({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream_options: { include_usage: true } })
      .finalChatCompletion();
    const choice = completion.choices[0];
    assert.equal(choice?.message.content, 'Checking now.');
    assert.deepEqual(
      choice?.message.tool_calls?.map((call) => (call.type === 'function' ? [call.id, call.function.name, call.function.arguments] : [])),
      [
        ['call_1', 'get_weather', '{"city":"Paris"}'],
        ['call_2', 'get_time', '{}'],
      ],
    );
    assert.equal(choice?.finish_reason, 'tool_calls');
    assert.deepEqual(completion.usage, { prompt_tokens: 30, completion_tokens: 12, total_tokens: 42, prompt_tokens_details: { cached_tokens: 0 } });
  });
});

/** A whole stream, as a client that asked for no stream is given it: collected into one answer. */
function collected(format: 'openai' | 'anthropic', body: string): any {
  const parser = new SseParser();
  const result = collectStream(format, [...parser.push(body), ...parser.end()]);
  assert.ok('answer' in result, JSON.stringify(result));
  return result.answer;
}

describe('a stream collected into one answer is what the official SDKs accumulate from it', () => {
  it('OpenAI chunks: text, reasoning, interleaved tool calls, a legacy function call, usage', async () => {
    const legacy =
      [
        chunk({ role: 'assistant', function_call: { name: 'get_weather', arguments: '' } }),
        chunk({ function_call: { arguments: '{"city":' } }),
        chunk({ function_call: { arguments: '"Oslo"}' } }),
        chunk({}, 'function_call'),
      ]
        .map((value) => encodeSse(JSON.stringify(value)))
        .join('') + encodeSse('[DONE]');
    for (const body of [OPENAI_UPSTREAM, legacy]) {
      const client = new OpenAI({ apiKey: 'test', fetch: serving(body), maxRetries: 0 });
      const sdk = await client.chat.completions.stream({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }).finalChatCompletion();
      const answer = collected('openai', body);
      // The SDK adds `parsed`, and `refusal: null` where none was sent: no part of what the stream said.
      const { parsed: _parsed, refusal, ...message } = sdk.choices[0]!.message as unknown as Record<string, unknown>;
      assert.equal(refusal, null);
      const toolCalls = (message['tool_calls'] as Array<Record<string, any>> | undefined)?.map(({ function: fn, ...call }) => ({
        ...call,
        function: { name: fn.name, arguments: fn.arguments },
      }));
      assert.deepEqual(answer.choices[0].message, { ...message, ...(toolCalls && toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) });
      assert.equal(answer.choices[0].finish_reason, sdk.choices[0]!.finish_reason);
      assert.deepEqual(answer.usage, sdk.usage);
      assert.equal(answer.id, sdk.id);
    }
  });

  it('Anthropic events: thinking, text, tool input in pieces, the final stop reason and usage', async () => {
    const body = translate(OPENAI_UPSTREAM, new OpenAIToAnthropicStream({}));
    const client = new Anthropic({ apiKey: 'test', fetch: serving(body), maxRetries: 0 });
    const sdk = await client.messages.stream({ model: 'm', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    const answer = collected('anthropic', body);
    assert.deepEqual(answer.content, sdk.content);
    assert.equal(answer.stop_reason, sdk.stop_reason);
    assert.deepEqual(answer.usage, sdk.usage);
    assert.equal(answer.id, sdk.id);
  });
});
