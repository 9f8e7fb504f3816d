import { isWellFormedEvent, SseParser, type SseEvent } from '../sse.js';
import type {
  AnthropicMessagesRequest,
  AnthropicResponse,
  ApiFormat,
  AssembledResponse,
  OpenAIChatCompletion,
  OpenAIChatRequest,
  RequestFormat,
} from '../../types/index.js';
import { assembleAnthropicResponse, assembleOpenAIResponse, AnthropicStreamAssembler, OpenAIStreamAssembler } from './assemble.js';
import { assembleResponsesResponse, ResponsesStreamAssembler } from './assemble-responses.js';
import { isRecord, readString } from './common.js';
import { anthropicErrorBodyToOpenAI, openAIErrorBodyToAnthropic } from './errors.js';
import { anthropicRequestToOpenAI } from './request-anthropic-to-openai.js';
import { openAIRequestToAnthropic } from './request-openai-to-anthropic.js';
import { responsesInputItems, responsesRequestToOpenAI, textFormatToResponseFormat } from './request-responses-to-openai.js';
import { jsonToolName, recordedJsonAnswer } from './json-answer.js';
import { collectStream, type CollectedAnswer } from './collect-stream.js';
import { refuseOpenAIKept, refuseUncarriedParts } from './responses-parts.js';
import { responsesTools, type ResponsesTools } from './responses-tools.js';
import { anthropicResponseToOpenAI } from './response-anthropic-to-openai.js';
import { openAIResponseToAnthropic } from './response-openai-to-anthropic.js';
import { anthropicResponseToResponses, openAIResponseToResponses } from './response-to-responses.js';
import { responseIdFor, type ResponsesContext } from './responses-output.js';
import { AnthropicToOpenAIStream } from './stream-anthropic-to-openai.js';
import { OpenAIToAnthropicStream } from './stream-openai-to-anthropic.js';
import { AnthropicToResponsesStream, OpenAIToResponsesStream } from './stream-to-responses.js';

/**
 * Which translation goes between what a client speaks and what one attempt sends: the forwarder
 * asks here and holds no format pairs of its own. `wire` is the format on the wire to the upstream.
 */

/** Each stream translator turns the upstream's events into the client's, as SSE text. */
export interface StreamTranslator {
  /** The client's stream has had its final event. */
  readonly done: boolean;
  push(event: SseEvent): string;
  finish(): string;
  /** Ends the client's stream with its API's error event; `code` where the API has one (as the untranslated path words it). */
  fail(message: string, code?: string): string;
}

/**
 * How a stream ended, as its own events say: with its final event, with an error event of the
 * upstream's (whatever came after: the client's SDK raised it), or with neither (cut short).
 */
export type StreamEnding = { kind: 'finished' } | { kind: 'failed'; message: string } | { kind: 'cut' };

export interface StreamAssembler {
  push(event: SseEvent): void;
  result(): AssembledResponse;
  ending(): StreamEnding;
}

/** The conversation before a Responses request's `previous_response_id`, as the proxy's records have it. */
export interface EarlierConversation {
  items: readonly unknown[];
  /** The id is the upstream's own (its answer was passed through): an upstream that serves the Responses API resolves it. */
  upstreamKeeps: boolean;
}

/** What translating a request needs besides the body. */
export interface RequestOptions {
  defaultMaxTokens: number;
  model?: string;
  history?: EarlierConversation;
}

/** What translating an answer needs: the request it answers (and the conversation before it, whose tools it may call). */
export interface AnswerContext {
  requestId: string;
  body: Record<string, unknown>;
  history?: EarlierConversation;
}

/** A Responses request goes as is to an upstream that serves the Responses API; everything else in the upstream's format. */
export function wireFormat(target: { format: ApiFormat; responses?: boolean }, clientFormat: RequestFormat): RequestFormat {
  return clientFormat === 'responses' && target.responses === true ? 'responses' : target.format;
}

/** The body for the wire; the same object when no translation is needed and the model stays. */
export function translateRequest(
  clientFormat: RequestFormat,
  wire: RequestFormat,
  body: Record<string, unknown>,
  options: RequestOptions,
): Record<string, unknown> {
  const model = options.model;
  if (wire === clientFormat) {
    const history = options.history;
    // An id the proxy made (its answer was translated) means nothing upstream: the conversation goes whole.
    const sent = wire === 'responses' && history !== undefined && !history.upstreamKeeps ? withHistory(body, history.items) : body;
    return model === undefined || sent['model'] === model ? sent : { ...sent, model };
  }
  // A part the translation cannot carry, or state only OpenAI keeps, is refused, never left out (responses-parts.ts).
  if (clientFormat === 'responses') {
    const translated = wire === 'anthropic' ? 'anthropic' : 'openai';
    refuseOpenAIKept(body, translated);
    refuseUncarriedParts(body['input'], translated, options.history?.items);
  }
  const chat =
    clientFormat === 'responses'
      ? responsesRequestToOpenAI(body, { ...(model ? { model } : {}), ...(options.history ? { history: options.history.items } : {}) })
      : clientFormat === 'anthropic'
        ? anthropicRequestToOpenAI(body as AnthropicMessagesRequest, model ? { model } : {})
        : (body as OpenAIChatRequest);
  if (wire === 'openai') return chat;
  return openAIRequestToAnthropic(chat, { defaultMaxTokens: options.defaultMaxTokens, ...(model ? { model } : {}) });
}

/** A complete answer in the client's format (the wire's own answer parsed). */
/** The list every answer of `wire`'s API carries its content in: without it, translating makes an empty "success". */
const ANSWER_LIST: Readonly<Record<RequestFormat, string>> = { openai: 'choices', anthropic: 'content', responses: 'output' };

/** Why `answer` is not an answer of `wire`'s API (its content list missing), or undefined when it is one. */
export function answerShapeProblem(wire: RequestFormat, answer: unknown): string | undefined {
  const list = ANSWER_LIST[wire];
  if (isRecord(answer) && Array.isArray(answer[list])) return undefined;
  // Some gateways answer 200 with an error object: its message is what the user needs to see.
  const error = isRecord(answer) && isRecord(answer['error']) ? readString(answer['error']['message']) : undefined;
  return error === undefined ? `it has no "${list}" list` : `it holds an error: ${error.slice(0, 500)}`;
}

export function translateAnswer(clientFormat: RequestFormat, wire: RequestFormat, answer: unknown, context: AnswerContext): unknown {
  if (clientFormat === 'responses') {
    const responses = responsesContext(context, wire);
    return wire === 'anthropic'
      ? anthropicResponseToResponses(answer as AnthropicResponse, responses)
      : openAIResponseToResponses(answer as OpenAIChatCompletion, responses);
  }
  return clientFormat === 'openai'
    ? anthropicResponseToOpenAI(answer as AnthropicResponse, jsonToolOption(answerJsonTool(clientFormat, wire, context)))
    : openAIResponseToAnthropic(answer as OpenAIChatCompletion);
}

export function streamTranslator(clientFormat: RequestFormat, wire: RequestFormat, context: AnswerContext): StreamTranslator {
  if (clientFormat === 'responses') {
    const responses = responsesContext(context, wire);
    return wire === 'anthropic' ? new AnthropicToResponsesStream(responses) : new OpenAIToResponsesStream(responses);
  }
  if (clientFormat === 'anthropic') return new OpenAIToAnthropicStream({});
  const options = context.body['stream_options'];
  return new AnthropicToOpenAIStream({
    includeUsage: isRecord(options) && options['include_usage'] === true,
    ...jsonToolOption(answerJsonTool(clientFormat, wire, context)),
  });
}

/**
 * The forced tool that stood for the request's JSON Schema on an Anthropic wire (json-answer.ts):
 * decided again from the request the client sent, as its translation decided it, so the answer
 * needs nothing passed along but its context.
 */
export function answerJsonTool(clientFormat: RequestFormat, wire: RequestFormat, context: AnswerContext): string | undefined {
  if (wire !== 'anthropic' || clientFormat === 'anthropic') return undefined;
  if (clientFormat === 'openai') return jsonToolName(context.body as OpenAIChatRequest);
  // Most requests ask for no format: their tools are not read again.
  return context.body['text'] === undefined ? undefined : responsesJsonTool(context.body, responsesContextTools(context));
}

/**
 * Reads a stream in the wire's format for the record, event by event. `jsonTool` (answerJsonTool):
 * the record holds that call as the text the client got.
 */
export function streamAssembler(wire: RequestFormat, jsonTool?: string): StreamAssembler {
  if (wire === 'responses') return new ResponsesStreamAssembler();
  if (wire === 'openai') return new OpenAIStreamAssembler();
  const assembler = new AnthropicStreamAssembler();
  if (jsonTool === undefined) return assembler;
  return { push: (event) => assembler.push(event), ending: () => assembler.ending(), result: () => recordedJsonAnswer(assembler.result(), jsonTool) };
}

/** Assembles a whole stream captured as raw SSE bytes. */
export function assembleStream(format: RequestFormat, raw: Buffer, jsonTool?: string): AssembledResponse {
  return readStream(format, raw, true, jsonTool).response;
}

/**
 * A stream captured as raw SSE bytes, read once for the record: its answer and how it ended. With
 * `whole` false, a last event without its blank line is left out (it had not reached the client).
 */
export function readStream(format: RequestFormat, raw: Buffer, whole = true, jsonTool?: string): { response: AssembledResponse; ending: StreamEnding } {
  const assembler = streamAssembler(format, jsonTool);
  const parser = new SseParser();
  for (const event of parser.push(raw)) assembler.push(event);
  if (whole) for (const event of parser.end()) assembler.push(event);
  return { response: assembler.result(), ending: assembler.ending() };
}

/**
 * The one JSON answer a whole stream of `wire` events amounts to, in the client's API, for a client
 * that did not ask for a stream (some upstreams stream whatever `stream` says): a stream of another
 * API is translated to the client's events first, as for a streaming client, then read as that
 * API's SDK reads it (collect-stream.ts). A stream that fails, holds an event that is not JSON, or
 * ends before its final event holds no answer.
 */
export function answerFromStream(clientFormat: RequestFormat, wire: RequestFormat, raw: Buffer, context: AnswerContext): CollectedAnswer {
  const parser = new SseParser();
  const events = [...parser.push(raw), ...parser.end()];
  if (!events.every(isWellFormedEvent)) return { problem: 'it holds an event that is not JSON' };
  if (wire === clientFormat) return collectStream(clientFormat, events);
  // The upstream's own stream must hold a whole answer first: cut short, it would be closed by the
  // translator's finish() as if it had ended, a partial answer passed off as a whole one.
  const own = collectStream(wire, events);
  if ('problem' in own) return own;
  // A non-stream chat answer carries its usage, which a translated chat stream holds only when asked.
  const asked = clientFormat === 'openai' ? { ...context, body: { ...context.body, stream_options: { include_usage: true } } } : context;
  const translator = streamTranslator(clientFormat, wire, asked);
  let text = '';
  for (const event of events) text += translator.push(event);
  if (!translator.done) text += translator.finish();
  return collectStream(clientFormat, new SseParser().push(text));
}

/** A complete answer in `format`, reduced for the record (`jsonTool`: as in streamAssembler). */
export function assembleAnswer(format: RequestFormat, answer: unknown, jsonTool?: string): AssembledResponse {
  if (format === 'responses') return assembleResponsesResponse(answer);
  return format === 'openai' ? assembleOpenAIResponse(answer) : recordedJsonAnswer(assembleAnthropicResponse(answer), jsonTool);
}

/** An upstream error body in the client's shape, or undefined when the shapes are the same (the Responses API's is OpenAI's). */
export function translateErrorBody(clientFormat: RequestFormat, wire: RequestFormat, body: string, status: number): string | undefined {
  const clientAnthropic = clientFormat === 'anthropic';
  if (clientAnthropic === (wire === 'anthropic')) return undefined;
  return clientAnthropic ? openAIErrorBodyToAnthropic(body, status) : anthropicErrorBodyToOpenAI(body, status);
}

/** A Responses request with the earlier conversation in its input instead of `previous_response_id`. */
function withHistory(body: Record<string, unknown>, items: readonly unknown[]): Record<string, unknown> {
  const { previous_response_id: _previous, ...rest } = body;
  return { ...rest, input: [...items, ...responsesInputItems(body['input'])] };
}

function responsesContext(context: AnswerContext, wire: RequestFormat): ResponsesContext {
  const tools = responsesContextTools(context);
  const responses: ResponsesContext = { responseId: responseIdFor(context.requestId), request: context.body, tools };
  const jsonTool = wire === 'anthropic' ? responsesJsonTool(context.body, tools) : undefined;
  return jsonTool === undefined ? responses : { ...responses, jsonTool };
}

function responsesContextTools(context: AnswerContext): ResponsesTools {
  const items = [...(context.history?.items ?? []), ...responsesInputItems(context.body['input'])];
  return responsesTools(context.body, items);
}

/** A Responses request's `text.format` and tools, as its chat translation carries them. */
function responsesJsonTool(body: Record<string, unknown>, tools: ResponsesTools): string | undefined {
  const responseFormat = textFormatToResponseFormat(body['text']);
  return responseFormat === undefined ? undefined : jsonToolName({ messages: [], response_format: responseFormat, tools: tools.chatTools });
}

function jsonToolOption(jsonTool: string | undefined): { jsonTool?: string } {
  return jsonTool === undefined ? {} : { jsonTool };
}
