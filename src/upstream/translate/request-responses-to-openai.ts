import type { OpenAIChatRequest, OpenAIContentPart, OpenAIMessage, OpenAIToolChoice, ResponsesRequest } from '../../types/index.js';
import { isRecord, readArray, readNumber, readString, toolCallId } from './common.js';
import { customToolArguments, responsesTools, type ResponsesTools } from './responses-tools.js';

/**
 * A Responses API request as a Chat Completions request (Anthropic upstreams get it through
 * request-openai-to-anthropic.ts). Items without a chat form are left out: reasoning (chat servers
 * take no reasoning back), item references, and the calls of OpenAI's hosted tools. Custom and
 * namespaced tools become chat function tools (responses-tools.ts), and their calls chat tool calls.
 */

/** Top-level keys that mean the same in both APIs; every other Responses key is Responses-only. */
const SHARED_KEYS = ['temperature', 'top_p', 'user', 'seed'] as const;

/** Separate text parts of one message are separate paragraphs. */
const PARAGRAPH = '\n\n';

/** The parts `contentText` reads: text every message carries (refusal: an assistant's answer). */
const TEXT_TYPES = new Set(['input_text', 'output_text', 'text', 'refusal']);

export interface ResponsesTranslationOptions {
  model?: string;
  /**
   * The conversation before this request (input and output items of earlier responses), for a
   * request that names a `previous_response_id`: a chat upstream has no memory of its own.
   */
  history?: readonly unknown[];
}

export function responsesRequestToOpenAI(request: ResponsesRequest, options: ResponsesTranslationOptions): OpenAIChatRequest {
  const previous = readString(request.previous_response_id);
  if (previous !== undefined && options.history === undefined)
    throw new Error(`previous_response_id ${previous} is not among the responses MetaClaw has recorded, and this upstream keeps no responses of its own`);
  const messages: OpenAIMessage[] = [];
  const instructions = readString(request.instructions);
  if (instructions !== undefined && instructions !== '') messages.push({ role: 'system', content: instructions });
  const items = [...(options.history ?? []), ...responsesInputItems(request.input)];
  const tools = responsesTools(request, items);
  const attachments: OpenAIContentPart[] = [];
  for (const item of items) appendItem(messages, item, tools, attachments);
  flushAttachments(messages, attachments);

  const result: OpenAIChatRequest = { model: options.model ?? request.model ?? '', messages };
  for (const key of SHARED_KEYS) if (request[key] !== undefined && request[key] !== null) (result as Record<string, unknown>)[key] = request[key];
  const maxTokens = readNumber(request.max_output_tokens);
  if (maxTokens !== undefined) result.max_tokens = maxTokens;
  if (request.stream === true) {
    result.stream = true;
    // Without this a chat stream carries no usage, and the Responses answer must report it.
    result.stream_options = { include_usage: true };
  }
  const responseFormat = textFormatToResponseFormat(request['text']);
  if (responseFormat !== undefined) result['response_format'] = responseFormat;
  const effort = isRecord(request['reasoning']) ? readString(request['reasoning']['effort']) : undefined;
  if (effort !== undefined) result['reasoning_effort'] = effort;
  Object.assign(result, convertTools(request, tools));
  return result;
}

/** `input` as a list of items: a bare string is one user message. */
export function responsesInputItems(input: unknown): unknown[] {
  if (typeof input === 'string') return [{ type: 'message', role: 'user', content: input }];
  return readArray(input);
}

/** An item's kind; messages may leave their `type` out. */
export function responsesItemType(item: Record<string, unknown>): string | undefined {
  return readString(item.type) ?? (item.role === undefined ? undefined : 'message');
}

/**
 * `attachments`: the images, files and audio of the tool outputs appended last. A chat `tool`
 * message holds text only, so they follow the run of tool messages in a user message of their own
 * (as an Anthropic tool result's images do in request-anthropic-to-openai.ts), not dropped.
 */
function appendItem(messages: OpenAIMessage[], item: unknown, tools: ResponsesTools, attachments: OpenAIContentPart[]): void {
  if (!isRecord(item)) return;
  const kind = responsesItemType(item);
  const output = kind === 'function_call_output' || kind === 'custom_tool_call_output';
  if (!output) flushAttachments(messages, attachments);
  switch (kind) {
    case 'message':
      appendMessage(messages, item);
      break;
    case 'function_call':
      appendCall(messages, item, tools, readString(item.arguments) ?? '');
      break;
    case 'custom_tool_call':
      appendCall(messages, item, tools, customToolArguments(readString(item.input) ?? ''));
      break;
    case 'function_call_output':
    case 'custom_tool_call_output':
      messages.push({ role: 'tool', tool_call_id: toolCallId(item.call_id), content: contentText(item.output) });
      attachments.push(
        ...readArray(item.output)
          .filter(isRecord)
          .filter((part) => !TEXT_TYPES.has(readString(part.type) ?? ''))
          .flatMap(userPart),
      );
      break;
    default:
      break;
  }
}

/** The tool outputs' attachments so far, as the user message after their tool messages. */
function flushAttachments(messages: OpenAIMessage[], attachments: OpenAIContentPart[]): void {
  if (attachments.length === 0) return;
  messages.push({ role: 'user', content: attachments.splice(0) });
}

/** A call as the assistant's chat tool call, under the chat name its tool was given. */
function appendCall(messages: OpenAIMessage[], item: Record<string, unknown>, tools: ResponsesTools, chatArguments: string): void {
  (assistantTurn(messages).tool_calls ??= []).push({
    id: toolCallId(item.call_id),
    type: 'function',
    function: { name: tools.chatName(readString(item.name) ?? '', readString(item.namespace)), arguments: chatArguments },
  });
}

function appendMessage(messages: OpenAIMessage[], item: Record<string, unknown>): void {
  switch (item.role) {
    case 'assistant': {
      // The pieces of one answer, as chat has them.
      const text = contentText(item.content, '');
      if (text === '') return;
      const turn = assistantTurn(messages);
      turn.content = typeof turn.content === 'string' && turn.content !== '' ? `${turn.content}${text}` : text;
      return;
    }
    case 'system':
    case 'developer': {
      const text = contentText(item.content);
      if (text !== '') messages.push({ role: 'system', content: text });
      return;
    }
    default:
      messages.push({ role: 'user', content: userContent(item.content) });
  }
}

/**
 * The assistant message the next call or text belongs to: the last message when it is the
 * assistant's, else a new one. A model's text and its function calls are separate items in the
 * Responses API and one message in chat.
 */
function assistantTurn(messages: OpenAIMessage[]): OpenAIMessage {
  const last = messages.at(-1);
  if (last?.role === 'assistant') return last;
  const turn: OpenAIMessage = { role: 'assistant', content: null };
  messages.push(turn);
  return turn;
}

/** The text of any content: a string, or its text, output text and refusal parts. */
function contentText(content: unknown, separator = PARAGRAPH): string {
  if (typeof content === 'string') return content;
  return readArray(content)
    .map((part) => (isRecord(part) ? (readString(part.text) ?? readString(part.refusal)) : undefined))
    .filter((text): text is string => text !== undefined)
    .join(separator);
}

/** User content: text alone becomes one string; images, files and audio become chat parts. */
function userContent(content: unknown): string | OpenAIContentPart[] {
  if (typeof content === 'string') return content;
  const parts = readArray(content).filter(isRecord).flatMap(userPart);
  if (parts.every((part) => part.type === 'text')) return parts.map((part) => readString(part.text) ?? '').join(PARAGRAPH);
  return parts;
}

function userPart(part: Record<string, unknown>): OpenAIContentPart[] {
  switch (part.type) {
    case 'input_text':
    case 'output_text':
    case 'text':
      return [{ type: 'text', text: readString(part.text) ?? '' }];
    case 'input_image': {
      // An uploaded file's id has no meaning to another server.
      const url = readString(part.image_url);
      if (url === undefined) return [];
      const detail = readString(part.detail);
      return [{ type: 'image_url', image_url: detail === undefined || detail === 'auto' ? { url } : { url, detail } }];
    }
    case 'input_file': {
      const file: Record<string, unknown> = {};
      for (const key of ['file_data', 'file_id', 'filename']) if (typeof part[key] === 'string') file[key] = part[key];
      return file['file_data'] === undefined && file['file_id'] === undefined ? [] : [{ type: 'file', file }];
    }
    case 'input_audio':
      return isRecord(part.input_audio) ? [{ type: 'input_audio', input_audio: part.input_audio }] : [];
    default:
      return [];
  }
}

/** `text.format` is chat's `response_format`, with the schema one level down. */
export function textFormatToResponseFormat(text: unknown): Record<string, unknown> | undefined {
  const format = isRecord(text) && isRecord(text.format) ? text.format : undefined;
  if (format?.type === 'json_object') return { type: 'json_object' };
  if (format?.type !== 'json_schema') return undefined;
  const { type: _type, ...schema } = format;
  return { type: 'json_schema', json_schema: schema };
}

function convertTools(request: ResponsesRequest, responses: ResponsesTools): Pick<OpenAIChatRequest, 'tools' | 'tool_choice' | 'parallel_tool_calls'> {
  const tools = responses.chatTools;
  // tool_choice and parallel_tool_calls without tools are errors on OpenAI's side.
  if (tools.length === 0) return {};
  const result: Pick<OpenAIChatRequest, 'tools' | 'tool_choice' | 'parallel_tool_calls'> = { tools };
  const choice = convertToolChoice(request.tool_choice, responses);
  if (choice !== undefined) result.tool_choice = choice;
  if (typeof request['parallel_tool_calls'] === 'boolean') result.parallel_tool_calls = request['parallel_tool_calls'];
  return result;
}

/** A forced function or custom tool is forced by its chat name. */
function convertToolChoice(choice: unknown, tools: ResponsesTools): OpenAIToolChoice | undefined {
  if (choice === 'auto' || choice === 'none' || choice === 'required') return choice;
  const name = isRecord(choice) && (choice.type === 'function' || choice.type === 'custom') ? readString(choice.name) : undefined;
  return name === undefined ? undefined : { type: 'function', function: { name: tools.chatName(name, undefined) } };
}
