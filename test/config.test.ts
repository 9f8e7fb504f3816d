import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadConfig } from '../src/config/index.js';
import { ConfigError } from '../src/errors.js';
import { configHomes } from './support/config-homes.js';
import { runCli } from './support/proxy.js';

const { home, load } = configHomes('metaclaw-config-');

describe('loading config.yaml', () => {
  test('with no file, embedded defaults apply with skills and memory on and a loopback bind', () => {
    const config = load(home());
    assert.equal(config.fileExists, false);
    assert.equal(config.values['mode'], 'skills_only');
    assert.equal(config.values['proxy.host'], '127.0.0.1');
    assert.equal(config.values['proxy.port'], 30000);
    assert.equal(config.values['skills.enabled'], true);
    assert.equal(config.values['memory.enabled'], true);
    assert.equal(config.paths.skillsDir, join(config.home, 'skills'));
  });

  test('a YAML syntax error stops loading with the file and line', () => {
    const folder = home('proxy:\n  port: 4000\n  host: [oops\n');
    assert.throws(
      () => load(folder),
      (error: unknown) => error instanceof ConfigError && error.message.includes(join(folder, 'config.yaml')) && /line \d+/.test(error.message),
    );
  });

  test('an invalid value names the file, line, key, value and what is expected', () => {
    const folder = home('proxy:\n  port: 99999\nskills:\n  top_k: many\n');
    assert.throws(
      () => load(folder),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.message.includes('config.yaml:2: proxy.port = 99999: expected an integer from 1 to 65535') &&
        error.message.includes('config.yaml:4: skills.top_k = "many": expected an integer from 0 to 50'),
    );
  });

  test('an unknown key warns and names the nearest valid one, and nothing else changes', () => {
    const config = load(home('proxy:\n  prot: 4000\nmemroy:\n  enabled: false\n'));
    assert.equal(config.values['proxy.port'], 30000);
    assert.ok(config.warnings.some((warning) => warning.includes('"proxy.prot"') && warning.includes('"proxy.port"')));
    assert.ok(config.warnings.some((warning) => warning.includes('"memroy"') && warning.includes('"memory"')));
  });

  test("MetaClaw's legacy names still load: rl.tinker_api_key and mode madmax", () => {
    const config = load(home('mode: madmax\nrl:\n  tinker_api_key: tk-123\n'));
    assert.equal(config.values['mode'], 'auto');
    assert.equal(config.values['rl.api_key'], 'tk-123');
  });

  test('values are typed by the schema: a numeric-looking key stays text, quoted booleans are booleans', () => {
    const config = load(home('llm:\n  api_key: 0123456\n  model_id: 4\nskills:\n  enabled: "false"\n'));
    assert.equal(config.values['llm.api_key'], '0123456');
    assert.equal(config.values['llm.model_id'], '4');
    assert.equal(config.values['skills.enabled'], false);
  });

  test('the team store URL: --store wins over METACLAW_DATABASE_URL, which wins over store.url in the file', () => {
    const folder = home('store:\n  url: postgres://file@db.example/metaclaw\n');
    const fromEnv = { METACLAW_HOME: folder, METACLAW_DATABASE_URL: 'postgres://env@db.example/metaclaw' };
    const flag = { 'store.url': 'postgres://flag@db.example/metaclaw' };
    assert.equal(load(folder).values['store.url'], 'postgres://file@db.example/metaclaw');
    assert.equal(loadConfig({ env: fromEnv }).values['store.url'], 'postgres://env@db.example/metaclaw');
    assert.equal(loadConfig({ env: fromEnv, overrides: flag }).values['store.url'], 'postgres://flag@db.example/metaclaw');
    assert.equal(loadConfig({ env: { METACLAW_HOME: folder }, overrides: flag }).values['store.url'], 'postgres://flag@db.example/metaclaw');
  });

  test('fallback upstreams are validated as a list of objects', () => {
    assert.throws(
      () => load(home('llm:\n  fallbacks:\n    - api_base: not-a-url\n')),
      (error: unknown) => error instanceof ConfigError && /llm\.fallbacks/.test(error.message) && /http/.test(error.message),
    );
  });
});

describe('metaclaw config', () => {
  test('set converts by type, keeps comments and unknown sections, and writes the file 0600', async () => {
    const folder = home('# my settings\nproxy:\n  port: 30000 # the usual\ncustom_section:\n  keep: me\n');
    const set = await runCli(['config', 'set', 'llm.api_key', '12345'], { home: folder });
    assert.equal(set.code, 0, set.stderr);
    const port = await runCli(['config', 'set', 'proxy.port', '4100'], { home: folder });
    assert.equal(port.code, 0, port.stderr);
    const text = readFileSync(join(folder, 'config.yaml'), 'utf8');
    assert.match(text, /# my settings/);
    assert.match(text, /# the usual/);
    assert.match(text, /custom_section:\n {2}keep: me/);
    assert.match(text, /api_key: "12345"/);
    assert.match(text, /port: 4100/);
    assert.equal(statSync(join(folder, 'config.yaml')).mode & 0o777, 0o600);
    const config = load(folder);
    assert.equal(config.values['llm.api_key'], '12345');
    assert.equal(config.values['proxy.port'], 4100);
  });

  test('a wrong value is refused with what is expected, and the file is unchanged', async () => {
    const folder = home('proxy:\n  port: 30000\n');
    const before = readFileSync(join(folder, 'config.yaml'), 'utf8');
    const result = await runCli(['config', 'set', 'proxy.port', 'abc'], { home: folder });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /proxy\.port = "abc": expected an integer from 1 to 65535/);
    assert.equal(readFileSync(join(folder, 'config.yaml'), 'utf8'), before);
    const unknown = await runCli(['config', 'set', 'proxy.prot', '1'], { home: folder });
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /did you mean "proxy\.port"/);
  });

  test('a learning rate of 0 (training that learns nothing) is refused by config set and on load; a small positive one is taken', async () => {
    const folder = home();
    const zero = await runCli(['config', 'set', 'rl.learning_rate', '0'], { home: folder });
    assert.equal(zero.code, 1);
    assert.match(zero.stderr, /rl\.learning_rate = "0": expected a number above 0/);
    assert.equal((await runCli(['config', 'set', 'rl.learning_rate', '0.00002'], { home: folder })).code, 0);
    assert.equal(load(folder).values['rl.learning_rate'], 0.00002);
    assert.throws(
      () => load(home('rl:\n  learning_rate: 0\n')),
      (error: unknown) => error instanceof ConfigError && /rl\.learning_rate = 0: expected a number above 0/.test(error.message),
    );
  });

  test("MetaClaw's `config KEY [VALUE]` form gets and sets", async () => {
    const folder = home();
    assert.equal((await runCli(['config', 'skills.top_k', '3'], { home: folder })).code, 0);
    const get = await runCli(['config', 'skills.top_k'], { home: folder });
    assert.equal(get.stdout.trim(), 'skills.top_k: 3');
    const getForm = await runCli(['config', 'get', 'mode'], { home: folder });
    assert.equal(getForm.stdout.trim(), 'mode: skills_only');
  });

  test('show masks secrets unless --reveal', async () => {
    const folder = home('llm:\n  api_key: sk-very-secret-value-123\n');
    const shown = await runCli(['config', 'show'], { home: folder });
    assert.equal(shown.code, 0);
    assert.equal(shown.stdout.includes('sk-very-secret-value-123'), false);
    assert.match(shown.stdout, /llm\.api_key = sk-… \(24 chars\)/);
    const revealed = await runCli(['config', 'get', 'llm.api_key', '--reveal'], { home: folder });
    assert.match(revealed.stdout, /sk-very-secret-value-123/);
  });

  test("a calendar's secret iCal address is shown by its host alone (set, show, get) unless --reveal; a file path is shown whole", async () => {
    const folder = home();
    const secret = 'https://calendar.google.com/calendar/ical/me%40example.com/private-0123SECRET/basic.ics';
    const set = await runCli(['config', 'set', 'scheduler.calendar.ics_url', secret], { home: folder });
    assert.equal(set.code, 0, set.stderr);
    const shown = [
      set.stdout,
      (await runCli(['config', 'show'], { home: folder })).stdout,
      (await runCli(['config', 'show', '--json'], { home: folder })).stdout,
    ];
    shown.push((await runCli(['config', 'get', 'scheduler.calendar.ics_url'], { home: folder })).stdout);
    for (const text of shown) {
      assert.doesNotMatch(text, /0123SECRET/);
      assert.match(text, /https:\/\/calendar\.google\.com\/…/);
    }
    const revealed = await runCli(['config', 'get', 'scheduler.calendar.ics_url', '--reveal'], { home: folder });
    assert.match(revealed.stdout, /private-0123SECRET/);
    assert.equal(load(folder).values['scheduler.calendar.ics_url'], secret, 'the value itself is kept as given');
    await runCli(['config', 'set', 'scheduler.calendar.ics_url', '/home/me/work.ics'], { home: folder });
    assert.match((await runCli(['config', 'get', 'scheduler.calendar.ics_url'], { home: folder })).stdout, /\/home\/me\/work\.ics/);
  });

  test('start refuses an invalid config with a precise message and starts nothing', async () => {
    const folder = home('proxy:\n  port: "not a port"\n');
    const result = await runCli(['start'], { home: folder });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /config\.yaml:2: proxy\.port = "not a port": expected an integer/);
    const status = await runCli(['status'], { home: folder });
    assert.notEqual(status.code, 0);
  });

  test('a config path that cannot be read (a folder) is a clear error naming it, not a stack trace, for every command', async () => {
    const folder = home();
    mkdirSync(join(folder, 'config.yaml'));
    for (const args of [['config', 'show'], ['config', 'set', 'proxy.port', '4000'], ['status'], ['start'], ['memory', 'stats']]) {
      const result = await runCli(args, { home: folder });
      assert.equal(result.code, 1, `${args.join(' ')}: ${result.stdout}`);
      assert.match(result.stderr, /config\.yaml/, args.join(' '));
      assert.doesNotMatch(result.stderr, /\n\s+at |node:fs/, args.join(' '));
    }
    const elsewhere = await runCli(['config', 'show', '-c', folder], { home: folder });
    assert.equal(elsewhere.code, 1);
    assert.doesNotMatch(elsewhere.stderr, /\n\s+at /);
  });

  test('a refused config set writes nothing: no config file and no schema file', async () => {
    const folder = home();
    const result = await runCli(['config', 'set', 'proxy.port', 'abc'], { home: folder });
    assert.equal(result.code, 1);
    assert.deepEqual(readdirSync(folder), []);
  });

  test('memory.scope cannot be empty: config set refuses it and a file holding it does not load', async () => {
    const folder = home();
    const refused = await runCli(['config', 'set', 'memory.scope', ' '], { home: folder });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /memory\.scope = " ": expected a non-empty string/);
    assert.throws(
      () => load(home('memory:\n  scope: ""\n')),
      (error: unknown) => error instanceof ConfigError && /config\.yaml:2: memory\.scope/.test(error.message),
    );
  });

  test('words beyond what a config subcommand takes are refused, not dropped: an unquoted value with a space is not cut to its first word', async () => {
    const folder = home('llm:\n  model_id: gpt-4o\n');
    const before = readFileSync(join(folder, 'config.yaml'), 'utf8');
    for (const args of [
      ['config', 'set', 'llm.model_id', 'my', 'model'],
      ['config', 'llm.model_id', 'my', 'model'],
      ['config', 'get', 'llm.model_id', 'extra'],
      ['config', 'unset', 'llm.model_id', 'extra'],
      ['config', 'show', 'extra'],
    ]) {
      const result = await runCli(args, { home: folder });
      assert.equal(result.code, 1, `${args.join(' ')}: ${result.stdout}`);
      assert.match(result.stderr, /Usage: metaclaw config/, args.join(' '));
    }
    assert.equal(readFileSync(join(folder, 'config.yaml'), 'utf8'), before);
  });

  test('unset removes a key the schema does not know when the file holds it (saying so), and one that makes the file fail to load; an unknown key the file does not hold, or a section, is still refused', async () => {
    const folder = home('proxy:\n  prot: 4000\nmode: skills_only\n');
    const typo = await runCli(['config', 'unset', 'proxy.prot'], { home: folder });
    assert.equal(typo.code, 0, typo.stderr);
    assert.match(typo.stdout, /proxy\.prot removed from .*config\.yaml; MetaClaw does not know this key \(did you mean "proxy\.port"\?\)/);
    assert.equal(readFileSync(join(folder, 'config.yaml'), 'utf8'), 'mode: skills_only\n');
    for (const key of ['proxy.nothere', 'proxy', 'skills']) {
      const refused = await runCli(['config', 'unset', key], { home: folder });
      assert.equal(refused.code, 1, `${key}: ${refused.stdout}`);
      assert.match(refused.stderr, key === 'proxy.nothere' ? /Unknown config key "proxy\.nothere"/ : new RegExp(`"${key}" is a section of keys, not a key`));
    }
    assert.equal(readFileSync(join(folder, 'config.yaml'), 'utf8'), 'mode: skills_only\n');

    const broken = home('proxy:\n  port: abc\nmode: skills_only\n');
    const fixed = await runCli(['config', 'unset', 'proxy.port'], { home: broken });
    assert.equal(fixed.code, 0, fixed.stderr);
    assert.match(fixed.stdout, /proxy\.port removed/);
    assert.equal(load(broken).values['proxy.port'], 30000);
  });

  test("unset removes a key written under MetaClaw's legacy name too, so its default really applies", async () => {
    const folder = home('rl:\n  tinker_api_key: old-legacy-key-123\nmode: skills_only\n');
    const unset = await runCli(['config', 'unset', 'rl.api_key'], { home: folder });
    assert.equal(unset.code, 0, unset.stderr);
    assert.match(unset.stdout, /rl\.api_key removed/);
    assert.equal(readFileSync(join(folder, 'config.yaml'), 'utf8'), 'mode: skills_only\n');
    assert.equal(load(folder).values['rl.api_key'], '');
  });
});
