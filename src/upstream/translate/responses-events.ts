import { encodeSse } from '../sse.js';

/** Where a content part's events point: its item, the item's place in the output, the part's place in the item. */
export interface PartPlace {
  item_id: string;
  output_index: number;
  content_index: number;
}

/** What the events of a call's end read from it: a function call's name and arguments, a custom tool call's input. */
export type CallFacts = { type: 'function_call'; id: string; name: string; arguments: string } | { type: 'custom_tool_call'; id: string; input: string };

/** The content parts whose text streams, with the event family and the field that holds the text. */
const STREAMED_PARTS: Readonly<Record<string, { events: string; field: string; extra: Record<string, unknown> }>> = {
  output_text: { events: 'response.output_text', field: 'text', extra: { logprobs: [] } },
  reasoning_text: { events: 'response.reasoning_text', field: 'text', extra: {} },
  refusal: { events: 'response.refusal', field: 'refusal', extra: {} },
};

/**
 * The Responses API's stream events, each numbered (`sequence_number`) as the API numbers them, and
 * the runs of events that open, fill and close an output item and its parts. Shared by the writer
 * that streams a model's answer piece by piece (responses-stream.ts) and by the replay of a whole
 * answer (answer-stream.ts), so both send the same events. Each method returns SSE text.
 */
export class ResponsesEvents {
  private sequence = 0;

  event(type: string, fields: Record<string, unknown>): string {
    return encodeSse(JSON.stringify({ type, sequence_number: this.sequence++, ...fields }), type);
  }

  /** The number the next event gets, taken by an event made elsewhere (an error frame). */
  takeNumber(): number {
    return this.sequence++;
  }

  itemAdded(outputIndex: number, item: unknown): string {
    return this.event('response.output_item.added', { output_index: outputIndex, item });
  }

  itemDone(outputIndex: number, item: unknown): string {
    return this.event('response.output_item.done', { output_index: outputIndex, item });
  }

  partAdded(place: PartPlace, part: unknown): string {
    return this.event('response.content_part.added', { ...place, part });
  }

  /** A piece of a text part (output_text, reasoning_text or refusal); '' for an empty piece or a part that does not stream. */
  partDelta(place: PartPlace, partType: string, delta: string): string {
    const kind = STREAMED_PARTS[partType];
    if (kind === undefined || delta === '') return '';
    return this.event(`${kind.events}.delta`, { ...place, delta, ...kind.extra });
  }

  /** The whole part: its text's `.done` event (for a part that streams), then content_part.done. */
  partDone(place: PartPlace, part: Record<string, unknown>): string {
    const kind = STREAMED_PARTS[String(part['type'])];
    const text = kind === undefined ? '' : this.event(`${kind.events}.done`, { ...place, [kind.field]: part[kind.field] ?? '', ...kind.extra });
    return text + this.event('response.content_part.done', { ...place, part });
  }

  /** A whole part, as the API streams one: added empty, its text as one delta, done. */
  wholePart(place: PartPlace, part: Record<string, unknown>): string {
    const kind = STREAMED_PARTS[String(part['type'])];
    if (kind === undefined) return this.partAdded(place, part) + this.partDone(place, part);
    const text = part[kind.field];
    return (
      this.partAdded(place, { ...part, [kind.field]: '' }) +
      this.partDelta(place, String(part['type']), typeof text === 'string' ? text : '') +
      this.partDone(place, part)
    );
  }

  callArguments(itemId: string, outputIndex: number, delta: string): string {
    if (delta === '') return '';
    return this.event('response.function_call_arguments.delta', { item_id: itemId, output_index: outputIndex, delta });
  }

  /** A call's whole arguments (function) or input (custom tool, sent in one piece: it is known only once whole). */
  callDone(outputIndex: number, item: CallFacts): string {
    const where = { item_id: item.id, output_index: outputIndex };
    if (item.type === 'function_call') return this.event('response.function_call_arguments.done', { ...where, name: item.name, arguments: item.arguments });
    const input = item.input;
    const delta = input === '' ? '' : this.event('response.custom_tool_call_input.delta', { ...where, delta: input });
    return delta + this.event('response.custom_tool_call_input.done', { ...where, input });
  }
}
