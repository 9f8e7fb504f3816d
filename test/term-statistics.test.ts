import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseTermStatistics } from '../src/text/index.js';

/** A statistics file of 1,000 English and 1,000 Japanese sentences; "alpha" and "ベータ" are each held by 10 of their language's. */
function statisticsFile(englishTerms: number, japaneseTerms: number): string {
  return JSON.stringify({
    about: 'test',
    version: 1,
    tokenizer: 'test',
    languages: {
      en: { documents: 1000, terms: englishTerms, frequencies: { '10': 'alpha' } },
      ja: { documents: 1000, terms: japaneseTerms, frequencies: { '10': 'ベータ' } },
    },
  });
}

describe('background term statistics: sentence shares scaled to documents', () => {
  test("a term's share does not depend on how many terms its language's tokenizer keeps a sentence", () => {
    // Stop words a tokenizer drops change the terms per sentence, not the text: 6, 3 or 1.5 Japanese terms a sentence.
    const shares = [6000, 3000, 1500].map((japaneseTerms) => parseTermStatistics(statisticsFile(3000, japaneseTerms), 'test.json').share('ベータ'));
    assert.equal(shares[0], shares[1]);
    assert.equal(shares[1], shares[2]);
  });

  test('a term held by as many sentences as its translation has its share (the corpus is parallel)', () => {
    const statistics = parseTermStatistics(statisticsFile(3000, 5700), 'test.json');
    assert.equal(statistics.share('ベータ'), statistics.share('alpha'));
  });

  test('a document is as many sentences as hold 30 English terms: 10 of 3 terms each', () => {
    const share = parseTermStatistics(statisticsFile(3000, 3000), 'test.json').share('alpha');
    assert.ok(Math.abs(share - (1 - Math.pow(1 - 10 / 1000, 10))) < 1e-12, String(share));
    // Sentences of 6 English terms: 5 make a document.
    const longer = parseTermStatistics(statisticsFile(6000, 3000), 'test.json').share('alpha');
    assert.ok(Math.abs(longer - (1 - Math.pow(1 - 10 / 1000, 5))) < 1e-12, String(longer));
  });

  test('a file without English, whose sentence length sets the document length, is refused', () => {
    const file = JSON.parse(statisticsFile(3000, 3000));
    delete file.languages.en;
    assert.throws(() => parseTermStatistics(JSON.stringify(file), 'edited.json'), /edited\.json: languages: no en/);
  });
});
