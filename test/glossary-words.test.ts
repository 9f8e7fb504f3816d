import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { glossary } from '../src/text/glossary.js';
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

  test("寿司 (sushi) and 曲奇 (cookie), which jieba's list lacks, are glossed: Tatoeba's pairs say them in conversation", () => {
    assert.equal(terms(glossary().english('寿司', 'zh'))[0], 'sushi');
    assert.equal(terms(glossary().english('曲奇', 'zh'))[0], 'cooki');
    // 曲奇 is one search term, and 孩子们 still gives 孩子 (a word the file reads as its own words is not joined).
    assert.deepEqual(tokenize('孩子们都喜欢曲奇'), ['孩子', '喜欢', '曲奇']);
  });

  test('a word of conversation the file reads as words of its own (孩子们: 孩子 + 们) or that ends in a particle (打的) is no headword', () => {
    assert.equal(glossary().english('孩子们', 'zh'), undefined);
    assert.equal(glossary().english('打的', 'zh'), undefined);
  });
});
