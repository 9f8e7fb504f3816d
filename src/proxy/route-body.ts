import { z } from 'zod';
import { parseJsonBody, parseJsonObject } from './body.js';
import { requestErrorFrom } from './validate.js';

// The bytes these parse were read, decoded and held to the size limit once for every route (routes.ts).

/** The JSON body of a request to one of MetaClaw's own routes (400 when it is not JSON). */
export async function readJson(request: Request): Promise<unknown> {
  return parseJsonBody(await request.text());
}

/** A JSON object body, as the model routes require one (400 when it is anything else). */
export async function readJsonObject(request: Request): Promise<Record<string, unknown>> {
  return parseJsonObject(Buffer.from(await request.arrayBuffer()));
}

/** A route body checked against its schema: the first problem becomes a 400 naming the field. */
export function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  // Zod leaves `input` off its issues unless asked, and then every wrong type read as "required".
  const result = schema.safeParse(value, { reportInput: true });
  if (result.success) return result.data;
  throw requestErrorFrom(result.error, (issue) => (issue.input === undefined && issue.code === 'invalid_type' ? 'required' : issue.message));
}

/**
 * A whole-number parameter of a route's query, `min` to `max`: digits only, so `abc`, `1.5`, `-3`
 * and an empty value are refused (a 400 through `parse`) with the rule itself, never read as the default.
 */
export function wholeNumberParam(min: number, max: number, rule = `must be a whole number from ${min} to ${max}`) {
  return z
    .string({ error: rule })
    .regex(/^\d{1,16}$/, rule)
    .transform(Number)
    .pipe(z.number().min(min, rule).max(max, rule));
}
