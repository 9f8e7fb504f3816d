import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { LineTable } from './line-table.js';

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

/**
 * A shipped file of term lists (the thesaurus, the similar words): what it says it is, and its
 * entries, one line each. Tens of thousands of lines: a record of them takes zod half a second to
 * check, so the lines are checked by `TERM_ENTRY_CHARACTERS` on the whole text at once.
 */
export const termListFileSchema = z
  .object({
    about: z.string(),
    version: z.literal(1),
    tokenizer: z.string(),
    format: z.string(),
    entries: z.string().min(1),
  })
  .strict();

/** What term-list entries may hold: search terms (lower-case letters and digits), spaces, tabs between fields, newlines between entries. */
export const TERM_ENTRY_CHARACTERS = /^[a-z0-9]+\t[a-z0-9 \t\n]*$/;

/**
 * A term-list file's entries as a table, term → the rest of its line, kept as the entries' own text
 * (line-table.ts) rather than a Map of a string per term and per line; `refused` is thrown for a
 * term given twice.
 */
export function termLineTable(entries: string, refused: (line: string) => Error): LineTable {
  return new LineTable(entries, {
    repeated: (line) => {
      throw refused(line);
    },
  });
}
