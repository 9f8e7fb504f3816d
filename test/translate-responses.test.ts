import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  anthropicErrorBodyToOpenAI,
  anthropicResponseToOpenAI,
  anthropicStopToOpenAIFinish,
  anthropicUsageToOpenAI,
  anthropicUsageToTokenUsage,
  openAIErrorBodyToAnthropic,
  openAIFinishToAnthropicStop,
  openAIResponseToAnthropic,
  openAIUsageToAnthropic,
  openAIUsageToTokenUsage,
} from '../src/upstream/translate/index.js';
import type { AnthropicResponse, OpenAIChatCompletion } from '../src/types/index.js';

function anthropicResponse(fields: Partial<AnthropicResponse>): AnthropicResponse {
  return {
    id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5',
    content: [],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 5 },
    ...fields,
  };
}

function openAICompletion(
  message: Partial<OpenAIChatCompletion['choices'][number]['message']>,
  fields: Partial<OpenAIChatCompletion> = {},
): OpenAIChatCompletion {
  return {
    id: 'chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT',
    object: 'chat.completion',
    created: 1741569952,
    model: 'gpt-4o-2024-08-06',
    choices: [{ index: 0, message: { role: 'assistant', content: null, ...message }, finish_reason: 'stop', logprobs: null }],
    usage: { prompt_tokens: 19, completion_tokens: 10, total_tokens: 29, prompt_tokens_details: { cached_tokens: 0 } },
    ...fields,
  };
}

describe('anthropicResponseToOpenAI', () => {
  it('maps text, thinking, stop reason, usage and keeps the message id behind a chatcmpl- prefix', () => {
    const result = anthropicResponseToOpenAI(
      anthropicResponse({
        content: [
          { type: 'thinking', thinking: 'Simple greeting.', signature: 'EqQB' },
          { type: 'text', text: 'Hello' },
          { type: 'text', text: ' there!' },
        ],
        usage: { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 100, cache_read_input_tokens: 1000 },
      }),
      {},
    );
    assert.equal(result.id, 'chatcmpl-msg_01XFDUDYJgAACzvnptvVoYEL');
    assert.equal(result.object, 'chat.completion');
    assert.equal(result.model, 'claude-sonnet-4-5');
    assert.equal(typeof result.created, 'number');
    assert.deepEqual(result.choices, [
      { index: 0, message: { role: 'assistant', content: 'Hello there!', reasoning_content: 'Simple greeting.' }, finish_reason: 'stop', logprobs: null },
    ]);
    assert.deepEqual(result.usage, { prompt_tokens: 1110, completion_tokens: 5, total_tokens: 1115, prompt_tokens_details: { cached_tokens: 1000 } });
  });

  it('maps tool_use blocks to tool_calls with null content and finish_reason tool_calls', () => {
    const result = anthropicResponseToOpenAI(
      anthropicResponse({
        content: [
          { type: 'tool_use', id: 'toolu_01A09q90qw90lq917835lq9', name: 'get_weather', input: { location: 'San Francisco, CA' } },
          { type: 'tool_use', id: '', name: 'get_time', input: {} },
        ],
        stop_reason: 'tool_use',
      }),
      { model: 'client-alias' },
    );
    const choice = result.choices[0];
    assert.equal(result.model, 'client-alias');
    assert.equal(choice?.finish_reason, 'tool_calls');
    assert.equal(choice?.message.content, null);
    assert.deepEqual(choice?.message.tool_calls?.[0], {
      id: 'toolu_01A09q90qw90lq917835lq9',
      type: 'function',
      function: { name: 'get_weather', arguments: '{"location":"San Francisco, CA"}' },
    });
    assert.match(choice?.message.tool_calls?.[1]?.id ?? '', /^call_[A-Za-z0-9]+$/, 'a missing id is synthesized');
    assert.equal(choice?.message.tool_calls?.[1]?.function.arguments, '{}');
  });

  it('maps max_tokens to length and refusal to content_filter', () => {
    assert.equal(
      anthropicResponseToOpenAI(anthropicResponse({ content: [{ type: 'text', text: 'cut' }], stop_reason: 'max_tokens' }), {}).choices[0]?.finish_reason,
      'length',
    );
    assert.equal(anthropicResponseToOpenAI(anthropicResponse({ stop_reason: 'refusal' }), {}).choices[0]?.finish_reason, 'content_filter');
  });
});

describe('openAIResponseToAnthropic', () => {
  it('maps text, reasoning, usage with cached tokens, and keeps the id behind a msg_ prefix', () => {
    const result = openAIResponseToAnthropic(
      openAICompletion(
        { content: 'Hello there!', reasoning_content: 'Greeting.' },
        { usage: { prompt_tokens: 1200, completion_tokens: 7, total_tokens: 1207, prompt_tokens_details: { cached_tokens: 1024 } } },
      ),
    );
    assert.deepEqual(result, {
      id: 'msg_chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT',
      type: 'message',
      role: 'assistant',
      model: 'gpt-4o-2024-08-06',
      content: [
        { type: 'thinking', thinking: 'Greeting.', signature: '' },
        { type: 'text', text: 'Hello there!' },
      ],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 176, output_tokens: 7, cache_creation_input_tokens: 0, cache_read_input_tokens: 1024 },
    });
  });

  it('maps tool calls to tool_use blocks and reports tool_use even when the server said stop', () => {
    const completion = openAICompletion({
      content: null,
      tool_calls: [
        { id: 'call_abc', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        { id: '', type: 'function', function: { name: 'get_time', arguments: '' } },
      ],
    });
    const result = openAIResponseToAnthropic(completion);
    assert.equal(result.stop_reason, 'tool_use');
    assert.deepEqual(result.content[0], { type: 'tool_use', id: 'call_abc', name: 'get_weather', input: { city: 'Paris' } });
    assert.equal(result.content[1]?.type, 'tool_use');
    assert.match(String(result.content[1]?.id), /^toolu_[A-Za-z0-9]+$/);
    assert.deepEqual(result.content[1]?.input, {});
  });

  it('maps length to max_tokens and content_filter to refusal, and survives a completion without choices or usage', () => {
    const cut = openAICompletion({ content: 'cut' });
    cut.choices[0]!.finish_reason = 'length';
    assert.equal(openAIResponseToAnthropic(cut).stop_reason, 'max_tokens');
    const filtered = openAICompletion({ content: '' });
    filtered.choices[0]!.finish_reason = 'content_filter';
    assert.equal(openAIResponseToAnthropic(filtered).stop_reason, 'refusal');
    const empty = openAIResponseToAnthropic({ id: 'x', object: 'chat.completion', created: 0, model: 'm', choices: [] });
    assert.deepEqual(empty.content, []);
    assert.deepEqual(empty.usage, { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
  });
});

describe('stop reasons', () => {
  it('maps every Anthropic stop reason to an OpenAI finish reason', () => {
    assert.deepEqual(
      ['end_turn', 'stop_sequence', 'max_tokens', 'tool_use', 'refusal', 'pause_turn', 'something_new'].map((reason) => anthropicStopToOpenAIFinish(reason)),
      ['stop', 'stop', 'length', 'tool_calls', 'content_filter', 'stop', 'something_new'],
    );
    assert.equal(anthropicStopToOpenAIFinish(null), null);
  });

  it('maps every OpenAI finish reason to an Anthropic stop reason', () => {
    assert.deepEqual(
      ['stop', 'length', 'tool_calls', 'function_call', 'content_filter', 'something_new'].map((reason) => openAIFinishToAnthropicStop(reason)),
      ['end_turn', 'max_tokens', 'tool_use', 'tool_use', 'refusal', 'something_new'],
    );
  });

  it('lets present tool calls override a normal stop but not a truncation', () => {
    assert.equal(openAIFinishToAnthropicStop('stop', true), 'tool_use');
    assert.equal(anthropicStopToOpenAIFinish('end_turn', true), 'tool_calls');
    assert.equal(openAIFinishToAnthropicStop('length', true), 'max_tokens');
    assert.equal(anthropicStopToOpenAIFinish('max_tokens', true), 'length');
  });
});

describe('usage', () => {
  it('adds cache counts into prompt_tokens going to OpenAI and subtracts cached tokens coming back', () => {
    const openAI = anthropicUsageToOpenAI({ input_tokens: 50, output_tokens: 20, cache_creation_input_tokens: 30, cache_read_input_tokens: 400 });
    assert.deepEqual(openAI, { prompt_tokens: 480, completion_tokens: 20, total_tokens: 500, prompt_tokens_details: { cached_tokens: 400 } });
    assert.deepEqual(openAIUsageToAnthropic(openAI), { input_tokens: 80, output_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 400 });
  });

  it('converts both formats to TokenUsage with inputTokens counting all input', () => {
    assert.deepEqual(anthropicUsageToTokenUsage({ input_tokens: 50, output_tokens: 20, cache_creation_input_tokens: 30, cache_read_input_tokens: 400 }), {
      inputTokens: 480,
      outputTokens: 20,
      cacheReadTokens: 400,
      cacheWriteTokens: 30,
    });
    assert.deepEqual(openAIUsageToTokenUsage({ prompt_tokens: 480, completion_tokens: 20, total_tokens: 500, prompt_tokens_details: { cached_tokens: 400 } }), {
      inputTokens: 480,
      outputTokens: 20,
      cacheReadTokens: 400,
    });
    assert.deepEqual(
      openAIUsageToTokenUsage({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 }),
      { inputTokens: 3, outputTokens: 4 },
      'unreported cache counts stay absent',
    );
    assert.deepEqual(anthropicUsageToTokenUsage({ input_tokens: 3, output_tokens: 4 }), { inputTokens: 3, outputTokens: 4 });
  });
});

describe('error bodies', () => {
  it('rewrites an OpenAI error as an Anthropic error, keeping the message and a known type', () => {
    const body = JSON.stringify({
      error: {
        message: "This model's maximum context length is 128000 tokens.",
        type: 'invalid_request_error',
        param: 'messages',
        code: 'context_length_exceeded',
      },
    });
    assert.deepEqual(JSON.parse(openAIErrorBodyToAnthropic(body, 400)), {
      type: 'error',
      error: { type: 'invalid_request_error', message: "This model's maximum context length is 128000 tokens." },
    });
  });

  it("chooses the Anthropic type by status when the OpenAI type is not one of Anthropic's", () => {
    const cases: Array<[number, string]> = [
      [401, 'authentication_error'],
      [403, 'permission_error'],
      [404, 'not_found_error'],
      [413, 'request_too_large'],
      [429, 'rate_limit_error'],
      [500, 'api_error'],
      [503, 'overloaded_error'],
      [529, 'overloaded_error'],
      [422, 'invalid_request_error'],
    ];
    for (const [status, type] of cases) {
      const body = JSON.stringify({ error: { message: 'boom', type: 'server_error', param: null, code: null } });
      assert.equal(JSON.parse(openAIErrorBodyToAnthropic(body, status)).error.type, type, `status ${status}`);
    }
  });

  it('rewrites an Anthropic error as an OpenAI error, with server_error for 5xx kinds and rate_limit_exceeded for 429', () => {
    const overloaded = JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    assert.deepEqual(JSON.parse(anthropicErrorBodyToOpenAI(overloaded, 529)), {
      error: { message: 'Overloaded', type: 'server_error', param: null, code: null },
    });
    const limited = JSON.stringify({
      type: 'error',
      error: { type: 'rate_limit_error', message: 'Number of request tokens has exceeded your per-minute rate limit' },
    });
    assert.deepEqual(JSON.parse(anthropicErrorBodyToOpenAI(limited, 429)), {
      error: {
        message: 'Number of request tokens has exceeded your per-minute rate limit',
        type: 'rate_limit_error',
        param: null,
        code: 'rate_limit_exceeded',
      },
    });
    const invalid = JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Field required' } });
    assert.deepEqual(JSON.parse(anthropicErrorBodyToOpenAI(invalid, 400)), {
      error: { message: 'max_tokens: Field required', type: 'invalid_request_error', param: null, code: null },
    });
  });

  it('uses a non-JSON body, truncated to 2000 characters, as the message', () => {
    const html = `<html><body>502 Bad Gateway</body></html>${'x'.repeat(3000)}`;
    const openAI = JSON.parse(anthropicErrorBodyToOpenAI(html, 502));
    assert.equal(openAI.error.type, 'server_error');
    assert.equal(openAI.error.message.length, 2000);
    assert.ok(openAI.error.message.startsWith('<html><body>502 Bad Gateway'));
    const anthropic = JSON.parse(openAIErrorBodyToAnthropic('Internal Server Error', 500));
    assert.deepEqual(anthropic, { type: 'error', error: { type: 'api_error', message: 'Internal Server Error' } });
    assert.equal(JSON.parse(openAIErrorBodyToAnthropic('', 503)).error.message, 'Upstream returned HTTP 503');
  });

  it('reads the message of the looser shapes compatible servers send', () => {
    assert.equal(JSON.parse(openAIErrorBodyToAnthropic(JSON.stringify({ error: 'model not found' }), 404)).error.message, 'model not found');
    assert.equal(JSON.parse(openAIErrorBodyToAnthropic(JSON.stringify({ detail: 'Not authenticated' }), 401)).error.message, 'Not authenticated');
    assert.equal(JSON.parse(anthropicErrorBodyToOpenAI(JSON.stringify({ message: 'plain' }), 400)).error.message, 'plain');
  });
});
