import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { measureTerms, titleTerms } from '../src/text/index.js';

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

  test('a number word stands apart from its unit: "I am", "4 am" and "ah" are no distance or time; "an hour" and "a mile" still are', () => {
    assert.deepEqual(measureTerms('What course am I taking now?'), []);
    assert.deepEqual(measureTerms('Leo woke up at 4 am every day.'), []);
    assert.deepEqual(measureTerms('Ah, that makes sense.'), []);
    assert.ok(measureTerms('It took an hour.').includes('long'));
    assert.ok(measureTerms('The station is a mile away.').includes('distanc'));
    assert.ok(measureTerms('Ran 5km this morning.').includes('distanc'));
  });

  test('pounds and quid are a price as well as a weight: "9,800 pounds" answers what the car cost', () => {
    assert.ok(measureTerms('We bought a Yaris for 9,800 pounds.').includes('cost'));
    assert.ok(measureTerms('I got 180 quid for it.').includes('price'));
    assert.ok(measureTerms('The baby was 7 pounds.').includes('weight'));
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

describe('what an abbreviated title stands for (text/titles.ts)', () => {
  test('"Dr." before a name and "GP" are a doctor, "Prof." before a name a professor; a street\'s "Dr" and lower-case letters are none', () => {
    assert.deepEqual(titleTerms('My GP, Dr. Paula Reis, says my vitamin D is low.'), ['doctor', 'physician']);
    assert.deepEqual(titleTerms('Booked the GP for Monday.'), ['doctor', 'physician']);
    assert.deepEqual(titleTerms('Prof. Lima marked my thesis.'), ['professor']);
    assert.deepEqual(titleTerms('We looked at a house on Cromwell Dr, near the park.'), []);
    assert.deepEqual(titleTerms('the gp of the race and dr who'), []);
  });
});
