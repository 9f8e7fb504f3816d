import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { parseDataFile } from './data-file.js';

/**
 * The bundled English related words (`data/thesaurus/en.json.gz`, from Princeton WordNet; see
 * data/thesaurus/README.md): for a search term, the common terms that are synonyms of its word's
 * first senses and the common terms naming what it is a kind of. A memory that says "greyhound"
 * is indexed under "dog" as well, so a question about the dog finds it with no embedding service.
 */
const THESAURUS_FILE = new URL('../../data/thesaurus/en.json.gz', import.meta.url);

/** An entry: a search term, its synonyms and its hypernyms (search terms space-separated; lists may be empty, not both). */
const ENTRY = /^([a-z0-9]+)\t((?:[a-z0-9]+(?: [a-z0-9]+)*)?)\t((?:[a-z0-9]+(?: [a-z0-9]+)*)?)$/;

const fileSchema = z
  .object({
    about: z.string(),
    version: z.literal(1),
    tokenizer: z.string(),
    format: z.string(),
    // Tens of thousands of entries, one line each: a record of them takes zod half a second to check, the lines' pattern little.
    entries: z.string().min(1),
  })
  .strict();

export interface Thesaurus {
  /** The related terms of a term (its synonyms, then its hypernyms), none when it has no entry. */
  related(term: string): readonly string[];
  readonly size: number;
}

/** Parses and checks a thesaurus file; throws an error naming the file and what is wrong. */
export function parseThesaurus(text: string, source: string): Thesaurus {
  const data = parseDataFile(text, source, fileSchema);
  const related = new Map<string, readonly string[]>();
  for (const line of data.entries.split('\n')) {
    const match = ENTRY.exec(line);
    if (!match || related.has(match[1]!))
      throw new ConfigError(`${source}: entry "${line.slice(0, 60)}": expected a new term, a tab, synonyms, a tab, hypernyms`);
    const terms = `${match[2]} ${match[3]}`.trim();
    related.set(match[1]!, [...new Set(terms.split(' '))]);
  }
  const none: readonly string[] = [];
  return { related: (term) => related.get(term) ?? none, size: related.size };
}

let shipped: Thesaurus | undefined;

/** The shipped thesaurus, read and checked once (some 50 ms; the proxy reads it at start, off the request path). */
export function thesaurus(): Thesaurus {
  shipped ??= parseThesaurus(gunzipSync(readFileSync(THESAURUS_FILE)).toString('utf8'), 'data/thesaurus/en.json.gz');
  return shipped;
}

let shippedVersion: string | undefined;

/** A fingerprint of the shipped thesaurus: an index built with its words can tell when an upgrade brought others. */
export function thesaurusVersion(): string {
  shippedVersion ??= createHash('sha256').update(readFileSync(THESAURUS_FILE)).digest('hex').slice(0, 16);
  return shippedVersion;
}
