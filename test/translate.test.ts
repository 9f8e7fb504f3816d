import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { anthropicRequestToOpenAI, openAIRequestToAnthropic } from '../src/upstream/translate/index.js';
import type { AnthropicMessagesRequest, OpenAIChatRequest } from '../src/types/index.js';

const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

function toAnthropic(request: Partial<OpenAIChatRequest>, options: { defaultMaxTokens?: number; model?: string } = {}): AnthropicMessagesRequest {
  return openAIRequestToAnthropic({ model: 'gpt-test', messages: [], ...request }, { defaultMaxTokens: 4096, ...options });
}

function toOpenAI(request: Partial<AnthropicMessagesRequest>, options: { model?: string } = {}): OpenAIChatRequest {
  return anthropicRequestToOpenAI({ model: 'claude-test', max_tokens: 1024, messages: [], ...request }, options);
}

describe('openAIRequestToAnthropic', () => {
  it('collects system and developer messages from anywhere into one system string, in order', () => {
    const result = toAnthropic({
      messages: [
        { role: 'system', content: 'You are helpful.' },
        { role: 'user', content: 'Hi' },
        { role: 'developer', content: [{ type: 'text', text: 'Be brief.' }] },
      ],
    });
    assert.equal(result.system, 'You are helpful.\n\nBe brief.');
    assert.deepEqual(result.messages, [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }]);
  });

  it('keeps system as text blocks when a part carries cache_control', () => {
    const result = toAnthropic({
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'Stable prefix', cache_control: { type: 'ephemeral' } }] },
        { role: 'system', content: 'Volatile' },
        { role: 'user', content: 'Hi' },
      ],
    });
    assert.deepEqual(result.system, [
      { type: 'text', text: 'Stable prefix', cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'Volatile' },
    ]);
  });

  it('turns a base64 data URL into a base64 image block and an https URL into a url image block', () => {
    const result = toAnthropic({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Compare these' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg', detail: 'high' } },
          ],
        },
      ],
    });
    assert.deepEqual(result.messages[0]?.content, [
      { type: 'text', text: 'Compare these' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_BASE64 } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
    ]);
  });

  it('converts function tools and every tool_choice form', () => {
    const tools: OpenAIChatRequest['tools'] = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Weather now',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      },
      { type: 'function', function: { name: 'ping' } },
    ];
    const result = toAnthropic({ tools, tool_choice: 'auto' });
    assert.deepEqual(result.tools, [
      { name: 'get_weather', description: 'Weather now', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
      { name: 'ping', input_schema: { type: 'object', properties: {} } },
    ]);
    assert.deepEqual(result.tool_choice, { type: 'auto' });
    assert.deepEqual(toAnthropic({ tools, tool_choice: 'none' }).tool_choice, { type: 'none' });
    assert.deepEqual(toAnthropic({ tools, tool_choice: 'required' }).tool_choice, { type: 'any' });
    assert.deepEqual(toAnthropic({ tools, tool_choice: { type: 'function', function: { name: 'ping' } } }).tool_choice, { type: 'tool', name: 'ping' });
  });

  it('maps parallel_tool_calls false onto the tool choice, creating auto when there is none', () => {
    const tools: OpenAIChatRequest['tools'] = [{ type: 'function', function: { name: 'ping' } }];
    assert.deepEqual(toAnthropic({ tools, parallel_tool_calls: false }).tool_choice, { type: 'auto', disable_parallel_tool_use: true });
    assert.deepEqual(toAnthropic({ tools, tool_choice: 'required', parallel_tool_calls: false }).tool_choice, { type: 'any', disable_parallel_tool_use: true });
    const withoutTools = toAnthropic({ parallel_tool_calls: false, tool_choice: 'auto' });
    assert.equal(withoutTools.tool_choice, undefined, 'Anthropic rejects tool_choice without tools');
    assert.equal('parallel_tool_calls' in withoutTools, false);
  });

  it('turns assistant tool calls into tool_use blocks and merges tool results with the next user text into one user message', () => {
    const result = toAnthropic({
      messages: [
        { role: 'user', content: 'Weather in Paris and Rome?' },
        {
          role: 'assistant',
          content: 'Checking both.',
          reasoning_content: 'The user wants two cities.',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
            { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'Sunny, 24C' },
        { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: 'Rain, 18C' }] },
        { role: 'user', content: 'Thanks! And tomorrow?' },
      ],
    });
    assert.deepEqual(result.messages, [
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris and Rome?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Checking both.' },
          { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'call_2', name: 'get_weather', input: { city: 'Rome' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: 'Sunny, 24C' },
          { type: 'tool_result', tool_use_id: 'call_2', content: [{ type: 'text', text: 'Rain, 18C' }] },
          { type: 'text', text: 'Thanks! And tomorrow?' },
        ],
      },
    ]);
  });

  it('keeps arguments that are not a JSON object under _raw and reads empty arguments as {}', () => {
    const result = toAnthropic({
      messages: [
        { role: 'user', content: 'go' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_a', type: 'function', function: { name: 'broken', arguments: '{"city": "Par' } },
            { id: 'call_b', type: 'function', function: { name: 'empty', arguments: '' } },
          ],
        },
      ],
    });
    assert.deepEqual(result.messages[1]?.content, [
      { type: 'tool_use', id: 'call_a', name: 'broken', input: { _raw: '{"city": "Par' } },
      { type: 'tool_use', id: 'call_b', name: 'empty', input: {} },
    ]);
  });

  it('puts tool results first when a user message comes before the tool messages, and cleans ids Anthropic would reject', () => {
    const result = toAnthropic({
      messages: [
        { role: 'assistant', content: '', tool_calls: [{ id: 'functions.search:0', type: 'function', function: { name: 'search', arguments: '{}' } }] },
        { role: 'user', content: 'carrier text' },
        { role: 'tool', tool_call_id: 'functions.search:0', content: 'found' },
      ],
    });
    assert.deepEqual(result.messages, [
      { role: 'assistant', content: [{ type: 'tool_use', id: 'functions_search_0', name: 'search', input: {} }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'functions_search_0', content: 'found' },
          { type: 'text', text: 'carrier text' },
        ],
      },
    ]);
  });

  it('merges consecutive same-role messages and drops empty assistant messages', () => {
    const result = toAnthropic({
      messages: [
        { role: 'user', content: 'first' },
        { role: 'user', content: [{ type: 'text', text: 'second' }] },
        { role: 'assistant', content: '' },
        { role: 'assistant', content: 'one' },
        { role: 'assistant', content: [{ type: 'text', text: 'two' }] },
        { role: 'user', content: 'third' },
      ],
    });
    assert.deepEqual(result.messages, [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'first' },
          { type: 'text', text: 'second' },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'one' },
          { type: 'text', text: 'two' },
        ],
      },
      { role: 'user', content: [{ type: 'text', text: 'third' }] },
    ]);
  });

  it('pairs a legacy function_call with its function result, and keeps a nameless function message as text', () => {
    const result = toAnthropic({
      messages: [
        { role: 'user', content: 'time?' },
        { role: 'assistant', content: null, function_call: { name: 'clock', arguments: '{}' } },
        { role: 'function', name: 'clock', content: '12:00' },
        { role: 'function', content: 'orphan output' },
      ],
    });
    assert.deepEqual(result.messages.slice(1), [
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_clock', name: 'clock', input: {} }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_clock', content: '12:00' },
          { type: 'text', text: 'orphan output' },
        ],
      },
    ]);
  });

  it('maps sampling, stop, limits and user, drops OpenAI-only keys and passes unknown keys through', () => {
    const result = toAnthropic({
      model: 'gpt-4o',
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 100,
      max_completion_tokens: 200,
      temperature: 1.7,
      top_p: 0.9,
      stop: ['END', '  '],
      user: 'user-42',
      n: 1,
      seed: 7,
      presence_penalty: 0.1,
      frequency_penalty: 0.1,
      response_format: { type: 'text' },
      logit_bias: {},
      store: false,
      reasoning_effort: 'low',
      top_k: 5,
      custom_field: { kept: true },
    });
    assert.deepEqual(result, {
      model: 'gpt-4o',
      messages: [],
      max_tokens: 200,
      stream: true,
      temperature: 1,
      top_p: 0.9,
      stop_sequences: ['END'],
      metadata: { user_id: 'user-42' },
      top_k: 5,
      custom_field: { kept: true },
    });
  });

  it('uses max_tokens, then the default, and lets options.model override the model', () => {
    assert.equal(toAnthropic({ max_tokens: 300 }).max_tokens, 300);
    assert.equal(toAnthropic({}, { defaultMaxTokens: 1234 }).max_tokens, 1234);
    assert.deepEqual(toAnthropic({ stop: 'STOP' }).stop_sequences, ['STOP']);
    assert.equal(toAnthropic({ model: 'client-model' }, { model: 'claude-sonnet-4-5' }).model, 'claude-sonnet-4-5');
  });
});

describe('anthropicRequestToOpenAI', () => {
  it('puts a string system prompt first as a system message', () => {
    const result = toOpenAI({ system: 'You are helpful.', messages: [{ role: 'user', content: 'Hi' }] });
    assert.deepEqual(result.messages, [
      { role: 'system', content: 'You are helpful.' },
      { role: 'user', content: 'Hi' },
    ]);
  });

  it('flattens system text blocks into one string and drops their cache_control', () => {
    const result = toOpenAI({
      system: [
        { type: 'text', text: 'Stable', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Volatile' },
      ],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral' } }] }],
    });
    assert.deepEqual(result.messages, [
      { role: 'system', content: 'Stable\n\nVolatile' },
      { role: 'user', content: 'Hi' },
    ]);
  });

  it('turns base64 and URL image blocks into image_url parts', () => {
    const result = toOpenAI({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_BASE64 } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
            { type: 'text', text: 'What are these?' },
          ],
        },
      ],
    });
    assert.deepEqual(result.messages, [
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          { type: 'text', text: 'What are these?' },
        ],
      },
    ]);
  });

  it('converts tools and every tool_choice form, with disable_parallel_tool_use as parallel_tool_calls false', () => {
    const tools: AnthropicMessagesRequest['tools'] = [
      { name: 'get_weather', description: 'Weather now', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
      { type: 'web_search_20250305', name: 'web_search' } as unknown as NonNullable<AnthropicMessagesRequest['tools']>[number],
    ];
    const result = toOpenAI({ tools, tool_choice: { type: 'auto', disable_parallel_tool_use: true } });
    assert.deepEqual(result.tools, [
      {
        type: 'function',
        function: { name: 'get_weather', description: 'Weather now', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
      },
    ]);
    assert.equal(result.tool_choice, 'auto');
    assert.equal(result.parallel_tool_calls, false);
    assert.equal(toOpenAI({ tools, tool_choice: { type: 'any' } }).tool_choice, 'required');
    assert.equal(toOpenAI({ tools, tool_choice: { type: 'none' } }).tool_choice, 'none');
    assert.deepEqual(toOpenAI({ tools, tool_choice: { type: 'tool', name: 'get_weather' } }).tool_choice, {
      type: 'function',
      function: { name: 'get_weather' },
    });
    assert.equal('parallel_tool_calls' in toOpenAI({ tools, tool_choice: { type: 'any' } }), false);
  });

  it('turns tool_use into tool_calls, drops thinking, and emits tool messages before the rest of the user message', () => {
    const result = toOpenAI({
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Need the tool.', signature: 'sig' },
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Paris' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Also, hurry.' },
            {
              type: 'tool_result',
              tool_use_id: 'toolu_01',
              content: [
                { type: 'text', text: 'Sunny' },
                { type: 'text', text: '24C' },
              ],
            },
          ],
        },
      ],
    });
    assert.deepEqual(result.messages, [
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [{ id: 'toolu_01', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'toolu_01', content: 'Sunny\n\n24C' },
      { role: 'user', content: 'Also, hurry.' },
    ]);
  });

  it('gives a tool-only assistant turn null content, keeps error results, and moves tool result images into a user message', () => {
    const result = toOpenAI({
      messages: [
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_02', name: 'screenshot', input: {} }] },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_02',
              is_error: true,
              content: [
                { type: 'text', text: 'partial capture' },
                { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_BASE64 } },
              ],
            },
          ],
        },
      ],
    });
    assert.deepEqual(result.messages, [
      { role: 'assistant', content: null, tool_calls: [{ id: 'toolu_02', type: 'function', function: { name: 'screenshot', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'toolu_02', content: 'partial capture' },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } }] },
    ]);
  });

  it('restores raw tool arguments that were kept under _raw', () => {
    const result = toOpenAI({
      messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_03', name: 'broken', input: { _raw: '{"city": "Par' } }] }],
    });
    assert.equal(result.messages[0]?.tool_calls?.[0]?.function.arguments, '{"city": "Par');
  });

  it('maps sampling, stop, limits, stream usage and user, drops Anthropic-only keys and passes unknown keys through', () => {
    const result = toOpenAI({
      model: 'claude-sonnet-4-5',
      max_tokens: 512,
      stream: true,
      temperature: 0.3,
      top_p: 0.8,
      top_k: 40,
      stop_sequences: ['END'],
      metadata: { user_id: 'user-42' },
      thinking: { type: 'enabled', budget_tokens: 2048 },
      service_tier: 'auto',
      custom_field: 'kept',
    });
    assert.deepEqual(result, {
      model: 'claude-sonnet-4-5',
      messages: [],
      max_tokens: 512,
      temperature: 0.3,
      top_p: 0.8,
      stop: ['END'],
      stream: true,
      stream_options: { include_usage: true },
      user: 'user-42',
      custom_field: 'kept',
    });
  });

  it('lets options.model override the model and leaves stream_options out of non-stream requests', () => {
    const result = toOpenAI({ stream: false }, { model: 'gpt-4o-mini' });
    assert.equal(result.model, 'gpt-4o-mini');
    assert.equal(result.stream, false);
    assert.equal(result.stream_options, undefined);
  });
});

describe('request round trip', () => {
  it('keeps text, tool calls and tool results through OpenAI → Anthropic → OpenAI', () => {
    const original: OpenAIChatRequest = {
      model: 'm',
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'q' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
        { role: 'tool', tool_call_id: 'call_9', content: 'r' },
      ],
    };
    const back = anthropicRequestToOpenAI(openAIRequestToAnthropic(original, { defaultMaxTokens: 10 }), {});
    assert.deepEqual(back.messages, original.messages);
  });
});

describe('documents', () => {
  it('carries a base64 PDF both ways between an Anthropic document block and an OpenAI file part', () => {
    const pdf = 'JVBERi0xLjQK';
    const openAI = toOpenAI({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', title: 'report.pdf', source: { type: 'base64', media_type: 'application/pdf', data: pdf } },
            { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain notes' } },
          ],
        },
      ],
    });
    // A document by URL has no chat form: refused, naming it, rather than left out.
    assert.throws(
      () => toOpenAI({ messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } }] }] }),
      /^BadRequestError: messages\.0\.content\.0: a document reaches/,
    );
    assert.deepEqual(openAI.messages, [
      {
        role: 'user',
        content: [
          { type: 'file', file: { file_data: `data:application/pdf;base64,${pdf}`, filename: 'report.pdf' } },
          { type: 'text', text: 'plain notes' },
        ],
      },
    ]);
    const anthropic = toAnthropic({ messages: openAI.messages });
    assert.deepEqual(anthropic.messages[0]?.content, [
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf } },
      { type: 'text', text: 'plain notes' },
    ]);
  });
});
