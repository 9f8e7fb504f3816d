import type { SseEvent } from '../sse.js';
import type { AnthropicUsage, OpenAIUsage } from '../../types/index.js';
import { isRecord, toolInputToArguments } from './common.js';
import { ResponsesStreamWriter } from './responses-stream.js';
import type { ResponsesContext } from './responses-output.js';
import { jsonAnswerStop } from './json-answer.js';
import { anthropicStopToOpenAIFinish, normalizeOpenAIFinish } from './stop-reasons.js';
import { decodeAnthropicEvent, decodeOpenAIEvent } from './stream-events.js';
import { anthropicUsageToOpenAI, mergeAnthropicUsage } from './usage.js';

/** A stream translator into Responses API events: the upstream's events read into one writer. */
abstract class ToResponsesStream {
  protected readonly writer: ResponsesStreamWriter;

  constructor(context: ResponsesContext) {
    this.writer = new ResponsesStreamWriter(context);
  }

  get done(): boolean {
    return this.writer.done;
  }

  abstract push(event: SseEvent): string;
  abstract finish(): string;

  fail(message: string, code?: string): string {
    return this.writer.fail(message, code);
  }
}

/**
 * Chat Completions chunks as Responses API events. Chat servers may send usage after the finish
 * reason, so the response completes at `[DONE]` or `finish()`.
 */
export class OpenAIToResponsesStream extends ToResponsesStream {
  private finishReason: string | undefined;
  private usage: Partial<OpenAIUsage> | undefined;

  push(event: SseEvent): string {
    if (this.writer.done) return '';
    const fact = decodeOpenAIEvent(event);
    switch (fact.type) {
      case 'done':
        return this.finish();
      case 'error':
        return this.fail(fact.message);
      case 'ignored':
        return '';
    }
    if (fact.usage !== undefined) this.usage = fact.usage;
    if (!fact.hasChoice) return '';
    let out = this.writer.start(fact.model) + this.writer.reasoning(fact.reasoning) + this.writer.text(fact.content);
    for (const fragment of fact.toolCalls) {
      out += this.writer.toolStart(fragment.index, fragment.id, fragment.name ?? '') + this.writer.toolArguments(fragment.index, fragment.arguments);
    }
    this.finishReason = fact.finishReason ?? this.finishReason;
    return out;
  }

  finish(): string {
    return this.writer.finish(normalizeOpenAIFinish(this.finishReason), this.usage);
  }
}

/** Anthropic's named events as Responses API events; thinking becomes reasoning text. */
export class AnthropicToResponsesStream extends ToResponsesStream {
  private stopReason: string | undefined;
  private usage: Partial<AnthropicUsage> | undefined;
  private calls = 0;
  /** The block of the forced tool's call that stands for `text.format` (json-answer.ts), streamed as output text. */
  private jsonBlock: number | undefined;
  private jsonSent = false;
  private readonly jsonTool: string | undefined;

  constructor(context: ResponsesContext) {
    super(context);
    this.jsonTool = context.jsonTool;
  }

  push(event: SseEvent): string {
    if (this.writer.done) return '';
    const fact = decodeAnthropicEvent(event);
    switch (fact.type) {
      case 'message_start':
        this.usage = mergeAnthropicUsage(this.usage, fact.usage);
        return this.writer.start(fact.model);
      case 'text':
        return this.writer.text(fact.text);
      case 'thinking':
        return this.writer.reasoning(fact.thinking);
      case 'tool_start': {
        // The real API starts with `input: {}` and streams the arguments; some servers send them here.
        const initial = isRecord(fact.input) && Object.keys(fact.input).length > 0 ? toolInputToArguments(fact.input) : '';
        if (fact.name === this.jsonTool && this.jsonBlock === undefined) {
          this.jsonBlock = fact.blockIndex;
          return this.jsonText(initial);
        }
        this.calls++;
        return this.writer.toolStart(fact.blockIndex, fact.id, fact.name) + this.writer.toolArguments(fact.blockIndex, initial);
      }
      case 'tool_arguments':
        if (fact.blockIndex === this.jsonBlock) return this.jsonText(fact.partialJson);
        return this.writer.toolArguments(fact.blockIndex, fact.partialJson);
      case 'message_delta':
        this.usage = mergeAnthropicUsage(this.usage, fact.usage);
        this.stopReason = fact.stopReason ?? this.stopReason;
        return '';
      case 'message_stop':
        return this.finish();
      case 'error':
        return this.fail(fact.message);
      case 'ignored':
        return '';
    }
  }

  finish(): string {
    const usage = this.usage === undefined ? undefined : anthropicUsageToOpenAI(this.usage);
    // A call with empty input streams no arguments; its answer is still the empty object.
    const emptyJson = this.jsonBlock !== undefined && !this.jsonSent && !this.writer.done ? this.jsonText('{}') : '';
    return emptyJson + this.writer.finish(anthropicStopToOpenAIFinish(jsonAnswerStop(this.stopReason, this.jsonTool), this.calls > 0), usage);
  }

  private jsonText(text: string): string {
    if (text === '') return '';
    this.jsonSent = true;
    return this.writer.text(text);
  }
}
