import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { parseDataFile } from './data-file.js';

/**
 * Background term statistics (`data/term-statistics.json`): for each language, the share of a
 * general corpus's documents that hold a term. A library of a few skills or memories cannot tell
 * a common word from a rare one by itself; these shares can, and relevance blends them with the
 * library's own counts (see `blendedIdf`). Read and checked once, on first use.
 */
const STATISTICS_FILE = new URL('../../data/term-statistics.json', import.meta.url);

/**
 * The corpus's documents are single sentences (a few terms each); the texts retrieval compares
 * (requests, skill descriptions, remembered turns) are a few sentences. Shares are scaled to
 * documents as long as this many terms of the reference language, assuming sentences hold terms
 * independently.
 */
const DOCUMENT_TERMS = 30;

/**
 * The language whose terms per sentence turn `DOCUMENT_TERMS` into sentences. The corpus is
 * parallel (each Chinese or Japanese sentence of Tatoeba's pairs translates an English one), so a
 * document is that many sentences in every language: the same amount of text. A language's own
 * terms per sentence would make its documents depend on its stop list instead: the kana stop words
 * took Japanese from 5.7 to 3.7 terms a sentence, which, with no change in the text, made a
 * Japanese document 8.2 sentences instead of 5.3 and every Japanese share larger (data/README.md).
 */
const REFERENCE_LANGUAGE = 'en';

const fileSchema = z
  .object({
    about: z.string(),
    version: z.literal(1),
    tokenizer: z.string(),
    languages: z.record(
      z.string().regex(/^[a-z]{2}$/),
      z
        .object({
          documents: z.number().int().min(1),
          /** Terms in all documents (repeats counted): their mean length (the reference language's sets the document length). */
          terms: z.number().int().min(1),
          /** Document count → the terms held by that many documents, space-separated. */
          frequencies: z.record(z.string().regex(/^[1-9]\d*$/), z.string().min(1)),
        })
        .strict(),
    ),
  })
  .strict();

export interface TermStatistics {
  /** Documents per language. */
  documents: Readonly<Record<string, number>>;
  /** The largest share of documents holding the term in any one language; 0 when unseen. */
  share(term: string): number;
}

/** Parses and checks a statistics file; throws an error naming the file and what is wrong. */
export function parseTermStatistics(text: string, source: string): TermStatistics {
  const data = parseDataFile(text, source, fileSchema);
  const reference = data.languages[REFERENCE_LANGUAGE];
  if (!reference) throw new ConfigError(`${source}: languages: no ${REFERENCE_LANGUAGE}, whose sentence length sets the document length`);
  const sentencesPerDocument = Math.max(1, DOCUMENT_TERMS / (reference.terms / reference.documents));
  const shares = new Map<string, number>();
  const documents: Record<string, number> = {};
  for (const [language, { documents: size, frequencies }] of Object.entries(data.languages)) {
    documents[language] = size;
    const seen = new Set<string>();
    for (const [count, terms] of Object.entries(frequencies)) {
      if (Number(count) > size) throw new ConfigError(`${source}: ${language}: ${count} documents of ${size}`);
      const share = 1 - Math.pow(1 - Number(count) / size, sentencesPerDocument);
      for (const term of terms.split(' ')) {
        if (term === '' || seen.has(term)) throw new ConfigError(`${source}: ${language}: term "${term}" is empty or listed twice`);
        seen.add(term);
        // A word shared by two languages (Han characters in Chinese and Japanese) counts as its commoner use.
        if (share > (shares.get(term) ?? 0)) shares.set(term, share);
      }
    }
  }
  return { documents, share: (term) => shares.get(term) ?? 0 };
}

let shipped: TermStatistics | undefined;

/** The statistics shipped with MetaClaw, read and checked once. */
export function termStatistics(): TermStatistics {
  shipped ??= parseTermStatistics(readFileSync(STATISTICS_FILE, 'utf8'), 'data/term-statistics.json');
  return shipped;
}
