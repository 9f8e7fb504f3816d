import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parse as parseToml } from 'smol-toml';
import { parse as parseYaml } from 'yaml';
import type { DocumentFormat, Setting } from '../src/claws/document.js';
import { envFormat } from '../src/claws/env-document.js';
import { json5Format, jsonFormat } from '../src/claws/json-document.js';
import { applySettings, revertSettings } from '../src/claws/settings.js';
import { tomlFormat } from '../src/claws/toml-document.js';
import { ClawError } from '../src/claws/types.js';
import { yamlFormat } from '../src/claws/yaml-document.js';

function applied(format: DocumentFormat, text: string, settings: Setting[]): string {
  const document = format.parse(text, 'test-file');
  applySettings(document, settings);
  return document.render();
}

function reverted(format: DocumentFormat, current: string, original: string, settings: Setting[]): string {
  const document = format.parse(current, 'test-file');
  revertSettings(document, format.parse(original, 'test-file'), settings);
  return document.render();
}

const modelSetting: Setting[] = [{ path: ['model'], value: 'qwen3' }];

describe('TOML top-level editor', () => {
  test('with no top-level keys, new keys go above the first table and its comment', () => {
    const original = '# settings\n\n# the gateway\n[gateway]\nport = 1\n';
    const text = applied(tomlFormat, original, [
      { path: ['provider'], value: 'openai-compatible' },
      { path: ['model'], value: 'qwen3' },
    ]);
    assert.equal(text, '# settings\n\nprovider = "openai-compatible"\nmodel = "qwen3"\n\n# the gateway\n[gateway]\nport = 1\n');
    assert.equal(
      reverted(tomlFormat, text, original, [
        { path: ['provider'], value: '' },
        { path: ['model'], value: '' },
      ]),
      original,
    );
  });

  test('bracket lines inside a multi-line array or string are not mistaken for tables', () => {
    const original = 'matrix = [\n[1, 2],\n[3, 4],\n]\nnote = """\n[not a table]\n"""\n[real]\nx = 1\n';
    const text = applied(tomlFormat, original, modelSetting);
    assert.equal(text, 'matrix = [\n[1, 2],\n[3, 4],\n]\nnote = """\n[not a table]\n"""\nmodel = "qwen3"\n[real]\nx = 1\n');
    assert.deepEqual({ ...(parseToml(text).real as object) }, { x: 1 });
  });

  test('quoted keys, CRLF and a missing final newline are handled; values are escaped', () => {
    const text = applied(tomlFormat, '"model" = \'old\' # keep\r\nother = 1', [
      { path: ['model'], value: 'a "quoted" \\ name' },
      { path: ['api_key'], value: 'k' },
    ]);
    assert.equal(text, '"model" = "a \\"quoted\\" \\\\ name" # keep\r\nother = 1\r\napi_key = "k"\r\n');
    assert.equal(parseToml(text).model, 'a "quoted" \\ name');
  });

  test('reverting restores the original line, comment included', () => {
    const original = 'model = "gpt"   # my favourite\n[t]\n';
    const wired = applied(tomlFormat, original, modelSetting);
    const edited = wired.replace('[t]', '[t]\ny = 2');
    assert.equal(reverted(tomlFormat, edited, original, modelSetting), 'model = "gpt"   # my favourite\n[t]\ny = 2\n');
  });

  test('a key that would clash with a dotted key is refused, not written', () => {
    assert.throws(
      () => applied(tomlFormat, 'model.name = "x"\n', modelSetting),
      (error: unknown) => error instanceof ClawError && error.status === 'edit_failed',
    );
  });

  test('malformed TOML is a config_malformed ClawError naming the file', () => {
    assert.throws(
      () => tomlFormat.parse('a = \n', '/home/u/.zeroclaw/config.toml'),
      (error: unknown) => error instanceof ClawError && error.status === 'config_malformed' && /config\.toml is not valid TOML/.test(error.message),
    );
  });
});

describe('TOML table editor', () => {
  const provider: Setting[] = [{ path: ['providers', 'metaclaw'], value: { name: 'MetaClaw', url: 'http://127.0.0.1:30000/v1' } }];

  test('a table with its sub-tables is replaced as one, the comment above the next table stays, CRLF is kept', () => {
    const original = 'a = 1\r\n\r\n[providers.metaclaw]\r\nname = "old"\r\n\r\n[providers.metaclaw.headers]\r\nx = "y"\r\n\r\n# next\r\n[other]\r\nb = 2\r\n';
    const text = applied(tomlFormat, original, provider);
    assert.equal(text, 'a = 1\r\n\r\n[providers.metaclaw]\r\nname = "MetaClaw"\r\nurl = "http://127.0.0.1:30000/v1"\r\n\r\n# next\r\n[other]\r\nb = 2\r\n');
    assert.equal(reverted(tomlFormat, text, original, provider), original);
  });

  test('a new table goes at the end after a blank line, and leaves with it', () => {
    const original = 'a = 1\n[other]\nb = 2';
    const text = applied(tomlFormat, original, provider);
    assert.equal(text, 'a = 1\n[other]\nb = 2\n\n[providers.metaclaw]\nname = "MetaClaw"\nurl = "http://127.0.0.1:30000/v1"\n');
    assert.equal(reverted(tomlFormat, text, original, provider), 'a = 1\n[other]\nb = 2\n');
  });

  test('a table split over the file, or known only through its sub-tables, is refused', () => {
    for (const original of ['[providers.metaclaw]\nname = "x"\n[other]\n[providers.metaclaw.headers]\nx = "y"\n', '[providers.metaclaw.headers]\nx = "y"\n']) {
      assert.throws(
        () => applied(tomlFormat, original, provider),
        (error: unknown) =>
          error instanceof ClawError && error.status === 'config_conflict' && /`providers\.metaclaw` is not written as one \[table\]/.test(error.message),
      );
    }
  });
});

describe('.env editor', () => {
  test('duplicates are all set, then restored line for line', () => {
    const original = 'A=1\nMODEL=first # one\nB=2\nexport MODEL="second"\n';
    const settings: Setting[] = [{ path: ['MODEL'], value: 'qwen3' }];
    const text = applied(envFormat, original, settings);
    assert.equal(text, 'A=1\nMODEL=qwen3 # one\nB=2\nexport MODEL=qwen3\n');
    assert.equal(reverted(envFormat, text.replace('B=2', 'B=3'), original, settings), original.replace('B=2', 'B=3'));
  });

  test('multi-line quoted values survive; unsafe values are quoted; CRLF and a missing newline are handled', () => {
    const original = 'CERT="line one\r\nline two"\r\nNAME=x';
    const text = applied(envFormat, original, [{ path: ['KEY'], value: 'has space # and hash' }]);
    assert.equal(text, 'CERT="line one\r\nline two"\r\nNAME=x\r\nKEY="has space # and hash"\r\n');
    assert.deepEqual({ ...(envFormat.parse(text, 'f').value() as object) }, { CERT: 'line one\r\nline two', NAME: 'x', KEY: 'has space # and hash' });
  });

  test('an unterminated quote is a config_malformed ClawError', () => {
    assert.throws(
      () => envFormat.parse('A="open\nB=1\n', '/p/.env'),
      (error: unknown) => error instanceof ClawError && error.status === 'config_malformed',
    );
  });
});

describe('JSON and JSON5 editor', () => {
  const provider: Setting[] = [{ path: ['providers', 'metaclaw'], value: { baseUrl: 'u' } }];

  test('removing the last member of strict JSON also removes the comma before it', () => {
    const original = '{\n  "providers": {\n    "a": 1\n  }\n}\n';
    const text = applied(jsonFormat, original, provider);
    assert.doesNotThrow(() => JSON.parse(text));
    assert.equal(reverted(jsonFormat, text, original, provider), original);
  });

  test('a parent object MetaClaw created is pruned on revert, even with user edits elsewhere', () => {
    const original = '{\n  // mine\n  a: 1,\n}\n';
    const text = applied(json5Format, original, provider);
    const edited = text.replace('a: 1', 'a: 2');
    assert.equal(reverted(json5Format, edited, original, provider), '{\n  // mine\n  a: 2,\n}\n');
  });

  test('members on shared lines and trailing comments are removed cleanly', () => {
    const settings: Setting[] = [{ path: ['b'], value: 0 }];
    assert.equal(reverted(json5Format, '{ a: 1, b: 2, c: 3 }', '{ a: 1, c: 3 }', settings), '{ a: 1, c: 3 }');
    assert.equal(reverted(json5Format, '{ a: 1, b: 2 }', '{ a: 1 }', settings), '{ a: 1 }');
    assert.equal(reverted(json5Format, '{\n  a: 1, // one\n  b: 2, // two\n  c: 3,\n}\n', '{ a: 1, c: 3 }', settings), '{\n  a: 1, // one\n  c: 3,\n}\n');
  });

  test('list items are upserted by their selector field and removed again', () => {
    const settings: Setting[] = [{ path: ['list', { key: 'name', equals: 'metaclaw' }], value: { name: 'metaclaw', v: 2 } }];
    const original = '{\n  "list": [\n    { "name": "mine", "v": 1 },\n    { "name": "metaclaw", "v": 1 }\n  ]\n}\n';
    const text = applied(jsonFormat, original, settings);
    assert.deepEqual(JSON.parse(text), {
      list: [
        { name: 'mine', v: 1 },
        { name: 'metaclaw', v: 2 },
      ],
    });
    assert.equal(reverted(jsonFormat, text, original, settings), original);
    const fresh = '{\n  "list": [\n    { "name": "mine", "v": 1 }\n  ]\n}\n';
    assert.equal(reverted(jsonFormat, applied(jsonFormat, fresh, settings), fresh, settings), fresh);
  });

  test('a value where MetaClaw needs an object is a config_conflict ClawError', () => {
    assert.throws(
      () => applied(json5Format, '{ providers: "none" }', provider),
      (error: unknown) => error instanceof ClawError && error.status === 'config_conflict' && /`providers` is a single value/.test(error.message),
    );
  });

  test('a bare {} is written as plain two-space JSON', () => {
    assert.equal(applied(jsonFormat, '{}', [{ path: ['a', 'b'], value: 1 }]), '{\n  "a": {\n    "b": 1\n  }\n}\n');
  });

  test('empty or non-object JSON is malformed', () => {
    for (const text of ['', '   ', '[1, 2]']) {
      assert.throws(
        () => json5Format.parse(text, 'f'),
        (error: unknown) => error instanceof ClawError && error.status === 'config_malformed',
      );
    }
  });
});

describe('YAML editor', () => {
  const settings: Setting[] = [
    { path: ['custom_providers', { key: 'name', equals: 'metaclaw' }], value: { name: 'metaclaw', base_url: 'u' } },
    { path: ['model', 'provider'], value: 'custom:metaclaw' },
  ];

  test('a comment-only file gets the keys and keeps its comment', () => {
    const text = applied(yamlFormat, '# just a comment\n', settings);
    assert.ok(text.startsWith('# just a comment\n'));
    assert.deepEqual(parseYaml(text), { custom_providers: [{ name: 'metaclaw', base_url: 'u' }], model: { provider: 'custom:metaclaw' } });
    assert.equal(reverted(yamlFormat, text, '# just a comment\n', settings).trim(), '# just a comment');
  });

  test('an unindented sequence style, quoting and CRLF line endings are kept', () => {
    const original = "model:\r\n  provider: 'auto'  # pick\r\ncustom_providers:\r\n- name: local\r\n  base_url: x\r\n";
    const text = applied(yamlFormat, original, settings);
    assert.equal(
      text,
      "model:\r\n  provider: 'custom:metaclaw'  # pick\r\ncustom_providers:\r\n- name: local\r\n  base_url: x\r\n- name: metaclaw\r\n  base_url: u\r\n",
    );
    assert.equal(reverted(yamlFormat, text, original, settings), original);
  });

  test('a top level that is not a mapping, or several documents, are malformed', () => {
    for (const text of ['- a\n- b\n', 'a: 1\n---\nb: 2\n', 'a: [1\n']) {
      assert.throws(
        () => yamlFormat.parse(text, 'f'),
        (error: unknown) => error instanceof ClawError && error.status === 'config_malformed',
      );
    }
  });
});
