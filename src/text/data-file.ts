import type { z } from 'zod';
import { ConfigError } from '../errors.js';

/** Parses a shipped JSON data file against its schema; throws an error naming the file and the first fault. */
export function parseDataFile<Schema extends z.ZodTypeAny>(text: string, source: string, schema: Schema): z.infer<Schema> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${source}: not JSON (${(error as Error).message})`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(`${source}: ${issue.path.join('.') || '(top)'}: ${issue.message}`);
  }
  return parsed.data;
}
