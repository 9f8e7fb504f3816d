import { z } from 'zod';
import { BadRequestError } from '../errors.js';
import { describeIssue, requestErrorFrom } from './validate.js';

/**
 * A Responses API request checked at the door, like the chat routes: loose objects, and only what
 * the proxy reads or translates is checked. Item kinds the proxy does not translate (reasoning,
 * hosted tool calls, …) pass untouched to an upstream that serves the Responses API.
 */
const typedPart = z.looseObject({ type: z.string() });
const optionalNumber = z.number().nullable().optional();

const responsesRequest = z.looseObject({
  model: z.string().optional(),
  input: z.union([z.string(), z.array(z.looseObject({ type: z.string().optional() }), { error: 'expected a string or an array of items' })]).optional(),
  instructions: z.string().nullable().optional(),
  // "" names no response: resolved as none at the door but sent on as an id, it failed later as a proxy error with a turn recorded.
  previous_response_id: z.string().min(1, 'must not be empty: leave it out, or null, to start a new conversation').nullable().optional(),
  stream: z.boolean().nullable().optional(),
  store: z.boolean().nullable().optional(),
  tools: z
    .array(
      z
        .looseObject({ type: z.string(), name: z.string().optional(), parameters: z.record(z.string(), z.unknown()).nullable().optional() })
        .refine((tool) => tool.type !== 'function' || typeof tool.name === 'string', {
          message: 'a function tool needs a name',
        }),
    )
    .nullable()
    .optional(),
  // What the chat translation reads: a forced tool without its name would be dropped, so "auto" instead.
  tool_choice: z
    .union([
      z.enum(['none', 'auto', 'required']),
      z
        .looseObject({ type: z.string(), name: z.string().optional() })
        .refine((choice) => (choice.type !== 'function' && choice.type !== 'custom') || typeof choice.name === 'string', {
          message: 'a forced function or custom tool needs its name',
        }),
    ])
    .nullable()
    .optional(),
  parallel_tool_calls: z.boolean().nullable().optional(),
  reasoning: z.looseObject({ effort: z.string().nullable().optional() }).nullable().optional(),
  text: z
    .looseObject({ format: z.looseObject({ type: z.string() }).nullable().optional() })
    .nullable()
    .optional(),
  max_output_tokens: z.number().int().positive().nullable().optional(),
  temperature: optionalNumber,
  top_p: optionalNumber,
  metadata: z.record(z.string(), z.unknown()).nullable().optional(),
});

/**
 * The content parts whose payload the proxy reads: a text part without its text, or an image with
 * neither URL nor file, would otherwise go on as an empty message (recorded and learned from as
 * one) instead of the 400 OpenAI gives.
 */
const PARTS: Readonly<Record<string, z.ZodType>> = {
  input_text: z.looseObject({ text: z.string() }),
  output_text: z.looseObject({ text: z.string() }),
  refusal: z.looseObject({ refusal: z.string() }),
  input_image: z
    .looseObject({ image_url: z.string().nullable().optional(), file_id: z.string().nullable().optional() })
    .refine((part) => typeof part.image_url === 'string' || typeof part.file_id === 'string', { message: 'an input_image needs an image_url or a file_id' }),
};

const contentPart = typedPart.superRefine((part, context) => {
  const checked = PARTS[part.type]?.safeParse(part);
  for (const issue of checked?.success === false ? checked.error.issues : []) context.addIssue({ code: 'custom', message: issue.message, path: issue.path });
});

const content = z.union([z.string(), z.array(contentPart)]);

/** The items the proxy translates, by `type` (a message may leave it out). */
const ITEMS: Readonly<Record<string, z.ZodType>> = {
  message: z.looseObject({ role: z.enum(['user', 'assistant', 'system', 'developer']), content }),
  function_call: z.looseObject({ call_id: z.string(), name: z.string(), arguments: z.string() }),
  function_call_output: z.looseObject({ call_id: z.string(), output: content }),
  custom_tool_call: z.looseObject({ call_id: z.string(), name: z.string(), input: z.string() }),
  custom_tool_call_output: z.looseObject({ call_id: z.string(), output: content }),
};

/** Throws a 400 naming the first offending field, e.g. `input.2.call_id: …`. */
export function validateResponsesRequest(body: Record<string, unknown>): void {
  const result = responsesRequest.safeParse(body);
  if (!result.success) throw requestErrorFrom(result.error, describeIssue);
  if (body['input'] === undefined && Array.isArray(body['messages']))
    throw new BadRequestError(
      'chat_body_on_responses_route',
      'This looks like a Chat Completions request ("messages") sent to the Responses route: send it to /v1/chat/completions, or put the conversation in "input".',
      'messages',
    );
  const input = body['input'];
  if (!Array.isArray(input)) return;
  input.forEach((item: { type?: string }, index) => {
    const schema = ITEMS[item.type ?? 'message'];
    const checked = schema?.safeParse(item);
    if (checked?.success === false) {
      const issues = checked.error.issues.map((issue) => ({ ...issue, path: ['input', index, ...issue.path] }));
      throw requestErrorFrom(new z.ZodError(issues), describeIssue);
    }
  });
}
