import type { SseEvent } from '../sse.js';
import type { AssembledResponse, TokenUsage } from '../../types/index.js';
import type { AssistantParts } from './assistant.js';
import { streamEnding } from './assemble.js';
import { isRecord, parseJson, readArray, readNumber, readString } from './common.js';
import type { StreamEnding } from './format-pairs.js';
import { errorMessage } from './stream-events.js';

/**
 * Responses API answers (from an upstream that serves them, or as the client got them) reduced to
 * one AssembledResponse for the turn record. Untrusted input: malformed parts are skipped.
 */

export function assembleResponsesResponse(body: unknown): AssembledResponse {
  const response = isRecord(body) ? body : {};
  const parts = readOutput(response.output);
  const result: AssembledResponse = {
    ...parts,
    finishReason: finishReason(response, parts.toolCalls.length > 0),
    usage: readUsage(response.usage),
    model: readString(response.model) ?? null,
  };
  const id = readString(response.id);
  if (id !== undefined) result.id = id;
  return result;
}

/**
 * A streamed answer: the final event (completed, incomplete or failed) carries the whole response;
 * a stream cut before it is assembled from the deltas and the items that were done.
 */
export class ResponsesStreamAssembler {
  private final: Record<string, unknown> | undefined;
  private started: Record<string, unknown> | undefined;
  private failure: string | undefined;
  private text = '';
  private reasoning = '';
  private readonly toolCalls: AssistantParts['toolCalls'] = [];

  push(event: SseEvent): void {
    const data = parseJson(event.data);
    if (!isRecord(data)) return;
    switch (readString(data.type) ?? event.event) {
      case 'response.created':
        if (isRecord(data.response)) this.started = data.response;
        break;
      case 'response.output_text.delta':
        this.text += readString(data.delta) ?? '';
        break;
      case 'response.reasoning_text.delta':
      case 'response.reasoning_summary_text.delta':
        this.reasoning += readString(data.delta) ?? '';
        break;
      case 'response.output_item.done':
        this.toolCalls.push(...readOutput([data.item]).toolCalls);
        break;
      case 'response.failed':
        this.failure ??= errorMessage(isRecord(data.response) ? data.response.error : undefined);
        if (isRecord(data.response)) this.final = data.response;
        break;
      case 'response.completed':
      case 'response.incomplete':
        if (isRecord(data.response)) this.final = data.response;
        break;
      case 'error':
        // The API's error event carries its message at the top; the OpenAI SDK's shape nests it in `error` too.
        this.failure ??= readString(data.message) ?? errorMessage(data.error);
        break;
      default:
        break;
    }
  }

  result(): AssembledResponse {
    if (this.final !== undefined) return assembleResponsesResponse(this.final);
    const result: AssembledResponse = {
      text: this.text,
      reasoning: this.reasoning,
      toolCalls: this.toolCalls,
      finishReason: null,
      usage: null,
      model: readString(this.started?.model) ?? null,
    };
    const id = readString(this.started?.id);
    if (id !== undefined) result.id = id;
    return result;
  }

  /** response.completed or response.incomplete makes the answer whole; response.failed and `error` are failures. */
  ending(): StreamEnding {
    return streamEnding(this.failure, this.final !== undefined);
  }
}

/** Text of the message items, reasoning (summaries and raw text), and the function and custom tool calls. */
function readOutput(output: unknown): AssistantParts {
  const parts: AssistantParts = { text: '', reasoning: '', toolCalls: [] };
  for (const item of readArray(output)) {
    if (!isRecord(item)) continue;
    switch (item.type) {
      case 'message':
        for (const part of readArray(item.content)) if (isRecord(part)) parts.text += readString(part.text) ?? readString(part.refusal) ?? '';
        break;
      case 'reasoning':
        for (const part of [...readArray(item.summary), ...readArray(item.content)]) if (isRecord(part)) parts.reasoning += readString(part.text) ?? '';
        break;
      case 'function_call':
        parts.toolCalls.push({ id: readString(item.call_id) ?? '', name: readString(item.name) ?? '', arguments: readString(item.arguments) ?? '' });
        break;
      case 'custom_tool_call':
        parts.toolCalls.push({ id: readString(item.call_id) ?? '', name: readString(item.name) ?? '', arguments: readString(item.input) ?? '' });
        break;
      default:
        break;
    }
  }
  return parts;
}

/** The status in the record's words (OpenAI's finish reasons). */
function finishReason(response: Record<string, unknown>, hasToolCalls: boolean): string | null {
  switch (response.status) {
    case 'completed':
      return hasToolCalls ? 'tool_calls' : 'stop';
    case 'incomplete': {
      const reason = isRecord(response.incomplete_details) ? readString(response.incomplete_details.reason) : undefined;
      return reason === 'content_filter' ? 'content_filter' : 'length';
    }
    default:
      return null;
  }
}

function readUsage(value: unknown): TokenUsage | null {
  if (!isRecord(value)) return null;
  const input = readNumber(value.input_tokens);
  const output = readNumber(value.output_tokens);
  if (input === undefined && output === undefined) return null;
  const usage: TokenUsage = { inputTokens: input ?? 0, outputTokens: output ?? 0 };
  const cached = isRecord(value.input_tokens_details) ? readNumber(value.input_tokens_details.cached_tokens) : undefined;
  if (cached !== undefined) usage.cacheReadTokens = cached;
  return usage;
}
