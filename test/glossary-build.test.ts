import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { glossWordsBySense } from '../scripts/gloss-words.js';

/** A sense's words as the glossary build reads them: its words, without "to" and "sb". */
const words = (sense: string) => sense.split(/[\s;,]+/).filter((word) => word !== '' && word !== 'to' && word !== 'sb' && word !== "sb's");

describe('glossary build: which gloss words a headword keeps', () => {
  test('a sense listed late keeps its head word within the five words (寄: "to send by post" is its fourth sense)', () => {
    const senses = ["to entrust; to place in sb's care", '(bound form) to depend on; to attach oneself to', '(bound form) foster', 'to send by post; to mail'];
    const kept = glossWordsBySense(
      senses.map((sense) => sense.replace(/\([^)]*\)/g, ' ')),
      words,
      5,
    );
    assert.deepEqual(kept, ['entrust', 'place', 'depend', 'foster', 'send']);
  });

  test('the first two words stay, a light verb is no head ("to go online" keeps "online"), and hand-written senses keep every word', () => {
    assert.deepEqual(glossWordsBySense(['launch release', 'to go online', 'to reach', 'production'], words, 5, 1), [
      'launch',
      'release',
      'online',
      'reach',
      'production',
    ]);
    assert.deepEqual(glossWordsBySense(['outcome result consequence', 'to kill'], words, 3), ['outcome', 'result', 'kill']);
  });
});
