import { createHash } from 'node:crypto';
import { json, type Handler } from './upstream.js';

export const EMBEDDING_DIMENSIONS = 64;

/**
 * The raw vector the scripted endpoint returns for `text`: word counts in md5 buckets. `synonyms`
 * maps a word to the one it counts as, so two words no keyword search links share a meaning.
 */
export function bagOfWords(text: string, synonyms: ReadonlyMap<string, string> = new Map()): number[] {
  const vector = new Array<number>(EMBEDDING_DIMENSIONS).fill(0);
  for (const word of text.toLowerCase().match(/[a-z]+/g) ?? [])
    vector[
      createHash('md5')
        .update(synonyms.get(word) ?? word)
        .digest()[0]! % EMBEDDING_DIMENSIONS
    ]! += 1;
  return vector;
}

/** Deterministic bag-of-words vectors: enough to exercise the embedding path end to end. */
export function embeddingsHandler(fail: () => boolean = () => false, synonyms?: ReadonlyMap<string, string>): Handler {
  return (request, response) => {
    if (fail()) return json(response, 500, { error: { message: 'embedding backend down' } });
    const inputs: string[] = Array.isArray(request.body.input) ? request.body.input : [request.body.input];
    const data = inputs.map((text, index) => ({ object: 'embedding', index, embedding: bagOfWords(text, synonyms) }));
    json(response, 200, { object: 'list', data, model: request.body.model, usage: { prompt_tokens: 10, total_tokens: 10 } });
  };
}
