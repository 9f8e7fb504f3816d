import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { GLOSSARY_FILES, shippedGlossaryTable } from '../src/text/glossary-files.js';
import { isCommentLine, LineTable } from '../src/text/line-table.js';

test('a line table reads as a Map of its lines would: first tab splits key and value, a later line replaces the value and keeps the place', () => {
  const text = '# a comment\tnot an entry\n猫\tcat\n\n狗\tdog hound\nno tab here\n\tempty key\n猫\tcat kitty\n鸟\tbird\tsecond tab kept';
  const table = new LineTable(text, { skip: isCommentLine });
  const map = new Map<string, string>();
  for (const line of text.split('\n')) {
    const tab = line.indexOf('\t');
    if (tab > 0 && !line.startsWith('#')) map.set(line.slice(0, tab), line.slice(tab + 1));
  }
  assert.deepEqual([...table], [...map]);
  assert.deepEqual([...table.keys()], ['猫', '狗', '鸟']);
  assert.equal(table.size, 3);
  assert.equal(table.get('猫'), 'cat kitty');
  assert.equal(table.get('鸟'), 'bird\tsecond tab kept');
  for (const missing of ['', '猫猫', '狗 ', '# a comment', 'no tab here', '鸟\tbird', '猫\tcat', '\n狗', 'cat kitty\n鸟']) {
    assert.equal(table.has(missing), false, missing);
    assert.equal(table.get(missing), undefined, missing);
  }
});

test('a line table holds many keys (its index grows) and their prefixes, as pieces of its own text', () => {
  const lines = Array.from({ length: 5_000 }, (_, index) => `k${index.toString(36)}\tv${index}`);
  const table = new LineTable(lines.join('\n'));
  assert.equal(table.size, 5_000);
  for (let index = 0; index < 5_000; index += 7) assert.equal(table.get(`k${index.toString(36)}`), `v${index}`);
  const prefixes = table.keyPrefixes();
  assert.equal(prefixes.has('k'), true);
  assert.equal(prefixes.has(`k${(4_999).toString(36).slice(0, 1)}`), true);
  assert.equal(prefixes.has(`k${(4_999).toString(36)}`), false, 'a whole key is no proper prefix');
  assert.equal(prefixes.has('v'), false);
});

test('a repeated key can be refused', () => {
  assert.throws(
    () =>
      new LineTable('a\t1\nb\t2\na\t3', {
        repeated: (line) => {
          throw new Error(`again: ${line}`);
        },
      }),
    /again: a\t3/,
  );
});

test('the shipped glossaries, thesaurus and similar words take under 8 MiB together, heap and typed arrays (as Maps: 19 MiB)', () => {
  // In a process of its own, with a collection before and after: what the tables keep, not what reading them left.
  const script = `
    const { shippedGlossaryTable } = await import('./src/text/glossary-files.ts');
    const { warmChineseWords } = await import('./src/text/chinese-words.ts');
    const { thesaurus } = await import('./src/text/thesaurus.ts');
    const { similarWords } = await import('./src/text/similar-words.ts');
    const used = () => { gc(); gc(); const memory = process.memoryUsage(); return memory.heapUsed + memory.arrayBuffers; };
    const before = used();
    const kept = [shippedGlossaryTable('zh'), shippedGlossaryTable('ja'), warmChineseWords(), thesaurus(), similarWords()];
    process.stdout.write(String((used() - before) / 2 ** 20) + ' ' + kept.length);`;
  const output = execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
  const mebibytes = Number(output.split(' ')[0]);
  assert.ok(mebibytes > 1 && mebibytes < 8, `${mebibytes.toFixed(1)} MiB`);
});

test('every shipped table answers as a Map of its files’ lines: each key, its prefixes and extensions, and the key prefixes as a Set of them', () => {
  const read = (file: URL) => gunzipSync(readFileSync(file)).toString('utf8');
  /** The tables as they were read before line-table.ts: a Map of the lines, a later line replacing an earlier one's value. */
  const mapOf = (texts: readonly string[], comments: boolean) => {
    const map = new Map<string, string>();
    for (const text of texts)
      for (const line of text.split('\n')) {
        const tab = line.indexOf('\t');
        if (tab > 0 && !(comments && line.startsWith('#'))) map.set(line.slice(0, tab), line.slice(tab + 1));
      }
    return map;
  };
  const termEntries = (file: string) => (JSON.parse(read(new URL(`../data/${file}`, import.meta.url))) as { entries: string }).entries;
  const tables: Array<[string, LineTable, Map<string, string>]> = [
    ...(['zh', 'ja'] as const).map((language): [string, LineTable, Map<string, string>] => [
      language,
      shippedGlossaryTable(language),
      mapOf(GLOSSARY_FILES[language].map(read), true),
    ]),
    ...['thesaurus/en.json.gz', 'similar-words/en.json.gz'].map((file): [string, LineTable, Map<string, string>] => {
      const entries = termEntries(file);
      return [file, new LineTable(entries), mapOf([entries], false)];
    }),
  ];
  for (const [name, table, map] of tables) {
    assert.ok(map.size > 1_000, name);
    assert.equal(table.size, map.size, name);
    assert.deepEqual([...table], [...map], `${name}: the same entries in the same order`);
    const prefixes = new Set<string>();
    for (const key of map.keys()) for (let length = 1; length < key.length; length++) prefixes.add(key.slice(0, length));
    const keyPrefixes = table.keyPrefixes();
    assert.equal(keyPrefixes.size, prefixes.size, name);
    const mismatches: string[] = [];
    const probe = (text: string) => {
      // A string of its own, not a slice of the table's text.
      const fresh = ` ${text}`.slice(1);
      if (table.get(fresh) !== map.get(text) || table.has(fresh) !== map.has(text) || keyPrefixes.has(fresh) !== prefixes.has(text)) mismatches.push(text);
    };
    for (const [key, value] of map) for (const text of [key, `${key}x`, key.slice(0, -1), `${key}\t`, `${key}\t${value}`, value, ` ${key}`]) probe(text);
    for (const prefix of prefixes) probe(prefix);
    assert.deepEqual(mismatches.slice(0, 5), [], `${name}: ${mismatches.length} look-ups differ from the Map`);
  }
});
