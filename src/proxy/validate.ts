import { z } from 'zod';
import { BadRequestError } from '../errors.js';
import type { ApiFormat } from '../types/index.js';

/**
 * Request shapes checked at the door. Objects are loose: fields the proxy does not know pass
 * through untouched; only what the proxy itself reads, and what the APIs require, is checked.
 */
const typedPart = z.looseObject({ type: z.string() });

const openAIMessage = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: z.union([z.string(), z.array(typedPart), z.null()]).optional(),
  name: z.string().optional(),
  tool_call_id: z.string().optional(),
  tool_calls: z
    .array(
      z.looseObject({
        id: z.string().optional(),
        type: z.string().optional(),
        function: z.looseObject({ name: z.string(), arguments: z.string().optional() }),
      }),
    )
    .nullable()
    .optional(),
});

const optionalNumber = z.number().nullable().optional();
const optionalPositiveInteger = z.number().int().positive().nullable().optional();

const openAIRequest = z.looseObject({
  model: z.string().optional(),
  messages: z
    .array(openAIMessage, { error: (issue) => (issue.input === undefined ? 'required' : 'expected an array of messages') })
    .min(1, 'must contain at least one message'),
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  tools: z
    .array(z.looseObject({ type: z.string(), function: z.looseObject({ name: z.string() }).optional() }))
    .nullable()
    .optional(),
  tool_choice: z
    .union([z.string(), z.looseObject({ type: z.string() })])
    .nullable()
    .optional(),
  max_tokens: optionalPositiveInteger,
  max_completion_tokens: optionalPositiveInteger,
  n: optionalPositiveInteger,
  temperature: optionalNumber,
  top_p: optionalNumber,
  stop: z
    .union([z.string(), z.array(z.string())])
    .nullable()
    .optional(),
  user: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).nullable().optional(),
});

/**
 * `system` mid-conversation: Claude Code sends such messages to current models (beta
 * `mid-conversation-system-2026-04-07`). They pass to Anthropic upstreams as sent and become
 * system messages for OpenAI ones.
 */
const anthropicMessage = z.looseObject({
  role: z.enum(['user', 'assistant', 'system']),
  content: z.union([z.string(), z.array(typedPart)]),
});

const anthropicRequest = z.looseObject({
  model: z.string({ error: (issue) => (issue.input === undefined ? 'required' : 'expected a string') }),
  messages: z
    .array(anthropicMessage, { error: (issue) => (issue.input === undefined ? 'required' : 'expected an array of messages') })
    .min(1, 'must contain at least one message'),
  max_tokens: z
    .number({ error: (issue) => (issue.input === undefined ? 'required' : 'expected an integer') })
    .int()
    .positive(),
  system: z.union([z.string(), z.array(typedPart)]).optional(),
  stream: z.boolean().optional(),
  tools: z.array(z.looseObject({ name: z.string() })).optional(),
  tool_choice: z.looseObject({ type: z.string() }).optional(),
  temperature: z.number().optional(),
  top_p: z.number().optional(),
  top_k: z.number().int().optional(),
  stop_sequences: z.array(z.string()).optional(),
  metadata: z.looseObject({ user_id: z.string().nullable().optional() }).optional(),
});

/** `POST /v1/messages/count_tokens` takes a Messages request without `max_tokens`. */
const tokenCountRequest = anthropicRequest.omit({ max_tokens: true });

export function validateTokenCountRequest(body: Record<string, unknown>): void {
  const result = tokenCountRequest.safeParse(body);
  if (!result.success) throw requestErrorFrom(result.error, describeIssue);
}

/** Throws a 400 naming the first offending field, e.g. `messages.0.role: expected one of …`. */
export function validateModelRequest(format: ApiFormat, body: Record<string, unknown>): void {
  const result = (format === 'openai' ? openAIRequest : anthropicRequest).safeParse(body);
  if (!result.success) throw requestErrorFrom(result.error, describeIssue);
  if (format === 'openai') refuseAnthropicShape(body);
}

/** Content block types only Anthropic's Messages API has (OpenAI's parts are text, image_url, input_audio, file, refusal). */
const ANTHROPIC_BLOCK_TYPES = new Set(['tool_use', 'tool_result', 'thinking', 'redacted_thinking', 'server_tool_use', 'web_search_tool_result']);
/** Anthropic's media blocks carry a `source`; OpenAI-compatible servers that accept a bare `image` part do not. */
const ANTHROPIC_MEDIA_TYPES = new Set(['image', 'document']);

function isAnthropicBlock(part: { type: string; source?: unknown }): boolean {
  return ANTHROPIC_BLOCK_TYPES.has(part.type) || (ANTHROPIC_MEDIA_TYPES.has(part.type) && typeof part.source === 'object' && part.source !== null);
}

/**
 * An Anthropic Messages body sent to the Chat Completions route would go upstream as is and fail
 * there, or worse, be half understood. The signs are unambiguous: a top-level `system` (OpenAI puts
 * it in messages) or a content block type only Anthropic has.
 */
function refuseAnthropicShape(body: Record<string, unknown>): void {
  const wrongRoute = (param: string, sign: string) =>
    new BadRequestError(
      'anthropic_body_on_openai_route',
      `This looks like an Anthropic Messages request (${sign}) sent to the OpenAI Chat Completions route: send it to /v1/messages, or write it in OpenAI's format.`,
      param,
    );
  if (body['system'] !== undefined) throw wrongRoute('system', 'top-level "system"');
  const messages = body['messages'] as Array<{ content?: unknown }>;
  for (let index = 0; index < messages.length; index++) {
    const content = messages[index]!.content;
    if (!Array.isArray(content)) continue;
    for (let part = 0; part < content.length; part++) {
      const block = content[part] as { type: string; source?: unknown };
      if (isAnthropicBlock(block)) throw wrongRoute(`messages.${index}.content.${part}.type`, `a "${block.type}" content block`);
    }
  }
}

/** A 400 naming the first offending field of a failed schema check, described by `describe`. */
export function requestErrorFrom(error: z.ZodError, describe: (issue: z.core.$ZodIssue) => string): BadRequestError {
  const issue = error.issues[0]!;
  const field = issue.path.map(String).join('.');
  // A problem of the body as a whole names no field: "(body)" was shown as if it were one.
  if (field === '') return new BadRequestError('invalid_request', `request body: ${describe(issue)}`);
  return new BadRequestError('invalid_request', `${field}: ${describe(issue)}`, field);
}

export function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_value' && 'values' in issue) return `expected one of ${issue.values.map((value) => JSON.stringify(value)).join(', ')}`;
  if (issue.code === 'invalid_union') return 'has the wrong type';
  return issue.message;
}
