import type { SseEvent } from '../sse.js';
import type { AnthropicUsage, OpenAIUsage } from '../../types/index.js';
import { isRecord, parseJson, readArray, readNumber, readReasoning, readString } from './common.js';
import { readAnthropicUsage, readOpenAIUsage } from './usage.js';

/**
 * Decoders from raw SSE events to the few facts the stream translators and assemblers act on.
 * Untrusted input: anything malformed decodes to `ignored` instead of throwing.
 */

export type AnthropicStreamFact =
  | { type: 'message_start'; id: string | undefined; model: string | undefined; usage: Partial<AnthropicUsage> | undefined }
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string }
  | { type: 'tool_start'; blockIndex: number; id: string | undefined; name: string; input: unknown }
  | { type: 'tool_arguments'; blockIndex: number; partialJson: string }
  | { type: 'message_delta'; stopReason: string | undefined; usage: Partial<AnthropicUsage> | undefined }
  | { type: 'message_stop' }
  | StreamErrorFact
  | { type: 'ignored' };

/** An error event: its message, and its kind where the API names one (`overloaded_error`, `server_error`), else ''. */
export interface StreamErrorFact {
  type: 'error';
  message: string;
  kind: string;
}

const IGNORED = { type: 'ignored' } as const;

export function decodeAnthropicEvent(event: SseEvent): AnthropicStreamFact {
  const data = parseJson(event.data);
  if (!isRecord(data)) return IGNORED;
  switch (readString(data.type) ?? event.event) {
    case 'message_start': {
      const message = isRecord(data.message) ? data.message : {};
      return { type: 'message_start', id: readString(message.id), model: readString(message.model), usage: readAnthropicUsage(message.usage) };
    }
    case 'content_block_start':
      return decodeBlockStart(readNumber(data.index) ?? 0, isRecord(data.content_block) ? data.content_block : {});
    case 'content_block_delta':
      return decodeBlockDelta(readNumber(data.index) ?? 0, isRecord(data.delta) ? data.delta : {});
    case 'message_delta': {
      const delta = isRecord(data.delta) ? data.delta : {};
      return { type: 'message_delta', stopReason: readString(delta.stop_reason), usage: readAnthropicUsage(data.usage) };
    }
    case 'message_stop':
      return { type: 'message_stop' };
    case 'error':
      return errorFact(data.error, 'type');
    default:
      return IGNORED;
  }
}

function decodeBlockStart(blockIndex: number, block: Record<string, unknown>): AnthropicStreamFact {
  if (block.type === 'tool_use') return { type: 'tool_start', blockIndex, id: readString(block.id), name: readString(block.name) ?? '', input: block.input };
  // The real API starts text and thinking blocks empty, but a start may carry initial text.
  const text = block.type === 'text' ? readString(block.text) : undefined;
  if (text) return { type: 'text', text };
  const thinking = block.type === 'thinking' ? readString(block.thinking) : undefined;
  if (thinking) return { type: 'thinking', thinking };
  return IGNORED;
}

function decodeBlockDelta(blockIndex: number, delta: Record<string, unknown>): AnthropicStreamFact {
  const text = delta.type === 'text_delta' ? readString(delta.text) : undefined;
  if (text !== undefined) return { type: 'text', text };
  const thinking = delta.type === 'thinking_delta' ? readString(delta.thinking) : undefined;
  if (thinking !== undefined) return { type: 'thinking', thinking };
  const partialJson = delta.type === 'input_json_delta' ? readString(delta.partial_json) : undefined;
  if (partialJson !== undefined) return { type: 'tool_arguments', blockIndex, partialJson };
  return IGNORED;
}

export interface OpenAIToolCallFragment {
  index: number;
  id: string | undefined;
  name: string | undefined;
  arguments: string;
}

export type OpenAIStreamFact =
  | {
      type: 'chunk';
      id: string | undefined;
      model: string | undefined;
      /** False for the `choices: []` usage chunk. */
      hasChoice: boolean;
      content: string;
      reasoning: string;
      toolCalls: OpenAIToolCallFragment[];
      finishReason: string | undefined;
      usage: Partial<OpenAIUsage> | undefined;
    }
  | { type: 'done' }
  | StreamErrorFact
  | { type: 'ignored' };

export function decodeOpenAIEvent(event: SseEvent): OpenAIStreamFact {
  if (event.data.trim() === '[DONE]') return { type: 'done' };
  const data = parseJson(event.data);
  if (!isRecord(data)) return IGNORED;
  if (data.error !== undefined && data.error !== null) return errorFact(data.error, 'code');
  const choices = readArray(data.choices).filter(isRecord);
  // Only choice 0 is followed: neither Anthropic nor the turn record has room for `n > 1`.
  const choice = choices.find((candidate) => (readNumber(candidate.index) ?? 0) === 0);
  const delta = isRecord(choice?.delta) ? choice.delta : {};
  return {
    type: 'chunk',
    id: readString(data.id),
    model: readString(data.model),
    hasChoice: choice !== undefined,
    content: readString(delta.content) ?? readString(delta.refusal) ?? '',
    reasoning: readReasoning(delta),
    toolCalls: decodeToolCalls(delta),
    finishReason: readString(choice?.finish_reason),
    usage: readOpenAIUsage(data.usage),
  };
}

/** A fragment without `index` (some servers omit it) is taken to be the array position. */
function decodeToolCalls(delta: Record<string, unknown>): OpenAIToolCallFragment[] {
  const fragments = readArray(delta.tool_calls).map((call, position): OpenAIToolCallFragment | undefined => {
    if (!isRecord(call)) return undefined;
    const definition = isRecord(call.function) ? call.function : {};
    return {
      index: readNumber(call.index) ?? position,
      id: readString(call.id),
      name: readString(definition.name),
      arguments: readString(definition.arguments) ?? '',
    };
  });
  if (isRecord(delta.function_call)) {
    const legacy = delta.function_call;
    fragments.push({ index: 0, id: undefined, name: readString(legacy.name), arguments: readString(legacy.arguments) ?? '' });
  }
  return fragments.filter((fragment): fragment is OpenAIToolCallFragment => fragment !== undefined);
}

/** An error value as an error event's fact: Anthropic names its kind in `type`; chat servers in `type`, else in `code`. */
function errorFact(error: unknown, fallbackField: 'type' | 'code'): StreamErrorFact {
  const fields = isRecord(error) ? error : {};
  return { type: 'error', message: errorMessage(error), kind: readString(fields.type) ?? readString(fields[fallbackField]) ?? '' };
}

/** The message of an error value in either API's shape, or of a bare string. */
export function errorMessage(error: unknown): string {
  if (typeof error === 'string' && error !== '') return error;
  const message = isRecord(error) ? readString(error.message) : undefined;
  return message !== undefined && message !== '' ? message : 'Upstream stream error';
}
