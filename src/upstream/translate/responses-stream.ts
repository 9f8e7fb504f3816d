import { streamErrorFrame } from '../../shared/api-errors.js';
import type { OpenAIUsage, ResponsesOutputItem } from '../../types/index.js';
import { ResponsesEvents } from './responses-events.js';
import { customToolInput } from './responses-tools.js';
import {
  openAIUsageToResponses,
  outputText,
  responseObject,
  responsesStatus,
  itemId,
  toolCallItem,
  type ResponseFields,
  type ResponsesContext,
} from './responses-output.js';

type MessageItem = Extract<ResponsesOutputItem, { type: 'message' }>;
type ReasoningItem = Extract<ResponsesOutputItem, { type: 'reasoning' }>;
type CallItem = Extract<ResponsesOutputItem, { type: 'function_call' | 'custom_tool_call' }>;

/** A tool call being streamed; a custom tool's input is its chat arguments' one string, read once they are whole. */
interface OpenCall {
  item: CallItem;
  index: number;
  arguments: string;
}

/** The text or reasoning item being streamed: one at a time, as a model writes them. */
interface OpenContent {
  item: MessageItem | ReasoningItem;
  index: number;
  text: string;
}

/**
 * Writes the Responses API's event stream from what a model says, piece by piece, whatever format
 * it came in (stream-to-responses.ts reads chat chunks and Anthropic events into these calls):
 * response.created, then per output item `output_item.added`, its content and deltas, and
 * `output_item.done` with the whole item (what Codex reads), then response.completed carrying the
 * whole response. Every event is numbered (`sequence_number`). Each method returns the SSE text to
 * send, possibly ''; after `finish` or `fail`, nothing more.
 */
export class ResponsesStreamWriter {
  private readonly events = new ResponsesEvents();
  private started = false;
  private ended = false;
  private model = '';
  private readonly output: ResponsesOutputItem[] = [];
  private open: OpenContent | undefined;
  /** Function calls stay open until the end: chat servers may interleave the fragments of parallel calls. */
  private readonly calls = new Map<number, OpenCall>();
  private messages = 0;
  private reasonings = 0;

  constructor(private readonly context: ResponsesContext) {}

  get done(): boolean {
    return this.ended;
  }

  /** response.created and response.in_progress, once, before anything else. */
  start(model?: string): string {
    if (this.started || this.ended) return '';
    this.started = true;
    this.model = model ?? '';
    const response = this.response({ status: 'in_progress', usage: null });
    return this.events.event('response.created', { response }) + this.events.event('response.in_progress', { response });
  }

  text(delta: string): string {
    if (delta === '' || this.ended) return '';
    let out = this.start();
    if (this.open?.item.type !== 'message') {
      out += this.closeContent();
      const item: MessageItem = {
        type: 'message',
        id: itemId('msg', this.context.responseId, this.messages++),
        status: 'in_progress',
        role: 'assistant',
        content: [],
      };
      out += this.openContent(item, outputText(''));
    }
    return out + this.appendContent('output_text', delta);
  }

  reasoning(delta: string): string {
    if (delta === '' || this.ended) return '';
    let out = this.start();
    if (this.open?.item.type !== 'reasoning') {
      out += this.closeContent();
      const item: ReasoningItem = { type: 'reasoning', id: itemId('rs', this.context.responseId, this.reasonings++), summary: [], content: [] };
      out += this.openContent(item, { type: 'reasoning_text', text: '' });
    }
    return out + this.appendContent('reasoning_text', delta);
  }

  /** A tool call begins; `key` is the source's own index for it (chat tool_calls index, Anthropic block index). */
  toolStart(key: number, callId: string | undefined, name: string): string {
    if (this.ended || this.calls.has(key)) return '';
    const out = this.start() + this.closeContent();
    const item = toolCallItem({ id: callId ?? '', name, arguments: '' }, this.context.responseId, this.calls.size, this.context.tools);
    if (item.type === 'function_call') item.status = 'in_progress';
    const index = this.output.push(item) - 1;
    this.calls.set(key, { item, index, arguments: '' });
    return out + this.events.itemAdded(index, item);
  }

  toolArguments(key: number, delta: string): string {
    const call = this.calls.get(key);
    if (call === undefined || delta === '' || this.ended) return '';
    call.arguments += delta;
    if (call.item.type !== 'function_call') return '';
    call.item.arguments = call.arguments;
    return this.events.callArguments(call.item.id, call.index, delta);
  }

  /** Closes every open item and sends the whole response: completed, or incomplete when the answer was cut off. */
  finish(finishReason: string | null, usage: Partial<OpenAIUsage> | undefined): string {
    if (this.ended) return '';
    let out = this.start() + this.closeContent();
    for (const call of this.calls.values()) out += this.closeCall(call);
    this.ended = true;
    const status = responsesStatus(finishReason);
    const response = this.response({ ...status, usage: usage === undefined ? null : openAIUsageToResponses(usage) });
    return out + this.events.event(status.status === 'completed' ? 'response.completed' : 'response.incomplete', { response });
  }

  /**
   * Ends the stream with `response.failed` (what Codex acts on) and an `error` event (what the
   * OpenAI SDK raises). Items left open stay so: nothing follows a failure.
   */
  fail(message: string, code = 'upstream_stream_error'): string {
    if (this.ended) return '';
    this.ended = true;
    const error = { kind: 'api_error' as const, message, code };
    if (!this.started) return streamErrorFrame('responses', error, this.events.takeNumber());
    const response = this.response({ status: 'failed', usage: null, error: { code: 'server_error', message } });
    return this.events.event('response.failed', { response }) + streamErrorFrame('responses', error, this.events.takeNumber());
  }

  private closeCall({ item, index, arguments: chatArguments }: OpenCall): string {
    if (item.type === 'function_call') item.status = 'completed';
    else item.input = customToolInput(chatArguments);
    return this.events.callDone(index, item) + this.events.itemDone(index, item);
  }

  private openContent(item: MessageItem | ReasoningItem, part: Record<string, unknown>): string {
    const index = this.output.push(item) - 1;
    this.open = { item, index, text: '' };
    return this.events.itemAdded(index, item) + this.events.partAdded({ item_id: item.id, output_index: index, content_index: 0 }, part);
  }

  private appendContent(partType: 'output_text' | 'reasoning_text', delta: string): string {
    const open = this.open!;
    open.text += delta;
    return this.events.partDelta({ item_id: open.item.id, output_index: open.index, content_index: 0 }, partType, delta);
  }

  private closeContent(): string {
    const open = this.open;
    if (open === undefined) return '';
    this.open = undefined;
    const { item, index, text } = open;
    const place = { item_id: item.id, output_index: index, content_index: 0 };
    if (item.type === 'message') {
      const part = outputText(text);
      item.content = [part];
      item.status = 'completed';
      return this.events.partDone(place, part) + this.events.itemDone(index, item);
    }
    const part = { type: 'reasoning_text' as const, text };
    item.content = [part];
    return this.events.partDone(place, part) + this.events.itemDone(index, item);
  }

  /** Events are serialised as they are made, so the live output list is each event's snapshot. */
  private response(fields: Omit<ResponseFields, 'model' | 'output'>) {
    return responseObject(this.context, { model: this.model, output: this.output, ...fields });
  }
}
