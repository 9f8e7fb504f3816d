import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { tokenize } from '../src/text/index.js';

describe("Chinese search terms are the glossary's words", () => {
  test('pieces ICU cuts a glossary word into are one term ("优|化" → 优化, "文|档" → 文档, "多伦|多" → 多伦多), the same in a question and in a stored turn', () => {
    assert.deepEqual(tokenize('我想优化一下这个文档'), ['我想', '优化', '文档']);
    assert.deepEqual(tokenize('我弟今天飞多伦多了'), ['弟', '今天', '飞', '多伦多']);
    const question = tokenize('文档在哪里？');
    assert.ok(tokenize('帮我把文档发给客户。').includes(question[0]!), `${question.join(' ')}`);
  });

  test('a modifier ICU glues to a word is cut off ("很喜欢" → 喜欢, 很 a stop word as "very" is), so "喜欢" written alone meets it', () => {
    assert.deepEqual(tokenize('她很喜欢猫'), ['喜欢', '猫']);
    assert.deepEqual(tokenize('好主意'), ['好', '主意']);
    assert.ok(tokenize('我女儿喜欢什么？').includes('喜欢'));
  });

  test('question forms the joined pieces make ("怎么样", "有没有") stay stop words, as their pieces were', () => {
    assert.deepEqual(tokenize('最近怎么样？有没有空？'), ['最近', '空']);
  });

  test('Japanese text (with kana) stays as ICU cuts it', () => {
    assert.deepEqual(tokenize('子供の宿題と日記は、夕食の前にチェックします。'), ['子供', '宿題', '日記', '夕食', '前', 'チェック']);
  });
});
