import type { OpenAIUsage, ResponsesObject, ResponsesOutputItem, ResponsesStatus, ResponsesUsage } from '../../types/index.js';
import type { AssistantParts } from './assistant.js';
import { isRecord, readNumber, readString, unixSeconds } from './common.js';
import { customToolInput, type ResponsesTools } from './responses-tools.js';

/**
 * The pieces of a Responses API answer, shared by the complete and the streamed translation and by
 * answers rebuilt from the turn records: ids, output items, status, usage, the response object.
 */

/** What a Responses answer is built for: its id and the request it answers (echoed back, as the API does). */
export interface ResponsesContext {
  responseId: string;
  request: Record<string, unknown>;
  /** Unix seconds; now when absent. */
  createdAt?: number;
  /** The request's custom and namespaced tools, whose chat calls are read back as the client's own kind of call. */
  tools?: ResponsesTools;
  /** The forced tool that stood for `text.format`'s JSON Schema on an Anthropic upstream (json-answer.ts): its call is output text. */
  jsonTool?: string;
}

/** The id the proxy gives a translated answer: the request id's digits, so the record is found from it. */
export function responseIdFor(requestId: string): string {
  return `resp_${requestId.startsWith('req_') ? requestId.slice(4) : requestId}`;
}

/**
 * Output item ids derived from the response id and the item's place among its kind, so an answer
 * rebuilt from the records names its items as the client first saw them.
 */
export function itemId(prefix: 'msg' | 'rs' | 'fc' | 'ctc' | 'call', responseId: string, index: number): string {
  const suffix = responseId.startsWith('resp_') ? responseId.slice(5) : responseId;
  return index === 0 ? `${prefix}_${suffix}` : `${prefix}_${suffix}_${index}`;
}

export function outputText(text: string): { type: 'output_text'; text: string; annotations: unknown[]; logprobs: unknown[] } {
  return { type: 'output_text', text, annotations: [], logprobs: [] };
}

/** Reasoning, then the text, then one item per tool call: the order a model produces them in. */
export function assistantToResponsesOutput(parts: AssistantParts, responseId: string, tools?: ResponsesTools): ResponsesOutputItem[] {
  const output: ResponsesOutputItem[] = [];
  if (parts.reasoning !== '')
    output.push({ type: 'reasoning', id: itemId('rs', responseId, 0), summary: [], content: [{ type: 'reasoning_text', text: parts.reasoning }] });
  if (parts.text !== '')
    output.push({ type: 'message', id: itemId('msg', responseId, 0), status: 'completed', role: 'assistant', content: [outputText(parts.text)] });
  parts.toolCalls.forEach((call, index) => output.push(toolCallItem(call, responseId, index, tools)));
  return output;
}

/**
 * A chat tool call as the client's item: a `custom_tool_call` with its input for a custom tool, else
 * a `function_call`; both under the tool's own name, with its namespace when it has one. A call the
 * upstream gave no id (some chat servers) gets one from the response id and its place, as item ids
 * do: the client pairs its output with the call by it, and the answer rebuilt from the record (for
 * `previous_response_id`, `GET /v1/responses/{id}`), which keeps the upstream's empty id, names the
 * call the same way.
 */
export function toolCallItem(
  call: AssistantParts['toolCalls'][number],
  responseId: string,
  index: number,
  tools: ResponsesTools | undefined,
): Extract<ResponsesOutputItem, { type: 'function_call' | 'custom_tool_call' }> {
  const tool = tools?.clientTool(call.name);
  const namespace = tool?.namespace === undefined ? {} : { namespace: tool.namespace };
  const callId = call.id !== '' ? call.id : itemId('call', responseId, index);
  if (tool?.kind === 'custom')
    return {
      type: 'custom_tool_call',
      id: itemId('ctc', responseId, index),
      call_id: callId,
      name: tool.name,
      ...namespace,
      input: customToolInput(call.arguments),
    };
  return {
    type: 'function_call',
    id: itemId('fc', responseId, index),
    call_id: callId,
    name: tool?.name ?? call.name,
    ...namespace,
    arguments: call.arguments,
    status: 'completed',
  };
}

/** A finish reason (OpenAI's words) as the Responses status: cut-off answers are `incomplete`, with the reason. */
export function responsesStatus(finishReason: string | null | undefined): { status: ResponsesStatus; incomplete_details: { reason: string } | null } {
  if (finishReason === 'length') return { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
  if (finishReason === 'content_filter') return { status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
  return { status: 'completed', incomplete_details: null };
}

export function openAIUsageToResponses(usage: Partial<OpenAIUsage>): ResponsesUsage {
  const input = readNumber(usage.prompt_tokens) ?? 0;
  const output = readNumber(usage.completion_tokens) ?? 0;
  const promptDetails = isRecord(usage.prompt_tokens_details) ? usage.prompt_tokens_details : {};
  const completionDetails = isRecord(usage['completion_tokens_details']) ? usage['completion_tokens_details'] : {};
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: readNumber(promptDetails.cached_tokens) ?? 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: readNumber(completionDetails.reasoning_tokens) ?? 0 },
    total_tokens: input + output,
  };
}

/** Request fields the response object repeats, with the API's defaults for those the request left out. */
const ECHOED_DEFAULTS: ReadonlyArray<readonly [string, unknown]> = [
  ['instructions', null],
  ['max_output_tokens', null],
  ['metadata', {}],
  ['parallel_tool_calls', true],
  ['previous_response_id', null],
  ['store', true],
  ['temperature', 1],
  ['text', { format: { type: 'text' } }],
  ['tool_choice', 'auto'],
  ['tools', []],
  ['top_p', 1],
  ['truncation', 'disabled'],
  ['user', null],
];

export interface ResponseFields {
  status: ResponsesStatus;
  model: string;
  output: ResponsesOutputItem[];
  usage: ResponsesUsage | null;
  error?: { code: string; message: string } | null;
  incomplete_details?: { reason: string } | null;
}

/** The whole response object, as `responses.create` returns it and `response.completed` carries it. */
export function responseObject(context: ResponsesContext, fields: ResponseFields): ResponsesObject {
  const request = context.request;
  const echoed: Record<string, unknown> = {};
  for (const [key, fallback] of ECHOED_DEFAULTS) echoed[key] = request[key] ?? fallback;
  const reasoning = isRecord(request['reasoning']) ? request['reasoning'] : {};
  return {
    id: context.responseId,
    object: 'response',
    created_at: context.createdAt ?? unixSeconds(),
    status: fields.status,
    error: fields.error ?? null,
    incomplete_details: fields.incomplete_details ?? null,
    model: fields.model !== '' ? fields.model : (readString(request['model']) ?? ''),
    output: fields.output,
    ...echoed,
    reasoning: { effort: reasoning['effort'] ?? null, summary: reasoning['summary'] ?? null },
    usage: fields.usage,
  };
}
