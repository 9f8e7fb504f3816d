import { encodeSse } from '../sse.js';
import type { SseEvent } from '../sse.js';
import { streamErrorFrame } from '../../shared/api-errors.js';
import type { AnthropicContentBlock, OpenAIUsage } from '../../types/index.js';
import { unsignedThinkingBlock } from './assistant.js';
import { prefixedId, toolUseId } from './common.js';
import { openAIFinishToAnthropicStop } from './stop-reasons.js';
import { decodeOpenAIEvent } from './stream-events.js';
import type { OpenAIStreamFact, OpenAIToolCallFragment } from './stream-events.js';
import { openAIUsageToAnthropic } from './usage.js';

type OpenBlock = { kind: 'text' } | { kind: 'thinking' } | { kind: 'tool'; toolIndex: number };
type Chunk = Extract<OpenAIStreamFact, { type: 'chunk' }>;

/**
 * Turns OpenAI chunks into Anthropic's named events, in the order the real API sends them:
 * message_start, then one block at a time (start, deltas, stop), then message_delta and
 * message_stop. OpenAI may send usage after the finish reason, so the closing events wait for
 * `[DONE]` or `finish()`.
 */
export class OpenAIToAnthropicStream {
  private readonly modelOverride: string | undefined;
  private started = false;
  private isDone = false;
  private blockCount = 0;
  private openBlock: OpenBlock | undefined;
  private readonly seenToolIndexes = new Set<number>();
  private finishReason: string | undefined;
  private usage: Partial<OpenAIUsage> | undefined;

  constructor(options: { model?: string }) {
    this.modelOverride = options.model;
  }

  get done(): boolean {
    return this.isDone;
  }

  push(event: SseEvent): string {
    if (this.isDone) return '';
    const fact = decodeOpenAIEvent(event);
    switch (fact.type) {
      case 'chunk':
        return this.chunk(fact);
      case 'done':
        return this.finish();
      case 'error':
        return this.fail(fact.message);
      case 'ignored':
        return '';
    }
  }

  finish(): string {
    if (this.isDone) return '';
    this.isDone = true;
    const out = this.start(undefined, undefined) + this.closeBlock();
    const stopReason = openAIFinishToAnthropicStop(this.finishReason, this.seenToolIndexes.size > 0) ?? 'end_turn';
    return (
      out +
      this.event({ type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: this.finalUsage() }) +
      this.event({ type: 'message_stop' })
    );
  }

  /** Blocks are left open on purpose: after an error event the client expects nothing more. Anthropic errors carry no code. */
  fail(message: string): string {
    if (this.isDone) return '';
    this.isDone = true;
    return streamErrorFrame('anthropic', { kind: 'api_error', message });
  }

  private chunk(chunk: Chunk): string {
    if (chunk.usage !== undefined) this.usage = chunk.usage;
    if (!chunk.hasChoice) return '';
    let out = this.start(chunk.id, chunk.model);
    if (chunk.reasoning !== '') out += this.appendTo({ kind: 'thinking' }, unsignedThinkingBlock(''), { type: 'thinking_delta', thinking: chunk.reasoning });
    if (chunk.content !== '') out += this.appendTo({ kind: 'text' }, { type: 'text', text: '' }, { type: 'text_delta', text: chunk.content });
    for (const fragment of chunk.toolCalls) out += this.toolFragment(fragment);
    if (chunk.finishReason !== undefined) {
      this.finishReason = chunk.finishReason;
      out += this.closeBlock();
    }
    return out;
  }

  private start(id: string | undefined, model: string | undefined): string {
    if (this.started) return '';
    this.started = true;
    const inputTokens = this.usage === undefined ? 0 : openAIUsageToAnthropic(this.usage).input_tokens;
    const message = {
      id: prefixedId('msg_', id),
      type: 'message',
      role: 'assistant',
      model: this.modelOverride ?? model ?? '',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: inputTokens, output_tokens: 0 },
    };
    return this.event({ type: 'message_start', message });
  }

  /**
   * A fragment for a tool call whose block was already closed (servers that interleave parallel
   * calls) cannot be delivered: Anthropic blocks never reopen.
   */
  private toolFragment(fragment: OpenAIToolCallFragment): string {
    const isOpen = this.openBlock?.kind === 'tool' && this.openBlock.toolIndex === fragment.index;
    if (!isOpen && this.seenToolIndexes.has(fragment.index)) return '';
    let out = '';
    if (!isOpen) {
      this.seenToolIndexes.add(fragment.index);
      out +=
        this.closeBlock() +
        this.open({ kind: 'tool', toolIndex: fragment.index }, { type: 'tool_use', id: toolUseId(fragment.id), name: fragment.name ?? '', input: {} });
    }
    if (fragment.arguments !== '') out += this.delta({ type: 'input_json_delta', partial_json: fragment.arguments });
    return out;
  }

  /** Appends to the open text or thinking block, first opening one of that kind if needed. */
  private appendTo(block: OpenBlock, contentBlock: AnthropicContentBlock, delta: Record<string, unknown>): string {
    const out = this.openBlock?.kind === block.kind ? '' : this.closeBlock() + this.open(block, contentBlock);
    return out + this.delta(delta);
  }

  private open(block: OpenBlock, contentBlock: AnthropicContentBlock): string {
    this.openBlock = block;
    return this.event({ type: 'content_block_start', index: this.blockCount, content_block: contentBlock });
  }

  private delta(delta: Record<string, unknown>): string {
    return this.event({ type: 'content_block_delta', index: this.blockCount, delta });
  }

  private closeBlock(): string {
    if (this.openBlock === undefined) return '';
    this.openBlock = undefined;
    const out = this.event({ type: 'content_block_stop', index: this.blockCount });
    this.blockCount++;
    return out;
  }

  private finalUsage(): Record<string, number> {
    if (this.usage === undefined) return { output_tokens: 0 };
    const usage = openAIUsageToAnthropic(this.usage);
    const result: Record<string, number> = { input_tokens: usage.input_tokens, output_tokens: usage.output_tokens };
    if (usage.cache_read_input_tokens) result.cache_read_input_tokens = usage.cache_read_input_tokens;
    return result;
  }

  private event(data: { type: string; [key: string]: unknown }): string {
    return encodeSse(JSON.stringify(data), data.type);
  }
}
