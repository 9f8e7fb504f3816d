import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { measureTerms } from '../src/text/index.js';

describe('the dimension words of a quantity (text/measures.ts)', () => {
  test('a number with a unit, or a currency sign before one, gives the words a question asks about it with; a number alone gives none', () => {
    assert.ok(measureTerms('Mochi is at 4.4 kg now.').includes('heavi'));
    assert.ok(measureTerms('Booked the flights for $1,180 each.').includes('cost'));
    assert.ok(measureTerms('415,000 euros, a bit under budget.').includes('price'));
    assert.ok(measureTerms('About three hours late.').includes('long'));
    assert.ok(measureTerms('二甲双胍加到每天1000毫克。').includes('dose'));
    assert.ok(measureTerms('Passed the B1! 78 out of 100.').includes('score'));
    assert.deepEqual(measureTerms('We moved in 2021, flat 12 on the 3rd floor.'), []);
    assert.deepEqual(measureTerms('we met on 3/10'), []);
  });

  test('a pasted run of numbers is read in time proportional to its length: 80 KB in well under 1 s (it took 31 s)', () => {
    for (const text of ['1.5,'.repeat(20_000), '7'.repeat(200_000), '三'.repeat(100_000)]) {
      const started = performance.now();
      measureTerms(`${text} kg`);
      const seconds = (performance.now() - started) / 1000;
      assert.ok(seconds < 1, `${text.length} characters took ${seconds.toFixed(1)} s`);
    }
  });
});
