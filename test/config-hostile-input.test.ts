import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ConfigError } from '../src/errors.js';
import { configHomes } from './support/config-homes.js';
import { runCli } from './support/proxy.js';

const { home, load } = configHomes('metaclaw-hostile-');
const refusedWith = (pattern: RegExp) => (error: unknown) => error instanceof ConfigError && pattern.test(error.message);

describe('config.yaml shapes a hand-written or MetaClaw file may have', () => {
  test('YAML aliases and merge keys load as PyYAML reads them (MetaClaw files may use them)', () => {
    const config = load(
      home(
        [
          'defaults: &defaults',
          '  port: 4100',
          '  host: 127.0.0.1',
          'few: &few 3',
          'backup: &backup { name: b, api_base: "https://b.example/v1" }',
          'proxy:',
          '  <<: *defaults',
          '  host: localhost',
          'skills: { top_k: *few }',
          'llm:',
          '  fallbacks: [*backup, *backup]',
          '',
        ].join('\n'),
      ),
    );
    assert.equal(config.values['proxy.port'], 4100);
    assert.equal(config.values['proxy.host'], 'localhost'); // the mapping's own key wins over the merged one
    assert.equal(config.values['skills.top_k'], 3);
    assert.equal(config.values['llm.fallbacks'].length, 2);
    assert.ok(config.warnings.some((warning) => warning.includes('"defaults"')));
  });

  test('a section written as an alias loads its keys, and one that merges itself does not loop', () => {
    assert.equal(load(home('base: &b\n  port: 4300\nproxy: *b\n')).values['proxy.port'], 4300);
    assert.equal(load(home('proxy: &p\n  port: 4400\n  <<: *p\n')).values['proxy.port'], 4400);
  });

  test('a "billion laughs" alias bomb in a value is refused by name, not expanded', () => {
    const levels = ['a: &a [x, x, x, x, x, x, x, x, x]'];
    for (const [index, name] of [...'bcdefghi'].entries()) levels.push(`${name}: &${name} [${Array(9).fill(`*${'abcdefghi'[index]}`).join(', ')}]`);
    const folder = home(`${levels.join('\n')}\nllm:\n  fallbacks: *i\n`);
    assert.throws(() => load(folder), refusedWith(/llm\.fallbacks: .*alias/i));
  });

  test('bytes that are not UTF-8 are refused with the line, not loaded as U+FFFD', () => {
    const folder = home(Buffer.concat([Buffer.from('proxy:\n  port: 4000\nllm:\n  model_id: "caf'), Buffer.from([0xe9, 0xff]), Buffer.from('"\n')]));
    assert.throws(() => load(folder), refusedWith(/config\.yaml:4: the file is not UTF-8 text/));
  });

  test('a byte-order mark and CRLF line ends load', () => {
    assert.equal(load(home('\uFEFFproxy:\r\n  port: 4500\r\n')).values['proxy.port'], 4500);
  });

  test('YAML .nan and .inf are named as such when refused, not as null', () => {
    assert.throws(() => load(home('proxy:\n  port: .nan\n')), refusedWith(/proxy\.port = NaN: expected an integer/));
    assert.throws(() => load(home('log:\n  max_size_mb: -.inf\n')), refusedWith(/log\.max_size_mb = -Infinity: expected a number/));
  });

  test("MetaClaw's memory keys policy_path, telemetry_path, sidecar_url, consolidation_interval and embedding_model_path are compatibility keys, not typos", () => {
    const config = load(
      home(
        'memory:\n  policy_path: ~/.metaclaw/memory/policy.json\n  telemetry_path: t.jsonl\n  sidecar_url: http://127.0.0.1:30001\n  consolidation_interval: 3600\n  embedding_model_path: Qwen/Qwen3-Embedding-0.6B\n',
      ),
    );
    assert.equal(config.warnings.filter((warning) => warning.includes('unknown key')).length, 0, config.warnings.join('\n'));
    assert.equal(config.warnings.filter((warning) => warning.includes('accepted for compatibility with MetaClaw')).length, 5);
  });
});

describe('metaclaw config set on files it must not break', () => {
  test('config set through a symlinked config.yaml writes the target and keeps the link', async () => {
    const folder = home();
    const real = join(folder, 'dotfiles');
    mkdirSync(real);
    writeFileSync(join(real, 'config.yaml'), 'proxy:\n  port: 4000\n');
    symlinkSync(join(real, 'config.yaml'), join(folder, 'config.yaml'));
    const result = await runCli(['config', 'set', 'proxy.port', '4100'], { home: folder });
    assert.equal(result.code, 0, result.stderr);
    assert.ok(lstatSync(join(folder, 'config.yaml')).isSymbolicLink());
    assert.equal(readlinkSync(join(folder, 'config.yaml')), join(real, 'config.yaml'));
    assert.match(readFileSync(join(real, 'config.yaml'), 'utf8'), /port: 4100/);
    assert.equal(statSync(join(real, 'config.yaml')).mode & 0o777, 0o600);
  });

  test('config set and unset refuse a config.yaml its owner made read-only, and leave it as it was', async () => {
    const folder = home('proxy:\n  port: 4000\n');
    const file = join(folder, 'config.yaml');
    chmodSync(file, 0o400);
    for (const args of [
      ['config', 'set', 'proxy.port', '4100'],
      ['config', 'unset', 'proxy.port'],
    ]) {
      const result = await runCli(args, { home: folder });
      assert.equal(result.code, 1);
      assert.match(result.stderr, /config\.yaml is read-only \(mode 0400\); nothing was changed/);
    }
    assert.equal(readFileSync(file, 'utf8'), 'proxy:\n  port: 4000\n');
    assert.equal(statSync(file).mode & 0o777, 0o400);
  });

  test('concurrent config set of different keys from several processes keeps every change', async () => {
    const folder = home('proxy:\n  port: 4000\n');
    const sets = [
      ['skills.top_k', '7'],
      ['memory.top_k', '9'],
      ['llm.model_id', 'm1'],
      ['proxy.port', '4100'],
      ['log.max_files', '3'],
    ];
    const results = await Promise.all(sets.map(([key, value]) => runCli(['config', 'set', key!, value!], { home: folder })));
    for (const result of results) assert.equal(result.code, 0, result.stderr);
    const values = load(folder).values;
    assert.deepEqual(
      [values['skills.top_k'], values['memory.top_k'], values['llm.model_id'], values['proxy.port'], values['log.max_files']],
      [7, 9, 'm1', 4100, 3],
    );
  });

  test('a lock left by a process that has exited is taken over; one a live process holds makes config set give up in 5 s, the file unchanged', async () => {
    const folder = home('proxy:\n  port: 4000\n');
    const lock = join(folder, 'config.yaml.lock');
    writeFileSync(lock, String(spawnSync(process.execPath, ['-e', '']).pid));
    const taken = await runCli(['config', 'set', 'proxy.port', '4100'], { home: folder });
    assert.equal(taken.code, 0, taken.stderr);
    assert.equal(existsSync(lock), false);
    writeFileSync(lock, String(process.pid));
    const busy = await runCli(['config', 'set', 'proxy.port', '4200'], { home: folder });
    assert.equal(busy.code, 1);
    assert.match(busy.stderr, /Another process is changing .*config\.yaml \(.*config\.yaml\.lock is held\); nothing was changed/);
    assert.equal(load(folder).values['proxy.port'], 4100);
  });

  test('config set of a key under a section written as a YAML alias is refused, the file unchanged', async () => {
    const yaml = 'base: &b\n  port: 4300\nproxy: *b\n';
    const folder = home(yaml);
    const result = await runCli(['config', 'set', 'proxy.port', '4100'], { home: folder });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /writes proxy as a YAML alias; change proxy\.port there by hand/);
    assert.equal(readFileSync(join(folder, 'config.yaml'), 'utf8'), yaml);
  });
});

describe("a fallback's api_key is a secret inside a value", () => {
  test('config set, show, get and a refused value mask a fallback api_key; --reveal shows it', async () => {
    const folder = home();
    const key = 'sk-fallbacksecret-0123456789';
    const set = await runCli(['config', 'set', 'llm.fallbacks', JSON.stringify([{ api_base: 'https://b.example/v1', api_key: key }])], { home: folder });
    assert.equal(set.code, 0, set.stderr);
    const refused = await runCli(['config', 'set', 'llm.fallbacks', JSON.stringify([{ api_base: 'nope', api_key: key }])], { home: folder });
    assert.equal(refused.code, 1);
    const show = await runCli(['config', 'show'], { home: folder });
    const json = await runCli(['config', 'show', '--json'], { home: folder });
    const get = await runCli(['config', 'get', 'llm.fallbacks'], { home: folder });
    for (const output of [set.stdout, refused.stderr, show.stdout, json.stdout, get.stdout]) {
      assert.doesNotMatch(output, /fallbacksecret/);
      assert.match(output, /sk-… \(28 chars\)/);
    }
    const reveal = await runCli(['config', 'get', 'llm.fallbacks', '--reveal'], { home: folder });
    assert.match(reveal.stdout, /sk-fallbacksecret-0123456789/);
    assert.throws(
      () => load(home(`llm:\n  fallbacks:\n    - { api_base: nope, api_key: ${key} }\n`)),
      (error: unknown) => error instanceof ConfigError && !error.message.includes(key),
    );
  });
});

describe('start on a host it cannot listen on', () => {
  test('an address this machine does not have, or a host name that does not resolve, is one line and exit 1, not a stack trace', async () => {
    for (const host of ['10.254.254.254', 'no-such-host.invalid']) {
      const result = await runCli(['start', '--foreground', '--no-wire', '--host', host, '--port', '34571'], {
        home: home(),
        env: { METACLAW_PROXY_API_KEY: 'k-0123456789abcdef' },
      });
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, /is not an address of this machine|does not resolve to an address/);
      assert.doesNotMatch(result.stderr, /\n\s+at /);
    }
  });
});

describe('METACLAW_HOME that is not a folder', () => {
  test('start refuses a METACLAW_HOME that is a file in one line, without making the file 0700', async () => {
    const folder = home();
    const file = join(folder, 'not-a-folder');
    writeFileSync(file, 'x');
    chmodSync(file, 0o644);
    const result = await runCli(['start', '--foreground', '--no-wire'], { home: folder, env: { METACLAW_HOME: file } });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /is a file, not a folder; nothing was changed/);
    assert.doesNotMatch(result.stderr, /\n\s+at /);
    assert.equal(statSync(file).mode & 0o777, 0o644);
  });
});
