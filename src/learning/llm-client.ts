import type { z } from 'zod';
import type { WireFormat } from '../config/index.js';
import type { ClientCredentials } from '../upstream/index.js';
import { endpointPath, isRetryableStatus, jsonHeaders } from '../upstream/index.js';
import { LearningError, LearningMisconfiguredError, PermanentJobError } from './runner.js';

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

/** One non-streaming completion against an OpenAI-compatible or Anthropic endpoint. */
export async function callLlm(target: LlmTarget, request: LlmRequest): Promise<LlmReply> {
  const headers = jsonHeaders(target, target.credentials);
  if (!headers['authorization'] && !headers['x-api-key'] && !isLocal(target.baseUrl)) {
    throw new LearningMisconfiguredError(
      `no API key for ${target.name} (${target.baseUrl}): configure one, or send a request through the proxy first so your own key can be used`,
    );
  }
  const url = endpointPath(target, 'model');
  let body: unknown;
  if (target.format === 'anthropic') {
    body = {
      model: target.model,
      max_tokens: request.maxTokens,
      system: request.system,
      messages: [{ role: 'user', content: request.user }],
      ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    };
  } else {
    body = {
      model: target.model,
      max_tokens: request.maxTokens,
      messages: [
        { role: 'system', content: request.system },
        { role: 'user', content: request.user },
      ],
      ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    };
  }
  const timeout = AbortSignal.timeout(request.timeoutMs ?? 180_000);
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: request.signal ? AbortSignal.any([request.signal, timeout]) : timeout,
    });
  } catch (error) {
    throw new LlmCallError(`${target.name} unreachable: ${(error as Error).message}`, undefined);
  }
  const text = await response.text();
  if (!response.ok) {
    const message = `${target.name} answered ${response.status}: ${text.slice(0, 300)}`;
    // A key or model the upstream refuses fails every learning call alike: learning pauses instead of each job burning its attempts.
    if (response.status === 401 || response.status === 403 || response.status === 404) throw new LearningMisconfiguredError(message);
    if (!isRetryableStatus(response.status)) throw new PermanentJobError(message);
    throw new LlmCallError(message, response.status);
  }
  return parseReply(target.format, text);
}

/**
 * Calls the LLM and validates its JSON answer against `schema`. Models wrap JSON in prose or code
 * fences; the first JSON value in the text is taken. Tokens spent are reported even on failure.
 */
export async function callLlmForJson<T>(
  target: LlmTarget,
  request: LlmRequest,
  schema: z.ZodType<T>,
  spend: (tokens: number) => void,
): Promise<{ value: T; reply: LlmReply }> {
  const reply = await callLlm(target, request);
  const tokens = reply.inputTokens + reply.outputTokens;
  spend(tokens);
  const json = extractJson(reply.text);
  if (json === undefined) throw new InvalidLlmOutputError(`the model's answer holds no JSON: ${reply.text.slice(0, 200)}`, tokens);
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new InvalidLlmOutputError(`the model's JSON does not match the schema (${issue?.path.join('.') || 'root'}: ${issue?.message})`, tokens);
  }
  return { value: parsed.data, reply };
}

function parseReply(format: WireFormat, text: string): LlmReply {
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new LlmCallError(`the endpoint did not return JSON: ${text.slice(0, 200)}`, undefined);
  }
  if (format === 'anthropic') {
    const content = Array.isArray(parsed['content']) ? (parsed['content'] as Array<{ type?: string; text?: string }>) : [];
    const usage = (parsed['usage'] ?? {}) as { input_tokens?: number; output_tokens?: number };
    return {
      text: content
        .filter((block) => block.type === 'text')
        .map((block) => block.text ?? '')
        .join(''),
      inputTokens: usage.input_tokens ?? 0,
      outputTokens: usage.output_tokens ?? 0,
    };
  }
  const choices = Array.isArray(parsed['choices']) ? (parsed['choices'] as Array<{ message?: { content?: unknown } }>) : [];
  const content = choices[0]?.message?.content;
  const usage = (parsed['usage'] ?? {}) as { prompt_tokens?: number; completion_tokens?: number };
  return { text: typeof content === 'string' ? content : '', inputTokens: usage.prompt_tokens ?? 0, outputTokens: usage.completion_tokens ?? 0 };
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
