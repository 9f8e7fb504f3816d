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

describe('shipped Chinese glossary: kinship nouns', () => {
  test('an English "mother", "mum" or "brother" reaches the everyday noun and its glued forms as a main sense (妈妈 lists "mother" third, 哥哥 is "older brother")', () => {
    const reverse = glossary().fromEnglish(['mother', 'mum', 'brother'], ['zh']);
    const weightOf = (term: string, form: string) => reverse.get(term)?.find((item) => item.term === form)?.weight;
    assert.equal(weightOf('mother', '妈妈'), 1);
    assert.equal(weightOf('mum', '我妈'), 1);
    assert.equal(weightOf('brother', '我哥'), 1);
    assert.equal(weightOf('brother', '我弟'), 1);
  });

  test('a Chinese kinship noun also searches its forms glued to a pronoun, and a glued form the noun ("哥哥" asked, "我哥" told)', () => {
    assert.ok(terms([...glossary().toEnglish('我哥哥住在哪儿').values()].flat()).includes('我哥'));
    assert.ok(terms([...glossary().toEnglish('我妈住在哪儿').values()].flat()).includes('妈妈'));
  });

  test('爸妈, which the segmenter writes as two words (爸|妈, 我爸|妈), is read as 父母, so a stored "我爸妈六月来" is found by "parents"', () => {
    const words = glossary().words('我爸妈六月要来，想给爸妈寄点东西');
    assert.deepEqual(
      words.filter((word) => word.headword === '父母').map((word) => word.sources),
      [
        ['我爸', '妈'],
        ['爸', '妈'],
      ],
    );
    assert.ok(terms(glossary().english('父母', 'zh')).includes('parent'));
  });

  test('a relative the dictionary writes as a path through another is glossed as itself: 外婆 is "grandmother", not "mother", and "niece" reaches 侄女, not 侄孙女 (a grandniece)', () => {
    assert.deepEqual(terms(glossary().english('外婆', 'zh')), ['grandmoth', 'grandma']);
    assert.deepEqual(terms(glossary().fromEnglish(['niec'], ['zh']).get('niec')).slice(0, 2), ['侄女', '外甥女']);
    assert.ok(!terms(glossary().fromEnglish(['mother'], ['zh']).get('mother')).includes('外婆'));
  });
});

describe("shipped Chinese glossary: names that are their English word's usual translation", () => {
  test('"china", "france" and "french" reach 中国, 法国 and 法语 first, not the phrases 一中一台, 法郎 (the franc) and 薯条 (French fries)', () => {
    const reverse = glossary().fromEnglish(['china', 'franc', 'french'], ['zh']);
    assert.equal(terms(reverse.get('china'))[0], '中国');
    assert.equal(terms(reverse.get('franc'))[0], '法国');
    assert.equal(terms(reverse.get('french'))[0], '法语');
  });

  test('an everyday word keeps its everyday translation: "unit" (a name "United States" starts with it) reaches 单位, "bell" and "hunter" (surnames 贝尔, 亨特) reach 钟楼 and 猎人', () => {
    const reverse = glossary().fromEnglish(['unit', 'bell', 'hunter'], ['zh']);
    assert.equal(terms(reverse.get('unit'))[0], '单位');
    assert.equal(terms(reverse.get('bell'))[0], '钟楼');
    assert.equal(terms(reverse.get('hunter'))[0], '猎人');
  });
});

describe("shipped Chinese glossary: a character's senses in use", () => {
  test('a character is looked up by the senses conversation uses, not by the rare reading CC-CEDICT lists first (说 say, 听 listen, 跑 run, 带 bring, 钱 money)', () => {
    const firstTwo = (character: string) => terms(glossary().english(character, 'zh'));
    assert.equal(firstTwo('说')[0], 'sai');
    assert.equal(firstTwo('听')[0], 'listen');
    assert.equal(firstTwo('跑')[0], 'run');
    assert.equal(firstTwo('带')[0], 'bring');
    assert.equal(firstTwo('钱')[0], 'monei');
    const english = glossary().toEnglish('我的药在哪里');
    assert.ok(
      [...english.values()].some((list) => terms(list).includes('medicin')),
      'the medicine, not the leaf or the iris',
    );
  });

  test('a character whose senses Tatoeba does not confirm often enough keeps the dictionary order (马: horse)', () => {
    assert.equal(terms(glossary().english('马', 'zh'))[0], 'hors');
  });
});
