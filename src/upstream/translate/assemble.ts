import type { SseEvent } from '../sse.js';
import type { AnthropicUsage, AssembledResponse, OpenAIUsage } from '../../types/index.js';
import { readAnthropicAssistant, readOpenAIAssistant } from './assistant.js';
import type { AssistantParts } from './assistant.js';
import { isRecord, readArray, readString, toolInputToArguments } from './common.js';
import type { StreamEnding } from './format-pairs.js';
import { anthropicStopToOpenAIFinish, normalizeOpenAIFinish } from './stop-reasons.js';
import { decodeAnthropicEvent, decodeOpenAIEvent } from './stream-events.js';
import { anthropicUsageToTokenUsage, mergeAnthropicUsage, openAIUsageToTokenUsage, readAnthropicUsage, readOpenAIUsage } from './usage.js';

/**
 * Every response, whichever format and whether streamed or not, reduced to one AssembledResponse
 * for the turn record. Input is untrusted: malformed parts are skipped, nothing throws.
 */

export function assembleOpenAIResponse(body: unknown): AssembledResponse {
  const response = isRecord(body) ? body : {};
  const choice = readArray(response.choices).find(isRecord);
  const message = isRecord(choice?.message) ? choice.message : {};
  return {
    ...readOpenAIAssistant(message),
    finishReason: normalizeOpenAIFinish(readString(choice?.finish_reason)),
    usage: openAIUsage(readOpenAIUsage(response.usage)),
    model: readString(response.model) ?? null,
  };
}

export function assembleAnthropicResponse(body: unknown): AssembledResponse {
  const response = isRecord(body) ? body : {};
  return {
    ...readAnthropicAssistant(response.content),
    finishReason: anthropicStopToOpenAIFinish(readString(response.stop_reason)),
    usage: anthropicUsage(readAnthropicUsage(response.usage)),
    model: readString(response.model) ?? null,
  };
}

type ToolCall = AssistantParts['toolCalls'][number];

/** Streamed text and tool calls, gathered piece by piece; shared by both stream assemblers. */
class PartsCollector {
  text = '';
  reasoning = '';
  model: string | null = null;
  /** Keyed by the stream's own index (OpenAI tool_calls index, Anthropic block index). */
  private readonly toolCalls = new Map<number, ToolCall & { fallbackArguments: string }>();

  toolCall(key: number): ToolCall | undefined {
    return this.toolCalls.get(key);
  }

  /** `fallbackArguments` stand in when no argument fragment ever arrives. */
  addToolCall(key: number, id: string | undefined, name: string | undefined, fallbackArguments = ''): ToolCall {
    const call = { id: id ?? '', name: name ?? '', arguments: '', fallbackArguments };
    this.toolCalls.set(key, call);
    return call;
  }

  parts(): AssistantParts {
    const toolCalls = [...this.toolCalls.entries()]
      .sort(([left], [right]) => left - right)
      .map(([, call]) => ({ id: call.id, name: call.name, arguments: call.arguments === '' ? call.fallbackArguments : call.arguments }));
    return { text: this.text, reasoning: this.reasoning, toolCalls };
  }
}

export class OpenAIStreamAssembler {
  private readonly collected = new PartsCollector();
  private finishReason: string | undefined;
  private usage: Partial<OpenAIUsage> | undefined;
  private sawDone = false;
  private failure: string | undefined;

  push(event: SseEvent): void {
    const fact = decodeOpenAIEvent(event);
    if (fact.type === 'done') this.sawDone = true;
    if (fact.type === 'error') this.failure ??= fact.message;
    if (fact.type !== 'chunk') return;
    this.collected.model ??= fact.model ?? null;
    this.collected.text += fact.content;
    this.collected.reasoning += fact.reasoning;
    for (const fragment of fact.toolCalls) {
      const call = this.collected.toolCall(fragment.index) ?? this.collected.addToolCall(fragment.index, fragment.id, fragment.name);
      // Some servers repeat id and name in every fragment; only the first counts.
      if (call.id === '' && fragment.id !== undefined) call.id = fragment.id;
      if (call.name === '' && fragment.name !== undefined) call.name = fragment.name;
      call.arguments += fragment.arguments;
    }
    this.finishReason = fact.finishReason ?? this.finishReason;
    this.usage = fact.usage ?? this.usage;
  }

  result(): AssembledResponse {
    return { ...this.collected.parts(), finishReason: normalizeOpenAIFinish(this.finishReason), usage: openAIUsage(this.usage), model: this.collected.model };
  }

  /** A finish reason or `[DONE]` makes the answer whole, as for the stream translators (a server may leave out either). */
  ending(): StreamEnding {
    return streamEnding(this.failure, this.sawDone || this.finishReason !== undefined);
  }
}

export class AnthropicStreamAssembler {
  private readonly collected = new PartsCollector();
  private stopReason: string | undefined;
  private usage: Partial<AnthropicUsage> | undefined;
  private stopped = false;
  private failure: string | undefined;

  push(event: SseEvent): void {
    const fact = decodeAnthropicEvent(event);
    switch (fact.type) {
      case 'message_start':
        this.collected.model ??= fact.model ?? null;
        this.usage = mergeAnthropicUsage(this.usage, fact.usage);
        break;
      case 'text':
        this.collected.text += fact.text;
        break;
      case 'thinking':
        this.collected.reasoning += fact.thinking;
        break;
      case 'tool_start':
        // The real API streams the input as JSON fragments; without them the start's input is it.
        this.collected.addToolCall(fact.blockIndex, fact.id, fact.name, toolInputToArguments(fact.input));
        break;
      case 'tool_arguments': {
        const call = this.collected.toolCall(fact.blockIndex);
        if (call !== undefined) call.arguments += fact.partialJson;
        break;
      }
      case 'message_delta':
        this.stopReason = fact.stopReason ?? this.stopReason;
        this.usage = mergeAnthropicUsage(this.usage, fact.usage);
        break;
      case 'message_stop':
        this.stopped = true;
        break;
      case 'error':
        this.failure ??= fact.message;
        break;
      default:
        break;
    }
  }

  /** Only message_stop ends an Anthropic answer. */
  ending(): StreamEnding {
    return streamEnding(this.failure, this.stopped);
  }

  result(): AssembledResponse {
    return {
      ...this.collected.parts(),
      finishReason: anthropicStopToOpenAIFinish(this.stopReason),
      usage: anthropicUsage(this.usage),
      model: this.collected.model,
    };
  }
}

/** An error event decides, whatever came after it: the client's SDK raised it. */
export function streamEnding(failure: string | undefined, finished: boolean): StreamEnding {
  if (failure !== undefined) return { kind: 'failed', message: failure };
  return finished ? { kind: 'finished' } : { kind: 'cut' };
}

function openAIUsage(usage: Partial<OpenAIUsage> | undefined): AssembledResponse['usage'] {
  return usage === undefined ? null : openAIUsageToTokenUsage(usage);
}

function anthropicUsage(usage: Partial<AnthropicUsage> | undefined): AssembledResponse['usage'] {
  return usage === undefined ? null : anthropicUsageToTokenUsage(usage);
}
