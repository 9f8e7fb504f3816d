import { encodeSse } from '../sse.js';
import type { SseEvent } from '../sse.js';
import { streamErrorFrame } from '../../shared/api-errors.js';
import type { AnthropicUsage, OpenAIChatChunk } from '../../types/index.js';
import { isRecord, prefixedId, toolCallId, toolInputToArguments, unixSeconds } from './common.js';
import { jsonAnswerStop } from './json-answer.js';
import { anthropicStopToOpenAIFinish } from './stop-reasons.js';
import { decodeAnthropicEvent } from './stream-events.js';
import { anthropicUsageToOpenAI, mergeAnthropicUsage } from './usage.js';

type Delta = OpenAIChatChunk['choices'][number]['delta'];

const DONE_FRAME = encodeSse('[DONE]');

/**
 * Turns an Anthropic event stream into OpenAI chat.completion.chunk frames, event by event.
 * Each method returns the SSE text to send (possibly ''); after `[DONE]` or an error, nothing more.
 */
export class AnthropicToOpenAIStream {
  private readonly includeUsage: boolean;
  private readonly modelOverride: string | undefined;
  private id = '';
  private model = '';
  private created = 0;
  private started = false;
  private finishSent = false;
  private isDone = false;
  /** Anthropic content block index → OpenAI tool_calls index (tool blocks counted from 0). */
  private readonly toolIndexes = new Map<number, number>();
  private stopReason: string | undefined;
  private usage: Partial<AnthropicUsage> | undefined;
  /** The forced tool that stands for the request's JSON Schema (json-answer.ts), and the block of its call, streamed as text. */
  private readonly jsonTool: string | undefined;
  private jsonBlock: number | undefined;
  private jsonSent = false;

  /** `jsonTool`: see anthropicResponseToOpenAI. */
  constructor(options: { model?: string; includeUsage: boolean; jsonTool?: string }) {
    this.includeUsage = options.includeUsage;
    this.modelOverride = options.model;
    this.jsonTool = options.jsonTool;
  }

  get done(): boolean {
    return this.isDone;
  }

  push(event: SseEvent): string {
    if (this.isDone) return '';
    const fact = decodeAnthropicEvent(event);
    switch (fact.type) {
      case 'message_start':
        this.usage = mergeAnthropicUsage(this.usage, fact.usage);
        return this.start(fact.id, fact.model);
      case 'text':
        return this.start() + this.chunk({ content: fact.text });
      case 'thinking':
        return this.start() + this.chunk({ reasoning_content: fact.thinking });
      case 'tool_start':
        return this.start() + this.toolStart(fact.blockIndex, fact.id, fact.name, fact.input);
      case 'tool_arguments':
        return this.toolArguments(fact.blockIndex, fact.partialJson);
      case 'message_delta':
        this.usage = mergeAnthropicUsage(this.usage, fact.usage);
        this.stopReason = fact.stopReason ?? this.stopReason;
        return this.start() + this.finishChunk();
      case 'message_stop':
        return this.finish();
      case 'error':
        return this.fail(fact.message);
      case 'ignored':
        return '';
    }
  }

  finish(): string {
    if (this.isDone) return '';
    let out = this.start() + this.finishChunk();
    if (this.includeUsage) out += this.frame({ choices: [], usage: anthropicUsageToOpenAI(this.usage ?? {}) });
    this.isDone = true;
    return out + DONE_FRAME;
  }

  /** The error chunk the untranslated path sends too, so a chat client reads both alike. */
  fail(message: string, code = 'upstream_stream_error'): string {
    if (this.isDone) return '';
    this.isDone = true;
    return streamErrorFrame('openai', { kind: 'api_error', message, code });
  }

  /** The first chunk announces the role; it is sent once, even if message_start never came. */
  private start(id?: string, model?: string): string {
    if (this.started) return '';
    this.started = true;
    this.id = prefixedId('chatcmpl-', id);
    this.model = this.modelOverride ?? model ?? '';
    this.created = unixSeconds();
    return this.chunk({ role: 'assistant', content: '' });
  }

  private toolStart(blockIndex: number, id: string | undefined, name: string, input: unknown): string {
    // The real API starts with `input: {}` and streams the arguments; some servers send them here.
    const initial = isRecord(input) && Object.keys(input).length > 0 ? toolInputToArguments(input) : '';
    if (name === this.jsonTool && this.jsonBlock === undefined) {
      this.jsonBlock = blockIndex;
      return this.jsonText(initial);
    }
    const index = this.toolIndexes.size;
    this.toolIndexes.set(blockIndex, index);
    return this.chunk({ tool_calls: [{ index, id: toolCallId(id), type: 'function', function: { name, arguments: initial } }] });
  }

  private toolArguments(blockIndex: number, partialJson: string): string {
    if (blockIndex === this.jsonBlock) return this.jsonText(partialJson);
    const index = this.toolIndexes.get(blockIndex);
    if (index === undefined || partialJson === '') return '';
    return this.chunk({ tool_calls: [{ index, function: { arguments: partialJson } }] });
  }

  private jsonText(text: string): string {
    if (text === '') return '';
    this.jsonSent = true;
    return this.chunk({ content: text });
  }

  private finishChunk(): string {
    if (this.finishSent) return '';
    this.finishSent = true;
    // A call with empty input streams no arguments; its answer is still the empty object.
    const emptyJson = this.jsonBlock !== undefined && !this.jsonSent ? this.jsonText('{}') : '';
    const finishReason = anthropicStopToOpenAIFinish(jsonAnswerStop(this.stopReason, this.jsonTool), this.toolIndexes.size > 0) ?? 'stop';
    return emptyJson + this.chunk({}, finishReason);
  }

  private chunk(delta: Delta, finishReason: string | null = null): string {
    return this.frame({ choices: [{ index: 0, delta, finish_reason: finishReason }] });
  }

  private frame(fields: Pick<OpenAIChatChunk, 'choices' | 'usage'>): string {
    const chunk: OpenAIChatChunk = { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, ...fields };
    return encodeSse(JSON.stringify(chunk));
  }
}
