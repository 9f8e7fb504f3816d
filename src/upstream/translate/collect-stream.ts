import type { SseEvent } from '../sse.js';
import type { RequestFormat } from '../../types/index.js';
import { isRecord, parseJson, readArray, readNumber, readString } from './common.js';

/**
 * A whole stream of one API's events as the one JSON answer the same API gives without a stream,
 * for a client that asked for no stream from an upstream that streams anyway. Each API's events
 * are read as its own SDK accumulates them; fields the proxy does not know are kept as they came.
 */

/** The answer a stream amounts to, or why it holds none (it failed, or ended before its final event). */
export type CollectedAnswer = { answer: Record<string, unknown> } | { problem: string };

const ENDED_EARLY = (final: string): CollectedAnswer => ({ problem: `it ended before its final event (${final})` });

function failed(error: unknown, fallback: string): CollectedAnswer {
  const message = isRecord(error) ? readString(error['message']) : readString(error);
  return { problem: `it failed: ${(message ?? fallback).slice(0, 500)}` };
}

export function collectStream(format: RequestFormat, events: readonly SseEvent[]): CollectedAnswer {
  if (format === 'responses') return collectResponses(events);
  return format === 'openai' ? collectChatCompletion(events) : collectAnthropicMessage(events);
}

/** The response `response.completed` (or `response.incomplete`) carries: what the non-stream call returns. */
function collectResponses(events: readonly SseEvent[]): CollectedAnswer {
  for (const event of events) {
    const data = parseJson(event.data);
    if (!isRecord(data)) continue;
    const type = readString(data['type']) ?? event.event;
    const response = isRecord(data['response']) ? data['response'] : undefined;
    if ((type === 'response.completed' || type === 'response.incomplete') && response) return { answer: response };
    if (type === 'response.failed') return failed(response?.['error'], 'the response failed');
    if (type === 'error') return failed(isRecord(data['error']) ? data['error'] : data, 'the upstream sent an error event');
  }
  return ENDED_EARLY('response.completed');
}

/** Delta fields that arrive in pieces; any other field of a delta keeps its last value. */
const CHAT_TEXT_FIELDS = new Set(['content', 'reasoning_content', 'reasoning', 'refusal']);

interface ChatChoice {
  index: number;
  message: Record<string, unknown>;
  toolCalls: Map<number, { id?: string; type: string; function: { name: string; arguments: string } }>;
  finish_reason: string | null;
  logprobs: { content: unknown[] } | null;
}

/** Chat Completions chunks merged into one `chat.completion`, choice by choice, tool call by tool call. */
function collectChatCompletion(events: readonly SseEvent[]): CollectedAnswer {
  const head: Record<string, unknown> = {};
  const choices = new Map<number, ChatChoice>();
  let usage: unknown;
  let done = false;
  for (const event of events) {
    if (event.data.trim() === '[DONE]') {
      done = true;
      continue;
    }
    const chunk = parseJson(event.data);
    if (!isRecord(chunk)) continue;
    if (chunk['error'] !== undefined) return failed(chunk['error'], 'the upstream sent an error chunk');
    for (const key of ['id', 'created', 'model', 'system_fingerprint', 'service_tier'])
      if (chunk[key] !== undefined && chunk[key] !== null) head[key] ??= chunk[key];
    if (isRecord(chunk['usage'])) usage = chunk['usage'];
    for (const raw of readArray(chunk['choices'])) if (isRecord(raw)) mergeChoice(choices, raw);
  }
  const list = [...choices.values()].sort((a, b) => a.index - b.index);
  if (!done && (list.length === 0 || list.some((choice) => choice.finish_reason === null))) return ENDED_EARLY('[DONE]');
  const answer: Record<string, unknown> = {
    id: head['id'] ?? '',
    object: 'chat.completion',
    created: head['created'] ?? Math.floor(Date.now() / 1000),
    model: head['model'] ?? '',
    choices: list.map((choice) => {
      const message = { ...choice.message };
      if (choice.toolCalls.size > 0) message['tool_calls'] = [...choice.toolCalls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
      return { index: choice.index, message, finish_reason: choice.finish_reason, logprobs: choice.logprobs };
    }),
  };
  for (const key of ['system_fingerprint', 'service_tier']) if (head[key] !== undefined) answer[key] = head[key];
  if (usage !== undefined) answer['usage'] = usage;
  return { answer };
}

function mergeChoice(choices: Map<number, ChatChoice>, raw: Record<string, unknown>): void {
  const index = readNumber(raw['index']) ?? 0;
  let choice = choices.get(index);
  if (!choice) {
    choice = { index, message: { role: 'assistant', content: null }, toolCalls: new Map(), finish_reason: null, logprobs: null };
    choices.set(index, choice);
  }
  const delta = isRecord(raw['delta']) ? raw['delta'] : {};
  for (const [key, value] of Object.entries(delta)) {
    if (key === 'role' || value === null || value === undefined) continue;
    if (key === 'tool_calls') {
      for (const call of readArray(value)) if (isRecord(call)) mergeToolCall(choice, call);
    } else if (CHAT_TEXT_FIELDS.has(key) && typeof value === 'string') choice.message[key] = `${readString(choice.message[key]) ?? ''}${value}`;
    // A legacy function call and audio arrive in pieces too: names and ids whole, the rest appended.
    else if ((key === 'function_call' || key === 'audio') && isRecord(value))
      choice.message[key] = mergePieces(choice.message[key], value, key === 'audio' ? ['data', 'transcript'] : ['arguments']);
    else choice.message[key] = value;
  }
  const finish = readString(raw['finish_reason']);
  if (finish !== undefined) choice.finish_reason = finish;
  const logprobs = isRecord(raw['logprobs']) ? readArray(raw['logprobs']['content']) : [];
  if (logprobs.length > 0) (choice.logprobs ??= { content: [] }).content.push(...logprobs);
}

/** `fragment` over what came before: the `appended` fields joined, every other field replaced (as the SDK's own stream reader does). */
function mergePieces(before: unknown, fragment: Record<string, unknown>, appended: readonly string[]): Record<string, unknown> {
  const merged: Record<string, unknown> = isRecord(before) ? { ...before } : {};
  for (const [key, value] of Object.entries(fragment)) {
    if (value === null || value === undefined) continue;
    merged[key] = appended.includes(key) && typeof value === 'string' ? `${readString(merged[key]) ?? ''}${value}` : value;
  }
  return merged;
}

function mergeToolCall(choice: ChatChoice, fragment: Record<string, unknown>): void {
  const index = readNumber(fragment['index']) ?? choice.toolCalls.size;
  let call = choice.toolCalls.get(index);
  if (!call) {
    call = { type: 'function', function: { name: '', arguments: '' } };
    choice.toolCalls.set(index, call);
  }
  const id = readString(fragment['id']);
  if (id) call.id = id;
  const type = readString(fragment['type']);
  if (type) call.type = type;
  const fn = isRecord(fragment['function']) ? fragment['function'] : {};
  // A name comes whole (in the first fragment, or again in each); the arguments in pieces.
  const name = readString(fn['name']);
  if (name) call.function.name = name;
  call.function.arguments += readString(fn['arguments']) ?? '';
}

/** Messages events merged into one `message`: its start, each content block with its deltas, the final delta. */
function collectAnthropicMessage(events: readonly SseEvent[]): CollectedAnswer {
  let message: Record<string, unknown> | undefined;
  const blocks = new Map<number, Record<string, unknown>>();
  const toolInput = new Map<number, string>();
  for (const event of events) {
    const data = parseJson(event.data);
    if (!isRecord(data)) continue;
    const index = readNumber(data['index']) ?? 0;
    switch (readString(data['type']) ?? event.event) {
      case 'message_start':
        message = isRecord(data['message']) ? { ...data['message'] } : {};
        break;
      case 'content_block_start': {
        const block = isRecord(data['content_block']) ? { ...data['content_block'] } : {};
        blocks.set(index, block);
        if (block['type'] === 'tool_use' || block['type'] === 'server_tool_use') toolInput.set(index, '');
        break;
      }
      case 'content_block_delta':
        mergeBlockDelta(blocks.get(index), isRecord(data['delta']) ? data['delta'] : {}, (json) => toolInput.set(index, (toolInput.get(index) ?? '') + json));
        break;
      case 'message_delta': {
        if (!message) break;
        const delta = isRecord(data['delta']) ? data['delta'] : {};
        for (const [key, value] of Object.entries(delta)) message[key] = value;
        // The final counts replace the start's; a count the delta leaves out (or sends as null) stays.
        if (isRecord(data['usage'])) message['usage'] = mergePieces(message['usage'], data['usage'], []);
        break;
      }
      case 'message_stop': {
        if (!message) return ENDED_EARLY('message_start');
        for (const [blockIndex, json] of toolInput) {
          const block = blocks.get(blockIndex);
          if (block && json !== '') block['input'] = parseJson(json) ?? {};
        }
        message['content'] = [...blocks.entries()].sort(([a], [b]) => a - b).map(([, block]) => block);
        return { answer: message };
      }
      case 'error':
        return failed(data['error'], 'the upstream sent an error event');
      default:
        break;
    }
  }
  return ENDED_EARLY('message_stop');
}

function mergeBlockDelta(block: Record<string, unknown> | undefined, delta: Record<string, unknown>, toolJson: (json: string) => void): void {
  if (!block) return;
  const append = (key: string, value: unknown) => {
    if (typeof value === 'string') block[key] = `${readString(block[key]) ?? ''}${value}`;
  };
  switch (delta['type']) {
    case 'text_delta':
      return append('text', delta['text']);
    case 'thinking_delta':
      return append('thinking', delta['thinking']);
    case 'signature_delta':
      block['signature'] = delta['signature'];
      return;
    case 'input_json_delta':
      return toolJson(readString(delta['partial_json']) ?? '');
    case 'citations_delta':
      block['citations'] = [...readArray(block['citations']), delta['citation']];
      return;
    default:
      return;
  }
}
