import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { ConfigError } from '../errors.js';
import { parseDataFile, TERM_ENTRY_CHARACTERS, termLineTable, termListFileSchema } from './data-file.js';

/**
 * The bundled English related words (`data/thesaurus/en.json.gz`, from Princeton WordNet; see
 * data/thesaurus/README.md): for a search term, the common terms that are synonyms of its word's
 * first senses and the common terms naming what it is a kind of. A memory that says "greyhound"
 * is indexed under "dog" as well, so a question about the dog finds it with no embedding service.
 */
const THESAURUS_FILE = new URL('../../data/thesaurus/en.json.gz', import.meta.url);

/** A space where no term list has one (the thesaurus's own; its lines have two lists, either may be empty). */
const MISPLACED_SPACE = /(?:^| |\t|\n) | {2}| (?:$|\t|\n)|\n\t/;

export interface Thesaurus {
  /** The related terms of a term (its synonyms, then its hypernyms), none when it has no entry. */
  related(term: string): readonly string[];
  readonly size: number;
}

/** Parses and checks a thesaurus file; throws an error naming the file and what is wrong. */
export function parseThesaurus(text: string, source: string): Thesaurus {
  const data = parseDataFile(text, source, termListFileSchema);
  const entries = data.entries;
  if (!TERM_ENTRY_CHARACTERS.test(entries) || MISPLACED_SPACE.test(entries))
    throw new ConfigError(`${source}: entries: expected lines of a term, a tab, synonyms, a tab, hypernyms (search terms, space-separated)`);
  const refused = (line: string) =>
    new ConfigError(`${source}: entry "${line.slice(0, 60)}": expected a new term, a tab, synonyms, a tab, hypernyms (not both empty)`);
  for (const line of entries.split('\n')) {
    const tab = line.indexOf('\t');
    const second = line.indexOf('\t', tab + 1);
    const empty = second === tab + 1 && second === line.length - 1;
    if (tab <= 0 || second < 0 || line.indexOf('\t', second + 1) >= 0 || empty) throw refused(line);
  }
  /** Term → its two lists as written, kept as the file's text (line-table.ts); split on first look-up (most terms are never looked up). */
  const lines = termLineTable(entries, refused);
  const related = new Map<string, readonly string[]>();
  const none: readonly string[] = [];
  return {
    related(term) {
      let terms = related.get(term);
      if (terms) return terms;
      const line = lines.get(term);
      if (line === undefined) return none;
      terms = [...new Set(line.split(/[\t ]/).filter(Boolean))];
      related.set(term, terms);
      return terms;
    },
    size: lines.size,
  };
}

let shipped: Thesaurus | undefined;

/** The shipped thesaurus, read and checked once (some 50 ms; the proxy reads it at start, and the turn writer on its first turn). */
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
