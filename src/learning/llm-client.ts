import { z } from 'zod';
import type { WireFormat } from '../config/index.js';
import type { Logger } from '../logging/index.js';
import { AnswerTooLargeError, cappedText } from '../shared/capped-text.js';
import { keysOfHeaders, withoutKeys } from '../shared/without-keys.js';
import type { ClientCredentials } from '../upstream/index.js';
import { endpointPath, isRetryableStatus, jsonHeaders, retryAfterMs } from '../upstream/index.js';
import { LearningError, LearningMisconfiguredError, LearningRateLimitedError, PermanentJobError } from './runner.js';
import { deadlineSignal } from '../shared/deadline-signal.js';
import {
  answerSchemas,
  rememberTextOnly,
  refusesStructuredOutput,
  structuredRequest,
  takesStructuredOutput,
  withoutAddedNulls,
  type JsonAnswer,
} from './structured-output.js';

/** An LLM endpoint a learning job calls (evolver, extractor, judge). */
export interface LlmTarget {
  name: string;
  baseUrl: string;
  format: WireFormat;
  apiKey: string | undefined;
  model: string;
  /** The client's own key, remembered in memory only, when the upstream has none configured. */
  credentials: ClientCredentials;
}

export interface LlmRequest {
  system: string;
  user: string;
  maxTokens: number;
  temperature?: number;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Where a learning job says, once per upstream, that structured output was turned down. */
  logger?: Logger;
}

export interface LlmReply {
  text: string;
  inputTokens: number;
  outputTokens: number;
}

/** The LLM answered, but not with what the schema asks: retried later, like a network error. */
export class InvalidLlmOutputError extends LearningError {
  constructor(
    message: string,
    readonly tokens: number,
  ) {
    super('llm_invalid_output', message, true);
  }
}

/** The learning LLM could not be reached, or answered with a status worth retrying. */
export class LlmCallError extends LearningError {
  constructor(
    message: string,
    readonly status: number | undefined,
  ) {
    super('llm_call_failed', message, true);
  }
}

/** One non-streaming completion against an OpenAI-compatible or Anthropic endpoint, answered in text. */
export async function callLlm(target: LlmTarget, request: LlmRequest): Promise<LlmReply> {
  const response = await send(target, request, {});
  if (!response.ok) throw failure(target, response);
  return readReply(target.format, response.text).reply;
}

/**
 * Calls the LLM and validates its JSON answer against `answer.schema`. The answer is asked for in
 * structured form (OpenAI `response_format: json_schema`, Anthropic a forced tool call, the JSON
 * Schema generated from the zod schema); an upstream that refuses that, or answers without it,
 * is asked in text from then on, where models wrap JSON in prose or code fences and the first JSON
 * value in the text is taken. Tokens spent are reported even on failure.
 */
export async function callLlmForJson<T>(
  target: LlmTarget,
  request: LlmRequest,
  answer: JsonAnswer<T>,
  spend: (tokens: number) => void,
): Promise<{ value: T; reply: LlmReply }> {
  if (takesStructuredOutput(target)) {
    const schemas = answerSchemas(answer.schema);
    const response = await send(target, request, structuredRequest(target.format, answer.name, schemas));
    if (response.ok) {
      const read = readReply(target.format, response.text, answer.name);
      spend(tokensOf(read.reply));
      if (read.structured) {
        const value = target.format === 'openai' && schemas.strict ? withoutAddedNulls(read.structured.value, schemas.plain) : read.structured.value;
        return { value: validate(answer.schema, value, read.reply), reply: read.reply };
      }
      if (read.refusal !== undefined) throw new InvalidLlmOutputError(`the model declined to answer: ${read.refusal.slice(0, 200)}`, tokensOf(read.reply));
      if (read.truncated) throw new InvalidLlmOutputError(`the answer was cut at ${request.maxTokens} tokens`, tokensOf(read.reply));
      textFromNowOn(target, 'it answered without the structured part', request.logger);
      return { value: valueInText(answer.schema, read.reply), reply: read.reply };
    }
    if (!refusesStructuredOutput(response.status, response.text)) throw failure(target, response);
    textFromNowOn(target, `it answered ${response.status}: ${response.text.slice(0, 200)}`, request.logger);
  }
  const reply = await callLlm(target, request);
  spend(tokensOf(reply));
  return { value: valueInText(answer.schema, reply), reply };
}

function textFromNowOn(target: LlmTarget, reason: string, logger: Logger | undefined): void {
  if (rememberTextOnly(target, reason))
    logger?.info(
      { upstream: target.name, model: target.model, reason },
      'this upstream does not take structured output; its learning calls ask for JSON in text',
    );
}

interface LlmResponse {
  ok: boolean;
  status: number;
  text: string;
  /** The wait a 429 or 503 asked for (`retry-after`), in ms. */
  retryAfterMs: number | undefined;
}

async function send(target: LlmTarget, request: LlmRequest, extra: Record<string, unknown>): Promise<LlmResponse> {
  const headers = jsonHeaders(target, target.credentials);
  if (!headers['authorization'] && !headers['x-api-key'] && !isLocal(target.baseUrl)) {
    throw new LearningMisconfiguredError(
      `no API key for ${target.name} (${target.baseUrl}): configure one, or send a request through the proxy first so your own key can be used`,
    );
  }
  const temperature = request.temperature === undefined ? {} : { temperature: request.temperature };
  const body =
    target.format === 'anthropic'
      ? {
          model: target.model,
          max_tokens: request.maxTokens,
          system: request.system,
          messages: [{ role: 'user', content: request.user }],
          ...temperature,
          ...extra,
        }
      : {
          model: target.model,
          max_tokens: request.maxTokens,
          messages: [
            { role: 'system', content: request.system },
            { role: 'user', content: request.user },
          ],
          ...temperature,
          ...extra,
        };
  const deadline = deadlineSignal(request.signal, request.timeoutMs ?? 180_000);
  try {
    const response = await fetch(endpointPath(target, 'model'), {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: deadline.signal,
    });
    const text = await answerText(response, target.name);
    // An error's text ends up in the log and the job's stored error: without the key it was sent.
    return {
      ok: response.ok,
      status: response.status,
      text: response.ok ? text : withoutKeys(text, keysOfHeaders(headers)),
      retryAfterMs: retryAfterOf(response),
    };
  } catch (error) {
    if (error instanceof LearningError) throw error;
    throw new LlmCallError(`${target.name} unreachable: ${(error as Error).message}`, undefined);
  } finally {
    deadline.done();
  }
}

/**
 * No learning answer comes near this (their max_tokens are a few thousand): a larger body, or one
 * that never ends, is cut here rather than read into memory until the call's timeout, which at
 * local speeds is gigabytes and ends the process.
 */
export const LLM_ANSWER_MAX_BYTES = 8 * 1024 * 1024;

async function answerText(response: Response, upstream: string): Promise<string> {
  try {
    return await cappedText(response, LLM_ANSWER_MAX_BYTES);
  } catch (error) {
    throw error instanceof AnswerTooLargeError ? new LlmCallError(`${upstream} ${error.message}`, response.status) : error;
  }
}

function retryAfterOf(response: Response): number | undefined {
  return response.status === 429 || response.status === 503 ? retryAfterMs(Object.fromEntries(response.headers)) : undefined;
}

function failure(target: LlmTarget, response: LlmResponse): Error {
  const message = `${target.name} answered ${response.status}: ${response.text.slice(0, 300)}`;
  // A key or model the upstream refuses fails every learning call alike: learning pauses instead of each job burning its attempts.
  if (response.status === 401 || response.status === 403 || response.status === 404) return new LearningMisconfiguredError(message);
  // So does a rate limit that says how long it lasts: learning waits that long instead of each job asking again.
  if (response.retryAfterMs !== undefined) return new LearningRateLimitedError(message, response.retryAfterMs);
  if (!isRetryableStatus(response.status)) return new PermanentJobError(message);
  return new LlmCallError(message, response.status);
}

function valueInText<T>(schema: z.ZodType<T>, reply: LlmReply): T {
  const json = extractJson(reply.text);
  if (json === undefined) throw new InvalidLlmOutputError(`the model's answer holds no JSON: ${reply.text.slice(0, 200)}`, tokensOf(reply));
  return validate(schema, json, reply);
}

function validate<T>(schema: z.ZodType<T>, json: unknown, reply: LlmReply): T {
  const parsed = schema.safeParse(json);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new InvalidLlmOutputError(`the model's JSON does not match the schema (${issue?.path.join('.') || 'root'}: ${issue?.message})`, tokensOf(reply));
}

function tokensOf(reply: LlmReply): number {
  return reply.inputTokens + reply.outputTokens;
}

interface ReadReply {
  reply: LlmReply;
  /** The structured answer: the forced tool's input (Anthropic), or content that is JSON as a whole (OpenAI). */
  structured?: { value: unknown };
  /** OpenAI's `refusal`: the model declined (a safety answer, not a missing feature). */
  refusal?: string;
  /** Cut at max_tokens. */
  truncated: boolean;
}

const anthropicReplySchema = z.object({
  content: z.array(z.object({ type: z.string(), text: z.string().optional(), name: z.string().optional(), input: z.unknown() }).loose()).catch([]),
  stop_reason: z.string().nullish().catch(null),
  usage: z
    .object({ input_tokens: z.number().catch(0), output_tokens: z.number().catch(0) })
    .partial()
    .catch({}),
});

const openAIReplySchema = z.object({
  choices: z
    .array(
      z.object({
        message: z
          .object({ content: z.unknown(), refusal: z.string().nullish().catch(null) })
          .partial()
          .catch({}),
        finish_reason: z.string().nullish().catch(null),
      }),
    )
    .catch([]),
  usage: z
    .object({ prompt_tokens: z.number().catch(0), completion_tokens: z.number().catch(0) })
    .partial()
    .catch({}),
});

/** Reads a completion; with `toolName`, also its structured answer. */
function readReply(format: WireFormat, text: string, toolName?: string): ReadReply {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new LlmCallError(`the endpoint did not return JSON: ${text.slice(0, 200)}`, undefined);
  }
  if (format === 'anthropic') {
    const parsed = anthropicReplySchema.catch({ content: [], stop_reason: null, usage: {} }).parse(json);
    const reply = {
      text: parsed.content
        .filter((block) => block.type === 'text')
        .map((block) => block.text ?? '')
        .join(''),
      inputTokens: parsed.usage.input_tokens ?? 0,
      outputTokens: parsed.usage.output_tokens ?? 0,
    };
    const call = toolName === undefined ? undefined : parsed.content.find((block) => block.type === 'tool_use' && block.name === toolName);
    return { reply, truncated: parsed.stop_reason === 'max_tokens', ...(call ? { structured: { value: call.input } } : {}) };
  }
  const parsed = openAIReplySchema.catch({ choices: [], usage: {} }).parse(json);
  const choice = parsed.choices[0];
  const content = typeof choice?.message.content === 'string' ? choice.message.content : '';
  const reply = { text: content, inputTokens: parsed.usage.prompt_tokens ?? 0, outputTokens: parsed.usage.completion_tokens ?? 0 };
  const refusal = choice?.message.refusal ?? undefined;
  return { reply, truncated: choice?.finish_reason === 'length', ...(refusal ? { refusal } : {}), ...(toolName === undefined ? {} : wholeJson(content)) };
}

/** Structured output is the content as a whole; prose or fences around it mean the upstream ignored the request. */
function wholeJson(content: string): { structured?: { value: unknown } } {
  try {
    return { structured: { value: JSON.parse(content) } };
  } catch {
    return {};
  }
}

/** The first JSON object or array in `text` (code fences and surrounding prose ignored). */
export function extractJson(text: string): unknown {
  const fenced = /```(?:json)?\s*\n([\s\S]*?)```/i.exec(text);
  const candidates = fenced ? [fenced[1]!, text] : [text];
  for (const candidate of candidates) {
    const trimmed = candidate.trim();
    try {
      return JSON.parse(trimmed);
    } catch {
      // fall through to scanning
    }
    for (const [open, close] of [
      ['{', '}'],
      ['[', ']'],
    ] as const) {
      const start = trimmed.indexOf(open);
      const end = trimmed.lastIndexOf(close);
      if (start === -1 || end <= start) continue;
      try {
        return JSON.parse(trimmed.slice(start, end + 1));
      } catch {
        // try the other bracket kind
      }
    }
  }
  return undefined;
}

function isLocal(url: string): boolean {
  try {
    const host = new URL(url).hostname;
    return host === 'localhost' || host === '127.0.0.1' || host === '::1' || host === '[::1]';
  } catch {
    return false;
  }
}
