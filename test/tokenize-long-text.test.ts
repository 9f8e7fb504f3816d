import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { tokenize } from '../src/text/index.js';

describe('tokenizing a long text', () => {
  test('takes time in proportion to its length: 80,000 words in well under 4 s (whole-string segmenting took ~20 s)', () => {
    const text = 'deploy the billing service, then check README.md and 数据库连接 logs '.repeat(8_000);
    const started = performance.now();
    const terms = tokenize(text);
    const seconds = (performance.now() - started) / 1000;
    assert.ok(seconds < 4, `took ${seconds.toFixed(1)} s`);
    const once = tokenize('deploy the billing service, then check README.md and 数据库连接 logs ');
    assert.deepEqual(terms.slice(0, once.length), once);
    assert.equal(terms.length, 8_000 * once.length);
  });

  test('cut into pieces after spaces, it gives the terms of each of its parts, in order (no word split at a cut)', () => {
    const words = Array.from({ length: 3_000 }, (_, index) => `term${index.toString(36)}`);
    const text = words.join(' ');
    assert.ok(text.length > 10_000, 'long enough to be cut');
    const parts = [words.slice(0, 1_000), words.slice(1_000, 2_000), words.slice(2_000)].map((part) => tokenize(part.join(' ')));
    assert.deepEqual(tokenize(text), parts.flat());
    assert.equal(tokenize(text).length, 3_000);
  });
});
