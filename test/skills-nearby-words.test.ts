import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { skillBankProxy } from './support/skill-banks.js';

/** A bank written by others (the dev5 set): a newsroom's skills, asked for in a user's words rather than the descriptions'. */
const BANK = new URL('./fixtures/dev5-skills/bank', import.meta.url).pathname;

describe('request words a skill says together in one sentence', () => {
  const injected = skillBankProxy(BANK);

  test('a paraphrase whose few shared words the skill says together gets the skill', async () => {
    // "page", "see" and "error" are common words, but mobile-debugging says them in one sentence ("accessing console errors", "debugging web pages on phones").
    assert.deepEqual(await injected("the page works on my laptop but on my iPhone the button does nothing and I can't see any errors", 'iphone'), [
      'mobile-debugging',
    ]);
    assert.ok(
      (await injected('before I create the users table and pick the ID scheme, which choices here will be hard to undo later?', 'ids')).includes(
        'one-way-door',
      ),
    );
  });

  test('requests that share a word or two with a skill, and are about something else, still get none', async () => {
    assert.deepEqual(await injected('any tips for my interview at the bakery tomorrow morning?', 'bakery'), []);
    assert.deepEqual(await injected('best way to archive my grandmother’s paper letters in a box so they don’t yellow?', 'letters'), []);
    assert.deepEqual(await injected('my cat keeps scratching the bedroom door at night, how do I stop it?', 'cat'), []);
  });
});
