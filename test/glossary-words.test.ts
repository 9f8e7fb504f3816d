import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { glossary } from '../src/text/glossary.js';
import { crossLingualAlternatives, uniqueTerms } from '../src/text/index.js';
import { tokenize } from '../src/text/tokenize.js';

const terms = (list: ReadonlyArray<{ term: string }> | undefined) => (list ?? []).map((item) => item.term);

describe('shipped Chinese glossary: senses the stop list used to hide', () => {
  test('喜欢 (to like) is searched as the English term "like", which "likes" and "liked" give, though the stop list drops "like" itself', () => {
    assert.deepEqual(tokenize('I like that she likes sushi, she liked it'), ['like', 'sushi', 'like']);
    assert.equal(terms(glossary().english('喜欢', 'zh'))[0], 'like');
    const english = glossary().toEnglish('她喜欢寿司');
    assert.ok([...english.values()].some((list) => terms(list).includes('like')));
  });

  test('an English "likes" reaches 喜欢 in the reverse look-up, and "like this" (不是喜欢) does not make 这样 a word of liking', () => {
    const reverse = glossary().fromEnglish(['like'], ['zh']);
    assert.ok(terms(reverse.get('like')).includes('喜欢'));
    assert.ok(!terms(glossary().english('这样', 'zh')).includes('like'));
  });
});

describe('shipped Chinese glossary: words of conversation', () => {
  test('预产期 (a due date), ranked past the 40,000th word of the frequency list, is glossed, so an English question about when a baby was due finds the Chinese turn', () => {
    assert.ok(terms(glossary().english('预产期', 'zh')).includes('due'));
  });
});

describe('translations of irregular verbs', () => {
  test('a Chinese question about what was bought (买) also searches "bought", as an English memory tells it, below the verb itself', () => {
    const text = '我们上个月买了什么？';
    const alternatives = crossLingualAlternatives(text, uniqueTerms(text));
    const list = [...alternatives.values()].find((items) => terms(items).includes('bui'));
    assert.ok(list, 'buy is a translation');
    const buy = list.find((item) => item.term === 'bui')!;
    const bought = list.find((item) => item.term === 'bought');
    assert.ok(bought && bought.weight < buy.weight);
  });
});
