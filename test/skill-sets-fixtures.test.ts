import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';

/**
 * The labelled skill sets `npm run bench` measures retrieval with: a label naming a skill its bank
 * does not hold would silently count as a miss (or never as a wrong injection), and a parallel set
 * whose English side drifted from its set's requests would measure other requests than it says.
 */
const FIXTURES = new URL('./fixtures/', import.meta.url).pathname;
const SETS = readdirSync(FIXTURES).filter((name) => name.endsWith('-skills') && existsSync(join(FIXTURES, name, 'bank')));

interface Labelled {
  relevant: string[];
  irrelevant?: string[];
}

function read<T>(file: string): T {
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}

describe('labelled skill sets', () => {
  test('there are sets to check', () => assert.ok(SETS.length >= 8, SETS.join(', ')));

  for (const set of SETS) {
    const folder = join(FIXTURES, set);
    const bank = new Set(readdirSync(join(folder, 'bank')).filter((name) => existsSync(join(folder, 'bank', name, 'SKILL.md'))));
    const unknownLabels = (items: readonly Labelled[]) =>
      items.flatMap((item) => [...item.relevant, ...(item.irrelevant ?? [])]).filter((name) => !bank.has(name));

    test(`${set}: every label names a skill of its bank`, () => {
      const requests = read<Array<Labelled & { query: string }>>(join(folder, 'requests.json'));
      assert.ok(requests.length > 0);
      assert.deepEqual(unknownLabels(requests), []);
    });

    const parallelFile = join(folder, 'requests-parallel.json');
    if (!existsSync(parallelFile)) continue;
    test(`${set}: the parallel set is its English requests, labels unchanged, with a Chinese and a Japanese text each`, () => {
      const english = read<Array<Labelled & { query: string; language: string }>>(join(folder, 'requests.json')).filter((item) => item.language === 'en');
      const parallel = read<Array<Labelled & { en: string; zh: string; ja: string }>>(parallelFile);
      assert.equal(parallel.length, english.length);
      parallel.forEach((item, at) => {
        assert.equal(item.en, english[at]!.query);
        assert.deepEqual(item.relevant, english[at]!.relevant);
        assert.deepEqual(item.irrelevant ?? [], english[at]!.irrelevant ?? []);
        assert.match(item.zh, /[\u3400-\u9fff]/);
        assert.doesNotMatch(item.zh, /[\u3040-\u30ff]/, `a Chinese text holds kana: ${item.zh}`);
        assert.match(item.ja, /[\u3040-\u30ff]/, `a Japanese text holds no kana: ${item.ja}`);
      });
      assert.deepEqual(unknownLabels(parallel), []);
    });
  }
});
