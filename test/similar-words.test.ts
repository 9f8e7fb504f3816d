import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../src/errors.js';
import { parseSimilarWords, SIMILAR_WORD_WEIGHT, similarWordAlternatives, similarWords } from '../src/text/similar-words.js';
import { termOf } from '../src/text/tokenize.js';

const file = (entries: string) => JSON.stringify({ about: 'test', version: 1, tokenizer: 'termOf', format: 'term, tab, terms', entries });

test('the shipped similar words link a rare word to one used like it ("lender": "mortgage", "nut": "peanut") and give the commonest words and names none', () => {
  const words = similarWords();
  assert.ok(words.size > 5_000, String(words.size));
  assert.ok(words.similar(termOf('lender')!).includes(termOf('mortgage')!), JSON.stringify(words.similar(termOf('lender')!)));
  assert.ok(words.similar(termOf('nut')!).includes(termOf('peanut')!), JSON.stringify(words.similar(termOf('nut')!)));
  // A common word's neighbours are its news senses ("firm": "dollar", "investor"): it has no entry.
  assert.deepEqual(words.similar(termOf('firm')!), []);
  // The vectors have no case: a name is near other names ("anne": "jane", "margaret"). Names have none, and are none.
  assert.deepEqual(words.similar(termOf('anne')!), []);
  assert.ok(!words.similar(termOf('wife')!).includes(termOf('margaret')!));
  for (const term of ['lender', 'nut', 'sushi']) assert.ok(words.similar(termOf(term)!).length <= 3);
});

test("a query's similar words are alternatives of the term they belong to, each at SIMILAR_WORD_WEIGHT", () => {
  const words = parseSimilarWords(file('lender\tmortgag creditor\nnut\tpeanut'), 'test');
  const alternatives = similarWordAlternatives(['lender', 'financ', 'home'], words);
  assert.deepEqual([...alternatives.keys()], ['lender']);
  assert.deepEqual(alternatives.get('lender'), [
    { term: 'mortgag', weight: SIMILAR_WORD_WEIGHT },
    { term: 'creditor', weight: SIMILAR_WORD_WEIGHT },
  ]);
});

test('a malformed similar-words file is refused with an error naming the file', () => {
  for (const entries of ['lender\tmortgag\nlender\tbank', 'Lender\tmortgag', 'lender\t', 'lender\tmortgag  creditor', 'lender\tmortgag\tbank'])
    assert.throws(
      () => parseSimilarWords(file(entries), 'data/similar-words/en.json.gz'),
      (error: unknown) => error instanceof ConfigError && error.message.startsWith('data/similar-words/en.json.gz'),
      entries,
    );
  assert.throws(() => parseSimilarWords('{}', 'data/similar-words/en.json.gz'), ConfigError);
});
