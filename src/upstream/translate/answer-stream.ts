import type { OpenAIChatChunk, OpenAIUsage, RequestFormat } from '../../types/index.js';
import { encodeSse, type SseEvent } from '../sse.js';
import type { AssistantParts } from './assistant.js';
import { isRecord, readArray, readString, toolCallId, unixSeconds } from './common.js';
import { streamTranslator, type AnswerContext } from './format-pairs.js';
import { ResponsesEvents } from './responses-events.js';

/** A whole answer, to be sent as a stream: the RL policy's, or a chat or Anthropic upstream's that answered a stream request with one JSON body. */
export interface WholeAnswer {
  id: string;
  model: string;
  parts: AssistantParts;
  finishReason: string;
  promptTokens: number;
  completionTokens: number;
}

/**
 * A whole answer as the event stream of the client's API: built as OpenAI chunks, and turned into
 * Anthropic or Responses events by the proxy's own stream translation, as an OpenAI upstream's are.
 */
export function answerAsStream(clientFormat: RequestFormat, context: AnswerContext, answer: WholeAnswer): string {
  if (clientFormat === 'openai') {
    const options = context.body['stream_options'];
    const includeUsage = isRecord(options) && options['include_usage'] === true;
    return openAIChunkEvents(answer, { includeUsage, usageFirst: false, ownIds: false })
      .map((event) => encodeSse(event.data))
      .join('');
  }
  // Usage rides on the first chunk too, so Anthropic's message_start carries the input tokens.
  const translator = streamTranslator(clientFormat, 'openai', context);
  let out = '';
  for (const event of openAIChunkEvents(answer, { includeUsage: true, usageFirst: true, ownIds: true })) out += translator.push(event);
  return out + translator.finish();
}

/** The answer's token counts as OpenAI's usage object. */
export function wholeAnswerUsage(answer: Pick<WholeAnswer, 'promptTokens' | 'completionTokens'>): OpenAIUsage {
  return { prompt_tokens: answer.promptTokens, completion_tokens: answer.completionTokens, total_tokens: answer.promptTokens + answer.completionTokens };
}

/**
 * The answer as OpenAI streams one: a role chunk, the reasoning, the text, one chunk per tool
 * call (id, name and whole arguments), the finish reason, the usage chunk when asked, `[DONE]`.
 * A chat client gets an id made up for a call that has none; with `ownIds` the calls keep the
 * answer's own, none included, and the translator names such a call as it does in an upstream's
 * stream (a Responses answer: as its record does, see toolCallItem).
 */
function openAIChunkEvents(answer: WholeAnswer, options: { includeUsage: boolean; usageFirst: boolean; ownIds: boolean }): SseEvent[] {
  const created = unixSeconds();
  const usage = wholeAnswerUsage(answer);
  const chunk = (delta: OpenAIChatChunk['choices'][number]['delta'], finishReason: string | null = null): OpenAIChatChunk => ({
    id: answer.id,
    object: 'chat.completion.chunk',
    created,
    model: answer.model,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  });
  const first = chunk({ role: 'assistant', content: '' });
  if (options.usageFirst) first.usage = usage;
  const chunks: OpenAIChatChunk[] = [first];
  if (answer.parts.reasoning !== '') chunks.push(chunk({ reasoning_content: answer.parts.reasoning }));
  if (answer.parts.text !== '') chunks.push(chunk({ content: answer.parts.text }));
  answer.parts.toolCalls.forEach((call, index) => {
    const id = options.ownIds ? call.id : toolCallId(call.id);
    chunks.push(chunk({ tool_calls: [{ index, ...(id === '' ? {} : { id }), type: 'function', function: { name: call.name, arguments: call.arguments } }] }));
  });
  chunks.push(chunk({}, answer.finishReason));
  if (options.includeUsage) chunks.push({ id: answer.id, object: 'chat.completion.chunk', created, model: answer.model, choices: [], usage });
  return [...chunks.map((value) => ({ event: undefined, data: JSON.stringify(value) })), { event: undefined, data: '[DONE]' }];
}

/** The event a Responses stream ends on, by the response's status. */
const FINAL_EVENT: Readonly<Record<string, string>> = { incomplete: 'response.incomplete', failed: 'response.failed' };

/**
 * A whole Responses answer (an upstream that serves the API answered a stream request with one
 * JSON body) as the events the API streams: the upstream's own response, items and ids, kept (a
 * later `previous_response_id` names them upstream); each text part and each call's arguments as
 * one delta; reasoning and other items added and done as they are; then the event the status
 * ends on (`response.completed`, `response.incomplete` or `response.failed`) carrying the response.
 */
export function responseAsStream(response: Record<string, unknown>): string {
  const events = new ResponsesEvents();
  const opening = { ...response, status: 'in_progress', output: [], error: null, incomplete_details: null, usage: null };
  let out = events.event('response.created', { response: opening }) + events.event('response.in_progress', { response: opening });
  readArray(response['output']).forEach((item, index) => {
    if (isRecord(item)) out += outputItemEvents(events, item, index);
  });
  return out + events.event(FINAL_EVENT[String(response['status'])] ?? 'response.completed', { response });
}

function outputItemEvents(events: ResponsesEvents, item: Record<string, unknown>, index: number): string {
  const id = readString(item['id']) ?? '';
  switch (item['type']) {
    case 'message': {
      let out = events.itemAdded(index, { ...item, status: 'in_progress', content: [] });
      readArray(item['content']).forEach((part, contentIndex) => {
        if (isRecord(part)) out += events.wholePart({ item_id: id, output_index: index, content_index: contentIndex }, part);
      });
      return out + events.itemDone(index, item);
    }
    case 'function_call': {
      const call = { type: 'function_call' as const, id, name: readString(item['name']) ?? '', arguments: readString(item['arguments']) ?? '' };
      return (
        events.itemAdded(index, { ...item, arguments: '', status: 'in_progress' }) +
        events.callArguments(id, index, call.arguments) +
        events.callDone(index, call) +
        events.itemDone(index, item)
      );
    }
    case 'custom_tool_call':
      return (
        events.itemAdded(index, { ...item, input: '' }) +
        events.callDone(index, { type: 'custom_tool_call', id, input: readString(item['input']) ?? '' }) +
        events.itemDone(index, item)
      );
    default:
      return events.itemAdded(index, item) + events.itemDone(index, item);
  }
}
