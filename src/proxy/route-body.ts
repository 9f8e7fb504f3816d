import type { z } from 'zod';
import { parseJsonBody } from './body.js';
import { requestErrorFrom } from './validate.js';

/** The JSON body of a request to one of MetaClaw's own routes (400 when it is not JSON). */
export async function readJson(request: Request): Promise<unknown> {
  return parseJsonBody(await request.text());
}

/** A route body checked against its schema: the first problem becomes a 400 naming the field. */
export function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw requestErrorFrom(result.error, (issue) => (issue.input === undefined && issue.code === 'invalid_type' ? 'required' : issue.message));
}
