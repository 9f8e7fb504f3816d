import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { JsonParser } from '@croct/json5-parser';
import { parse as parseToml } from 'smol-toml';
import { parse as parseYaml } from 'yaml';
import { backupsFolder, ClawError, findLedgerEntry, ledgerPath, readLedger, unwireAll, unwireClaw, verifyClaw, wireClaw } from '../src/claws/index.js';
import type { ClawType, WiringTarget } from '../src/claws/index.js';
import { fakeEnvironment, fixtureBytes, installFixture, removeHomes } from './fixtures/claws/harness.js';
import type { FakeEnvironment } from './fixtures/claws/harness.js';

after(removeHomes);

const target: WiringTarget = { proxyUrl: 'http://127.0.0.1:30000', apiKey: 'mc-proxy-key', model: 'qwen3-32b', apiFormat: 'openai', contextWindow: 65536 };

type Data = Record<string, unknown>;

function parseJson5(text: string): Data {
  return JsonParser.parse(text).toJSON() as Data;
}

/** A deliberately simple .env reader, independent of the code under test. */
function parseEnv(text: string): Data {
  const values: Data = {};
  for (const line of text.split(/\r?\n/)) {
    const match = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (match === null) continue;
    const raw = (match[2] ?? '').trim();
    const quoted = /^(["'])(.*)\1/.exec(raw);
    values[match[1] as string] = quoted === null ? raw.replace(/\s+#.*$/, '') : quoted[2];
  }
  return values;
}

function valueAt(data: unknown, path: readonly string[]): unknown {
  let current = data;
  for (const key of path) {
    if (typeof current !== 'object' || current === null || !(key in current)) return undefined;
    current = (current as Data)[key];
  }
  return current;
}

interface AdapterCase {
  type: ClawType;
  fixture: string;
  binaries: string[];
  /** installs the fixture (and anything else the agent needs) and returns the config path */
  prepare(environment: FakeEnvironment): string;
  parse(text: string): Data;
  /** the restart command, or undefined when the agent is not restarted */
  restart: string[] | undefined;
  check(data: Data, text: string): void;
  /** top-level-to-leaf paths MetaClaw owns; after a non-exact unwire they equal the original's */
  ourKeys: string[][];
  userEdit: [string, string];
  malformed: string;
}

const CASES: AdapterCase[] = [
  {
    type: 'openclaw',
    fixture: 'openclaw.json5',
    binaries: ['openclaw'],
    prepare: (environment) => installFixture(environment.home, 'openclaw.json5', '.openclaw/openclaw.json'),
    parse: parseJson5,
    restart: undefined,
    check: (data, text) => {
      assert.deepEqual(valueAt(data, ['models', 'providers', 'metaclaw']), {
        baseUrl: 'http://127.0.0.1:30000/v1',
        apiKey: 'mc-proxy-key',
        api: 'openai-completions',
        models: [
          {
            id: 'qwen3-32b',
            name: 'qwen3-32b',
            reasoning: false,
            input: ['text'],
            cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
            contextWindow: 65536,
            compat: { sendSessionAffinityHeaders: true, supportsUsageInStreaming: true },
          },
        ],
      });
      assert.equal(valueAt(data, ['agents', 'defaults', 'model', 'primary']), 'metaclaw/qwen3-32b');
      assert.deepEqual(valueAt(data, ['agents', 'defaults', 'model', 'fallbacks']), []);
      assert.deepEqual(valueAt(data, ['agents', 'defaults', 'sandbox']), { mode: 'all', scope: 'session' }, 'the sandbox is never touched');
      assert.equal(valueAt(data, ['models', 'providers', 'openrouter', 'apiKey']), 'sk-or-user-key');
      assert.equal(valueAt(data, ['models', 'mode']), undefined, 'models.mode stays absent (merge is the default)');
      for (const comment of [
        '// OpenClaw configuration (JSON5)',
        '/* my own provider, kept as is */',
        '// The sandbox must stay on.',
        '// only this machine',
      ]) {
        assert.ok(text.includes(comment), `keeps ${comment}`);
      }
      assert.ok(text.includes("meta: { lastTouchedVersion: '2026.9.6' },"), 'keeps unquoted keys and single quotes');
    },
    ourKeys: [
      ['models', 'providers', 'metaclaw'],
      ['agents', 'defaults', 'model', 'primary'],
    ],
    userEdit: ['userTimezone: "Europe/Berlin"', 'userTimezone: "Asia/Tokyo"'],
    malformed: '// broken\n{ models: { providers: { openai: { baseUrl: "x" }\n',
  },
  {
    type: 'copaw',
    fixture: 'copaw-config.json',
    binaries: ['copaw'],
    prepare: (environment) => installFixture(environment.home, 'copaw-config.json', '.copaw/config.json'),
    parse: (text) => JSON.parse(text) as Data,
    restart: ['copaw', 'daemon', 'restart'],
    check: (data) => {
      assert.deepEqual(valueAt(data, ['models', 'default']), {
        provider: 'openai_compatible',
        model: 'qwen3-32b',
        api_key: 'mc-proxy-key',
        base_url: 'http://127.0.0.1:30000/v1',
      });
      assert.deepEqual(valueAt(data, ['models', 'fast']), { provider: 'dashscope', model: 'qwen-turbo' });
      assert.equal(valueAt(data, ['agents', 'defaults', 'max_iterations']), 30);
    },
    ourKeys: [['models', 'default']],
    userEdit: ['"max_iterations": 30', '"max_iterations": 50'],
    malformed: '{ "models": { "default": } }',
  },
  {
    type: 'ironclaw',
    fixture: 'ironclaw.env',
    binaries: ['ironclaw'],
    prepare: (environment) => installFixture(environment.home, 'ironclaw.env', '.ironclaw/.env'),
    parse: parseEnv,
    restart: ['ironclaw', 'service', 'restart'],
    check: (data, text) => {
      assert.equal(data.LLM_BACKEND, 'openai_compatible');
      assert.equal(data.LLM_BASE_URL, 'http://127.0.0.1:30000/v1');
      assert.equal(data.LLM_MODEL, 'qwen3-32b');
      assert.equal(data.LLM_API_KEY, 'mc-proxy-key');
      assert.equal(data.DATABASE_URL, 'postgres://ironclaw:secret@localhost:5432/ironclaw');
      assert.equal(data.NEARAI_SESSION_TOKEN, 'abc123');
      assert.ok(text.includes('LLM_BACKEND=openai_compatible   # default backend'), 'value replaced in place, trailing comment kept');
      assert.ok(text.includes('export LLM_MODEL=qwen3-32b'), 'export prefix kept');
      assert.ok(text.startsWith('# IronClaw environment'));
      assert.ok(text.indexOf('# keep this comment at the end') < text.indexOf('RUST_LOG=info'), 'order kept');
    },
    ourKeys: [['LLM_BACKEND'], ['LLM_BASE_URL'], ['LLM_MODEL'], ['LLM_API_KEY']],
    userEdit: ['RUST_LOG=info', 'RUST_LOG=debug'],
    malformed: 'LLM_MODEL="never closed\nRUST_LOG=info\n',
  },
  {
    type: 'picoclaw',
    fixture: 'picoclaw-config.json',
    binaries: ['picoclaw'],
    prepare: (environment) => installFixture(environment.home, 'picoclaw-config.json', '.picoclaw/config.json'),
    parse: (text) => JSON.parse(text) as Data,
    restart: ['picoclaw', 'gateway', 'restart'],
    check: (data) => {
      assert.deepEqual(data.model_list, [
        { model_name: 'gpt4', model: 'openai/gpt-4o', api_key: 'sk-user-openai', api_base: 'https://api.openai.com/v1' },
        { model_name: 'metaclaw', model: 'openai/qwen3-32b', api_key: 'mc-proxy-key', api_base: 'http://127.0.0.1:30000/v1' },
      ]);
      assert.equal(valueAt(data, ['agents', 'defaults', 'model_name']), 'metaclaw');
      assert.equal(valueAt(data, ['agents', 'defaults', 'temperature']), 0.7);
    },
    ourKeys: [['model_list'], ['agents', 'defaults', 'model_name']],
    userEdit: ['"port": 18790', '"port": 18791'],
    malformed: '{ "model_list": [ { "model_name": "gpt4", } ',
  },
  {
    type: 'zeroclaw',
    fixture: 'zeroclaw-config.toml',
    binaries: ['zeroclaw'],
    prepare: (environment) => installFixture(environment.home, 'zeroclaw-config.toml', '.zeroclaw/config.toml'),
    parse: (text) => parseToml(text),
    restart: ['zeroclaw', 'service', 'restart'],
    check: (data, text) => {
      assert.equal(data.provider, 'openai-compatible');
      assert.equal(data.model, 'qwen3-32b');
      assert.equal(data.api_key, 'mc-proxy-key');
      assert.equal(data.base_url, 'http://127.0.0.1:30000/v1');
      assert.deepEqual(data.allowed_paths, ['~/work', '~/notes']);
      assert.deepEqual({ ...(data.memory as Data) }, { backend: 'sqlite', auto_save: true });
      for (const comment of ['# ZeroClaw configuration', '# who answers', '# projects', '# Memory backend'])
        assert.ok(text.includes(comment), `keeps ${comment}`);
      assert.ok(text.indexOf('base_url =') < text.indexOf('[memory]'), 'top-level keys go before the first table');
    },
    ourKeys: [['provider'], ['model'], ['api_key'], ['base_url']],
    userEdit: ['port = 3000', 'port = 3001'],
    malformed: 'provider = "openrouter\n[memory\n',
  },
  {
    type: 'nanoclaw',
    fixture: 'nanoclaw.env',
    binaries: ['systemctl'],
    prepare: (environment) => {
      installFixture(environment.home, 'nanoclaw.service', '.config/systemd/user/nanoclaw.service');
      return installFixture(environment.home, 'nanoclaw.env', 'projects/nanoclaw/.env');
    },
    parse: parseEnv,
    restart: ['systemctl', '--user', 'restart', 'nanoclaw'],
    check: (data, text) => {
      assert.equal(data.ANTHROPIC_BASE_URL, 'http://127.0.0.1:30000', 'Anthropic Messages: no /v1');
      assert.equal(data.ANTHROPIC_API_KEY, 'mc-proxy-key');
      assert.equal(data.ASSISTANT_NAME, 'Andy');
      assert.ok(text.includes('# Claude auth'));
    },
    ourKeys: [['ANTHROPIC_BASE_URL'], ['ANTHROPIC_API_KEY']],
    userEdit: ['ASSISTANT_NAME=Andy', 'ASSISTANT_NAME=Bob'],
    malformed: "ANTHROPIC_API_KEY='never closed\n",
  },
  {
    type: 'hermes',
    fixture: 'hermes-config.yaml',
    binaries: ['hermes'],
    prepare: (environment) => installFixture(environment.home, 'hermes-config.yaml', '.hermes/config.yaml'),
    parse: (text) => parseYaml(text) as Data,
    restart: ['hermes', 'gateway', 'restart'],
    check: (data, text) => {
      assert.deepEqual(data.custom_providers, [
        { name: 'local', base_url: 'http://localhost:8080/v1', api_key: 'none' },
        { name: 'metaclaw', base_url: 'http://127.0.0.1:30000/v1', api_key: 'mc-proxy-key', models: { 'qwen3-32b': { context_length: 65536 } } },
      ]);
      assert.deepEqual(data.model, { default: 'qwen3-32b', provider: 'custom:metaclaw', base_url: 'https://openrouter.ai/api/v1' });
      assert.deepEqual(data.toolsets, ['web', 'terminal']);
      for (const comment of ['# Hermes Agent configuration', '# main model', '# Extra OpenAI-compatible endpoints', '# llama.cpp needs no key']) {
        assert.ok(text.includes(comment), `keeps ${comment}`);
      }
    },
    ourKeys: [['custom_providers'], ['model', 'provider'], ['model', 'default']],
    userEdit: ['timeout: 180', 'timeout: 300'],
    malformed: 'model:\n  default: [unclosed\n  provider: auto\n',
  },
  {
    type: 'claude-code',
    fixture: 'claude-settings.json',
    binaries: ['claude'],
    prepare: (environment) => installFixture(environment.home, 'claude-settings.json', '.claude/settings.json'),
    parse: (text) => JSON.parse(text) as Data,
    restart: undefined,
    check: (data) => {
      assert.deepEqual(data.env, {
        DISABLE_TELEMETRY: '1',
        BASH_DEFAULT_TIMEOUT_MS: '120000',
        ANTHROPIC_BASE_URL: 'http://127.0.0.1:30000',
        ANTHROPIC_CUSTOM_HEADERS: 'x-metaclaw-api-key: mc-proxy-key',
      });
      assert.equal(data.model, 'opus', "the user's model is kept");
      assert.deepEqual(valueAt(data, ['permissions', 'deny']), ['Read(./.env)']);
    },
    ourKeys: [
      ['env', 'ANTHROPIC_BASE_URL'],
      ['env', 'ANTHROPIC_CUSTOM_HEADERS'],
    ],
    userEdit: ['"includeCoAuthoredBy": false', '"includeCoAuthoredBy": true'],
    malformed: '{ "env": { "ANTHROPIC_BASE_URL": } }\n',
  },
  {
    type: 'codex',
    fixture: 'codex-config.toml',
    binaries: ['codex'],
    prepare: (environment) => installFixture(environment.home, 'codex-config.toml', '.codex/config.toml'),
    parse: (text) => parseToml(text),
    restart: undefined,
    check: (data, text) => {
      assert.equal(data.model_provider, 'metaclaw');
      assert.equal(data.model, 'gpt-5-codex', "the user's model is kept");
      const providers = data.model_providers as Record<string, Data>;
      assert.deepEqual(
        { ...providers.metaclaw },
        { name: 'MetaClaw', base_url: 'http://127.0.0.1:30000/v1', wire_api: 'responses', experimental_bearer_token: 'mc-proxy-key' },
      );
      assert.equal(providers.ollama?.base_url, 'http://localhost:11434/v1');
      for (const comment of ['# Codex configuration', '# the model I use', '# A local model for experiments'])
        assert.ok(text.includes(comment), `keeps ${comment}`);
      assert.ok(text.indexOf('model_provider = "metaclaw"') < text.indexOf('[model_providers.ollama]'), 'a top-level key goes before the first table');
      assert.ok(
        text.endsWith(
          '[model_providers.metaclaw]\nname = "MetaClaw"\nbase_url = "http://127.0.0.1:30000/v1"\nwire_api = "responses"\nexperimental_bearer_token = "mc-proxy-key"\n',
        ),
      );
    },
    ourKeys: [['model_provider'], ['model_providers', 'metaclaw']],
    userEdit: ['trust_level = "trusted"', 'trust_level = "untrusted"'],
    malformed: 'model = "gpt-5-codex\n[model_providers.ollama\n',
  },
  {
    type: 'qwen-code',
    fixture: 'qwen-settings.json',
    binaries: ['qwen'],
    prepare: (environment) => installFixture(environment.home, 'qwen-settings.json', '.qwen/settings.json'),
    parse: (text) => JSON.parse(text) as Data,
    restart: undefined,
    check: (data) => {
      assert.deepEqual(valueAt(data, ['modelProviders', 'openai']), [
        {
          id: 'qwen3-32b',
          name: 'qwen3-32b (MetaClaw)',
          baseUrl: 'http://127.0.0.1:30000/v1',
          envKey: 'METACLAW_API_KEY',
          generationConfig: { contextWindowSize: 65536 },
        },
        { id: 'qwen3-coder-plus', name: 'Qwen3 Coder Plus', baseUrl: 'https://dashscope.aliyuncs.com/compatible-mode/v1', envKey: 'DASHSCOPE_API_KEY' },
      ]);
      assert.deepEqual(data.env, { DASHSCOPE_API_KEY: 'sk-dashscope-user', METACLAW_API_KEY: 'mc-proxy-key' });
      assert.equal(valueAt(data, ['security', 'auth', 'selectedType']), 'openai');
      assert.equal(valueAt(data, ['model', 'name']), 'qwen3-32b');
      assert.equal(valueAt(data, ['ui', 'theme']), 'GitHub');
    },
    ourKeys: [
      ['modelProviders', 'openai'],
      ['env', 'METACLAW_API_KEY'],
      ['security', 'auth', 'selectedType'],
      ['model', 'name'],
    ],
    userEdit: ['"theme": "GitHub"', '"theme": "Dracula"'],
    malformed: '{ "model": { "name": } }\n',
  },
  {
    type: 'opencode',
    fixture: 'opencode.jsonc',
    binaries: ['opencode'],
    prepare: (environment) => installFixture(environment.home, 'opencode.jsonc', '.config/opencode/opencode.jsonc'),
    parse: parseJson5,
    restart: undefined,
    check: (data, text) => {
      assert.deepEqual(valueAt(data, ['provider', 'metaclaw']), {
        npm: '@ai-sdk/openai-compatible',
        name: 'MetaClaw',
        options: { baseURL: 'http://127.0.0.1:30000/v1', apiKey: 'mc-proxy-key' },
        models: { 'qwen3-32b': { name: 'qwen3-32b (MetaClaw)', tool_call: true } },
      });
      assert.equal(data.model, 'metaclaw/qwen3-32b');
      assert.equal(data.small_model, 'anthropic/claude-haiku-4-5', 'the title model is left alone');
      assert.deepEqual(valueAt(data, ['provider', 'lmstudio', 'models']), { 'qwen2.5-coder': {} }, "the user's own provider stays selectable");
      for (const comment of ['// my default model', '/* a local server */']) assert.ok(text.includes(comment), `keeps ${comment}`);
    },
    ourKeys: [['provider', 'metaclaw'], ['model']],
    userEdit: ['"theme": "tokyonight"', '"theme": "nord"'],
    malformed: '{ "provider": { "x": { , } }\n',
  },
];

function restartCalls(environment: FakeEnvironment, restart: string[] | undefined): number {
  if (restart === undefined) return 0;
  return environment.calls.filter((call) => [call.command, ...call.args].join(' ') === restart.join(' ')).length;
}

function backupFiles(environment: FakeEnvironment): string[] {
  const folder = backupsFolder(environment.metaclawHome);
  return existsSync(folder) ? readdirSync(folder) : [];
}

function fileState(path: string): { bytes: Buffer; mtimeMs: number; inode: number } {
  const stat = statSync(path);
  return { bytes: readFileSync(path), mtimeMs: stat.mtimeMs, inode: stat.ino };
}

for (const adapterCase of CASES) {
  describe(`${adapterCase.type} adapter`, () => {
    const setup = (): { environment: FakeEnvironment; path: string; original: Buffer } => {
      const environment = fakeEnvironment({ binaries: adapterCase.binaries });
      const path = adapterCase.prepare(environment);
      return { environment, path, original: fixtureBytes(adapterCase.fixture) };
    };

    test('apply writes the settings, keeps comments and unrelated keys, backs up the original and restarts once', async () => {
      const { environment, path, original } = setup();
      const result = await wireClaw(adapterCase.type, target, environment);
      assert.equal(result.changed, true);
      assert.equal(result.configPath, path);
      const text = readFileSync(path, 'utf8');
      adapterCase.check(adapterCase.parse(text), text);

      assert.ok(result.backupPath !== undefined);
      assert.deepEqual(readFileSync(result.backupPath), original, 'the backup is a byte-for-byte copy');
      assert.equal(statSync(result.backupPath).mode & 0o777, 0o600);
      assert.equal(statSync(ledgerPath(environment.metaclawHome)).mode & 0o777, 0o600);
      const entry = findLedgerEntry(environment.metaclawHome, adapterCase.type);
      assert.ok(entry !== undefined);
      assert.equal(entry.configPath, path);
      assert.deepEqual(entry.target, target);
      assert.equal(entry.files[0]?.existedBefore, true);
      assert.equal(entry.files[0]?.backupPath, result.backupPath);

      assert.equal(restartCalls(environment, adapterCase.restart), adapterCase.restart === undefined ? 0 : 1);
      assert.equal(result.restarted, adapterCase.restart !== undefined);
      const verified = await verifyClaw(adapterCase.type, target, environment);
      assert.deepEqual(verified.problems, []);
      assert.equal(verified.wired, true);
    });

    test('a second apply writes nothing, keeps the first backup and restarts nothing', async () => {
      const { environment, path } = setup();
      const first = await wireClaw(adapterCase.type, target, environment);
      const before = fileState(path);
      const callsBefore = environment.calls.length;
      const second = await wireClaw(adapterCase.type, target, environment);
      assert.equal(second.changed, false);
      assert.equal(second.restarted, false);
      assert.deepEqual(fileState(path), before, 'same bytes, mtime and inode');
      assert.deepEqual(environment.calls.slice(callsBefore), []);
      assert.equal(second.backupPath, first.backupPath);
      assert.equal(backupFiles(environment).length, 1);
    });

    test('unwire restores the original bytes and removes the backup and the ledger entry', async () => {
      const { environment, path, original } = setup();
      await wireClaw(adapterCase.type, target, environment);
      // A changed target is a second change: the backup must stay the pre-MetaClaw original.
      const changed = await wireClaw(adapterCase.type, { ...target, model: 'other-model', apiKey: 'rotated-key' }, environment);
      assert.equal(changed.changed, true);
      assert.deepEqual(readFileSync(changed.backupPath ?? ''), original);

      const result = await unwireClaw(adapterCase.type, environment);
      assert.equal(result.restored, true);
      assert.equal(result.exact, true);
      assert.ok(readFileSync(path).equals(original), 'byte-identical to the original');
      assert.deepEqual(backupFiles(environment), []);
      assert.equal(findLedgerEntry(environment.metaclawHome, adapterCase.type), undefined);
      assert.equal(restartCalls(environment, adapterCase.restart), adapterCase.restart === undefined ? 0 : 3);

      const again = await unwireClaw(adapterCase.type, environment);
      assert.equal(again.restored, false);
      assert.match(again.messages.join(' '), /nothing to undo/);
    });

    test('after the user edits the file, unwire keeps their edit and reverts only MetaClaw keys', async () => {
      const { environment, path, original } = setup();
      await wireClaw(adapterCase.type, target, environment);
      const [from, to] = adapterCase.userEdit;
      const wired = readFileSync(path, 'utf8');
      assert.ok(wired.includes(from), `fixture contains ${from}`);
      writeFileSync(path, wired.replace(from, to));

      const result = await unwireClaw(adapterCase.type, environment);
      assert.equal(result.restored, true);
      assert.equal(result.exact, false);
      assert.match(result.messages.join(' '), /edited after MetaClaw wired it/);
      const text = readFileSync(path, 'utf8');
      assert.ok(text.includes(to), 'the user edit survives');
      const data = adapterCase.parse(text);
      const originalData = adapterCase.parse(original.toString('utf8'));
      for (const key of adapterCase.ourKeys) assert.deepEqual(valueAt(data, key), valueAt(originalData, key), `${key.join('.')} is back to its original`);
      assert.equal(text, original.toString('utf8').replace(from, to), 'everything else is the original text');
      assert.equal(findLedgerEntry(environment.metaclawHome, adapterCase.type), undefined);
    });

    test('user edits made between two applies survive unwire', async () => {
      const { environment, path, original } = setup();
      await wireClaw(adapterCase.type, target, environment);
      const [from, to] = adapterCase.userEdit;
      writeFileSync(path, readFileSync(path, 'utf8').replace(from, to));
      const second = await wireClaw(adapterCase.type, { ...target, model: 'other-model', apiKey: 'rotated-key' }, environment);
      assert.equal(second.changed, true);
      const result = await unwireClaw(adapterCase.type, environment);
      assert.equal(result.exact, false);
      assert.equal(readFileSync(path, 'utf8'), original.toString('utf8').replace(from, to));
    });

    test('a malformed config is a ClawError and nothing is written', async () => {
      const { environment, path } = setup();
      writeFileSync(path, adapterCase.malformed);
      await assert.rejects(wireClaw(adapterCase.type, target, environment), (error: unknown) => {
        assert.ok(error instanceof ClawError);
        assert.equal(error.status, 'config_malformed');
        assert.ok(error.message.includes(path), error.message);
        return true;
      });
      assert.equal(readFileSync(path, 'utf8'), adapterCase.malformed);
      assert.deepEqual(backupFiles(environment), []);
      assert.deepEqual(readLedger(environment.metaclawHome).entries, []);
      assert.deepEqual(environment.calls, []);
    });
  });
}

describe('missing configs', () => {
  const required: Array<{ type: ClawType; folder: string }> = [
    { type: 'copaw', folder: '.copaw' },
    { type: 'picoclaw', folder: '.picoclaw' },
    { type: 'zeroclaw', folder: '.zeroclaw' },
  ];
  for (const { type, folder } of required) {
    test(`${type} without its config file is a ClawError and creates nothing`, async () => {
      const environment = fakeEnvironment({ binaries: [type] });
      mkdirSync(join(environment.home, folder));
      await assert.rejects(wireClaw(type, target, environment), (error: unknown) => error instanceof ClawError && error.status === 'config_missing');
      assert.deepEqual(readdirSync(join(environment.home, folder)), []);
      assert.equal(existsSync(environment.metaclawHome), false);
    });
  }

  test('openclaw, ironclaw and hermes without even their folder are ClawErrors', async () => {
    for (const type of ['openclaw', 'ironclaw', 'hermes'] as const) {
      const environment = fakeEnvironment();
      await assert.rejects(wireClaw(type, target, environment), (error: unknown) => error instanceof ClawError && error.status === 'config_missing');
      assert.deepEqual(readdirSync(environment.home), []);
    }
  });

  test('nanoclaw that cannot be located is a not_installed ClawError', async () => {
    const environment = fakeEnvironment();
    await assert.rejects(wireClaw('nanoclaw', target, environment), (error: unknown) => error instanceof ClawError && error.status === 'not_installed');
  });

  test('a config created in an existing folder is deleted again by unwire', async () => {
    const environment = fakeEnvironment();
    mkdirSync(join(environment.home, '.ironclaw'));
    const result = await wireClaw('ironclaw', target, environment);
    assert.equal(result.backupPath, undefined);
    const path = join(environment.home, '.ironclaw', '.env');
    assert.equal(statSync(path).mode & 0o777, 0o600, 'a new file holding a key is private');
    assert.equal(findLedgerEntry(environment.metaclawHome, 'ironclaw')?.files[0]?.existedBefore, false);
    const undone = await unwireClaw('ironclaw', environment);
    assert.equal(undone.exact, true);
    assert.equal(existsSync(path), false);
  });
});

describe('openclaw specifics', () => {
  const prepare = (options: { binaries?: string[] } = {}): { environment: FakeEnvironment; path: string } => {
    const environment = fakeEnvironment(options);
    return { environment, path: installFixture(environment.home, 'openclaw.json5', '.openclaw/openclaw.json') };
  };

  test('apiFormat anthropic: anthropic-messages with a base URL without /v1', async () => {
    const { environment, path } = prepare();
    await wireClaw('openclaw', { ...target, apiFormat: 'anthropic', contextWindow: 0 }, environment);
    const data = parseJson5(readFileSync(path, 'utf8'));
    const provider = valueAt(data, ['models', 'providers', 'metaclaw']) as Data;
    assert.equal(provider.baseUrl, 'http://127.0.0.1:30000');
    assert.equal(provider.api, 'anthropic-messages');
    const model = (provider.models as Data[])[0] as Data;
    assert.equal('contextWindow' in model, false, 'contextWindow 0 is left unset');
    assert.deepEqual(model.compat, { sendSessionAffinityHeaders: true, supportsUsageInStreaming: true });
  });

  test('a proxy URL with a trailing slash or /v1 is normalised', async () => {
    const { environment, path } = prepare();
    await wireClaw('openclaw', { ...target, proxyUrl: 'http://127.0.0.1:30000/v1/' }, environment);
    assert.equal(valueAt(parseJson5(readFileSync(path, 'utf8')), ['models', 'providers', 'metaclaw', 'baseUrl']), 'http://127.0.0.1:30000/v1');
  });

  /** Acts like `openclaw config set --batch-json`: applies each path, rewrites the file as plain JSON. */
  const openclawConfigSet = (path: string) => (command: string, args: readonly string[]) => {
    if (command !== 'openclaw' || args[1] !== 'set') return { code: 0, stdout: '{"valid":true}', stderr: '' };
    const data = parseJson5(readFileSync(path, 'utf8'));
    for (const { path: keyPath, value } of JSON.parse(args[3]!) as Array<{ path: string; value: unknown }>) {
      const keys = [...keyPath.matchAll(/([A-Za-z_][\w-]*)|\[("(?:[^"\\]|\\.)*")\]/g)].map((match) => match[1] ?? (JSON.parse(match[2]!) as string));
      let node = data;
      for (const key of keys.slice(0, -1)) node = (node[key] ??= {}) as Data;
      node[keys.at(-1)!] = value;
    }
    writeFileSync(path, `${JSON.stringify(data, null, 2)}\n`);
    return { code: 0, stdout: 'Updated config paths.', stderr: '' };
  };

  test('with its CLI on PATH, OpenClaw is wired through `openclaw config set --batch-json`; unwire still restores the original bytes', async () => {
    const { environment, path } = prepare({ binaries: ['openclaw'] });
    const original = readFileSync(path);
    environment.respond = openclawConfigSet(path);
    const result = await wireClaw('openclaw', target, environment);
    assert.equal(result.changed, true);
    assert.match(result.messages.join(' '), /with `openclaw config set`/);
    const [call] = environment.calls;
    assert.deepEqual(call?.args.slice(0, 3), ['config', 'set', '--batch-json']);
    const batch = JSON.parse(call.args[3]!) as Array<{ path: string }>;
    assert.deepEqual(
      batch.map((item) => item.path),
      ['models.providers.metaclaw', 'agents.defaults.model.primary'],
    );
    const written = readFileSync(path, 'utf8');
    assert.doesNotMatch(written, /^\s*\/\//m, "OpenClaw's writer drops comments");
    assert.equal(valueAt(JSON.parse(written) as Data, ['agents', 'defaults', 'sandbox', 'mode']), 'all');
    assert.equal((await verifyClaw('openclaw', target, environment)).wired, true);

    environment.calls.length = 0;
    const again = await wireClaw('openclaw', target, environment);
    assert.equal(again.changed, false);
    assert.deepEqual(environment.calls, [], 'nothing to set the second time');

    const unwired = await unwireClaw('openclaw', environment);
    assert.equal(unwired.exact, true);
    assert.deepEqual(readFileSync(path), original, 'comments and all');
  });

  test("a model id with dots and slashes uses OpenClaw's bracket path syntax", async () => {
    const { environment, path } = prepare({ binaries: ['openclaw'] });
    writeFileSync(path, readFileSync(path, 'utf8').replace('defaults: {', 'defaults: {\n      models: { "openrouter/anthropic/claude-sonnet-4": {} },'));
    environment.respond = openclawConfigSet(path);
    await wireClaw('openclaw', { ...target, model: 'qwen3.5-32b' }, environment);
    const batch = JSON.parse(environment.calls[0]!.args[3]!) as Array<{ path: string }>;
    assert.ok(
      batch.some((item) => item.path === 'agents.defaults.models["metaclaw/qwen3.5-32b"]'),
      JSON.stringify(batch),
    );
    assert.deepEqual(valueAt(JSON.parse(readFileSync(path, 'utf8')) as Data, ['agents', 'defaults', 'models', 'metaclaw/qwen3.5-32b']), {});
  });

  test('when `openclaw config set` fails, the file is edited directly (comments kept) and the output says why', async () => {
    const { environment, path } = prepare({ binaries: ['openclaw'] });
    environment.respond = (_command, args) =>
      args[1] === 'set'
        ? { code: 1, stdout: '', stderr: 'Error: Config validation failed: plugins.entries.foo: unknown plugin' }
        : { code: 0, stdout: '{"valid":true}', stderr: '' };
    const result = await wireClaw('openclaw', target, environment);
    assert.match(
      result.messages.join(' '),
      /`openclaw config set` did not work \(Error: Config validation failed: plugins\.entries\.foo: unknown plugin\); edited .* directly instead/,
    );
    const text = readFileSync(path, 'utf8');
    assert.match(text, /\/\/ The sandbox must stay on\./);
    assert.equal(valueAt(parseJson5(text), ['models', 'providers', 'metaclaw', 'apiKey']), 'mc-proxy-key');
    assert.equal(readdirSync(backupsFolder(environment.metaclawHome)).length, 1, 'one backup, not one per attempt');
  });

  test('a CLI that claims success but writes nothing is not trusted: the file is edited directly', async () => {
    const { environment, path } = prepare({ binaries: ['openclaw'] });
    environment.respond = () => ({ code: 0, stdout: '', stderr: '' });
    const result = await wireClaw('openclaw', target, environment);
    assert.match(result.messages.join(' '), /did not work \(the result is not what MetaClaw asked for/);
    assert.equal(valueAt(parseJson5(readFileSync(path, 'utf8')), ['agents', 'defaults', 'model', 'primary']), 'metaclaw/qwen3-32b');
  });

  test('verify runs `openclaw config validate --json` when present; the CLI never restarts anything', async () => {
    const { environment, path } = prepare({ binaries: ['openclaw'] });
    environment.respond = openclawConfigSet(path);
    await wireClaw('openclaw', target, environment);
    assert.ok(
      environment.calls.every((call) => call.args[0] === 'config'),
      'only config commands',
    );
    environment.calls.length = 0;
    const verified = await verifyClaw('openclaw', target, environment);
    assert.deepEqual(environment.calls, [{ command: 'openclaw', args: ['config', 'validate', '--json'] }]);
    assert.equal(verified.wired, true);
    assert.match(verified.messages.join(' '), /accepts the config/);
  });

  test('verify reports what the validator rejects, and only notes a validator that cannot run', async () => {
    const { environment } = prepare({ binaries: ['openclaw'] });
    await wireClaw('openclaw', target, environment);
    environment.respond = () => ({ code: 1, stdout: '{"valid":false,"issues":[{"path":"models.providers.metaclaw","message":"bad"}]}', stderr: '' });
    const rejected = await verifyClaw('openclaw', target, environment);
    assert.equal(rejected.wired, false);
    assert.match(rejected.problems.join(' '), /models\.providers\.metaclaw: bad/);
    environment.respond = () => ({ code: 2, stdout: '', stderr: "error: unknown command 'validate'" });
    const unknown = await verifyClaw('openclaw', target, environment);
    assert.equal(unknown.wired, true);
    assert.match(unknown.messages.join(' '), /could not check/);
    environment.binaries.delete('openclaw');
    const absent = await verifyClaw('openclaw', target, environment);
    assert.equal(absent.wired, true);
    assert.match(absent.messages.join(' '), /not on PATH/);
  });

  test('verify finds a model switched away from MetaClaw', async () => {
    const { environment, path } = prepare();
    await wireClaw('openclaw', target, environment);
    writeFileSync(path, readFileSync(path, 'utf8').replace('primary: "metaclaw/qwen3-32b"', 'primary: "openrouter/x"'));
    const verified = await verifyClaw('openclaw', target, environment);
    assert.equal(verified.wired, false);
    assert.match(verified.problems[0] ?? '', /agents\.defaults\.model\.primary.*"openrouter\/x", expected "metaclaw\/qwen3-32b"/);
  });

  test('verify flags a per-agent models.json whose metaclaw baseUrl overrides ours', async () => {
    const { environment } = prepare();
    await wireClaw('openclaw', target, environment);
    const catalog = join(environment.home, '.openclaw', 'agents', 'main', 'agent', 'models.json');
    mkdirSync(join(catalog, '..'), { recursive: true });
    writeFileSync(catalog, JSON.stringify({ providers: { metaclaw: { baseUrl: 'http://127.0.0.1:31000/v1' } } }));
    const verified = await verifyClaw('openclaw', target, environment);
    assert.equal(verified.wired, false);
    assert.match(verified.problems.join(' '), /models\.json sets the metaclaw provider's baseUrl to http:\/\/127\.0\.0\.1:31000\/v1/);
  });

  test('OPENCLAW_CONFIG_PATH and OPENCLAW_STATE_DIR choose the file', async () => {
    const explicit = fakeEnvironment();
    const explicitPath = installFixture(explicit.home, 'openclaw.json5', 'custom/oc.json5');
    explicit.env.OPENCLAW_CONFIG_PATH = explicitPath;
    assert.equal((await wireClaw('openclaw', target, explicit)).configPath, explicitPath);

    const state = fakeEnvironment();
    const statePath = installFixture(state.home, 'openclaw.json5', 'state/openclaw.json');
    state.env.OPENCLAW_STATE_DIR = '~/state';
    assert.equal((await wireClaw('openclaw', target, state)).configPath, statePath);
  });

  test('the short string form of agents.defaults.model keeps its shape and comes back on unwire', async () => {
    const environment = fakeEnvironment();
    const path = join(environment.home, '.openclaw', 'openclaw.json');
    mkdirSync(join(environment.home, '.openclaw'));
    const original = '{\n  agents: { defaults: { model: "openai/gpt-4o" } },\n}\n';
    writeFileSync(path, original);
    await wireClaw('openclaw', target, environment);
    assert.equal(valueAt(parseJson5(readFileSync(path, 'utf8')), ['agents', 'defaults', 'model']), 'metaclaw/qwen3-32b');
    writeFileSync(path, readFileSync(path, 'utf8').replace('{\n', '{\n  // mine\n'));
    await unwireClaw('openclaw', environment);
    assert.equal(readFileSync(path, 'utf8'), original.replace('{\n', '{\n  // mine\n'));
  });

  test('an existing model allowlist gets the MetaClaw model, removed again on unwire', async () => {
    const environment = fakeEnvironment();
    mkdirSync(join(environment.home, '.openclaw'));
    const path = join(environment.home, '.openclaw', 'openclaw.json');
    const original = '{\n  agents: {\n    defaults: {\n      models: {\n        "openai/gpt-4o": { alias: "4o" },\n      },\n    },\n  },\n}\n';
    writeFileSync(path, original);
    await wireClaw('openclaw', target, environment);
    assert.deepEqual(valueAt(parseJson5(readFileSync(path, 'utf8')), ['agents', 'defaults', 'models']), {
      'openai/gpt-4o': { alias: '4o' },
      'metaclaw/qwen3-32b': {},
    });
    writeFileSync(path, readFileSync(path, 'utf8').replace('alias: "4o"', 'alias: "four"'));
    await unwireClaw('openclaw', environment);
    assert.equal(readFileSync(path, 'utf8'), original.replace('alias: "4o"', 'alias: "four"'));
  });

  test('a fresh state folder gets a new config, removed again on unwire', async () => {
    const environment = fakeEnvironment();
    mkdirSync(join(environment.home, '.openclaw'));
    const result = await wireClaw('openclaw', target, environment);
    const data = parseJson5(readFileSync(result.configPath ?? '', 'utf8'));
    assert.equal(valueAt(data, ['agents', 'defaults', 'model', 'primary']), 'metaclaw/qwen3-32b');
    await unwireClaw('openclaw', environment);
    assert.deepEqual(readdirSync(join(environment.home, '.openclaw')), []);
  });

  test('a symlinked config is edited through the link', async () => {
    const { environment, path } = prepare();
    const real = join(environment.home, 'dotfiles-openclaw.json');
    renameSync(path, real);
    symlinkSync(real, path);
    await wireClaw('openclaw', target, environment);
    assert.ok(lstatSync(path).isSymbolicLink());
    assert.equal(valueAt(parseJson5(readFileSync(real, 'utf8')), ['agents', 'defaults', 'model', 'primary']), 'metaclaw/qwen3-32b');
    await unwireClaw('openclaw', environment);
    assert.ok(lstatSync(path).isSymbolicLink());
    assert.deepEqual(readFileSync(real), fixtureBytes('openclaw.json5'));
  });
});

describe('restarts', () => {
  test('a missing CLI is tolerated with a message', async () => {
    const environment = fakeEnvironment();
    installFixture(environment.home, 'copaw-config.json', '.copaw/config.json');
    const result = await wireClaw('copaw', target, environment);
    assert.equal(result.changed, true);
    assert.equal(result.restarted, false);
    assert.match(result.messages.join(' '), /`copaw` is not on PATH/);
  });

  test('a failing restart is reported, not thrown', async () => {
    const environment = fakeEnvironment({ binaries: ['picoclaw'], respond: () => ({ code: 1, stdout: '', stderr: 'gateway not running' }) });
    installFixture(environment.home, 'picoclaw-config.json', '.picoclaw/config.json');
    const result = await wireClaw('picoclaw', target, environment);
    assert.equal(result.changed, true);
    assert.equal(result.restarted, false);
    assert.match(result.messages.join(' '), /gateway not running/);
  });

  test('nanoclaw on macOS is found through its launchd plist and kickstarted', async () => {
    const environment = fakeEnvironment({ binaries: ['launchctl'], platform: 'darwin', uid: 502 });
    installFixture(environment.home, 'com.nanoclaw.plist', 'Library/LaunchAgents/com.nanoclaw.plist');
    const path = installFixture(environment.home, 'nanoclaw.env', 'Dev/nano & claw/.env');
    const result = await wireClaw('nanoclaw', target, environment);
    assert.equal(result.configPath, path);
    assert.deepEqual(environment.calls, [{ command: 'launchctl', args: ['kickstart', '-k', 'gui/502/com.nanoclaw'] }]);
  });

  test('nanoclaw in ~/code/nanoclaw without a service is wired and not restarted', async () => {
    const environment = fakeEnvironment({ binaries: ['systemctl'] });
    const path = installFixture(environment.home, 'nanoclaw.env', 'code/nanoclaw/.env');
    const result = await wireClaw('nanoclaw', target, environment);
    assert.equal(result.configPath, path);
    assert.equal(result.restarted, false);
    assert.deepEqual(environment.calls, []);
    assert.match(result.messages.join(' '), /no systemd user service/);
  });
});

describe('hermes specifics', () => {
  test('HERMES_HOME, a default context length, and the string form of `model`', async () => {
    const environment = fakeEnvironment();
    const folder = join(environment.home, 'hermes-home');
    mkdirSync(folder);
    const original = '# mine\nmodel: anthropic/claude-opus-4\n';
    writeFileSync(join(folder, 'config.yaml'), original);
    environment.env.HERMES_HOME = folder;
    await wireClaw('hermes', { ...target, contextWindow: 0 }, environment);
    const text = readFileSync(join(folder, 'config.yaml'), 'utf8');
    const data = parseYaml(text) as Data;
    assert.deepEqual(data.model, { default: 'qwen3-32b', provider: 'custom:metaclaw' });
    assert.deepEqual(valueAt(data, ['custom_providers']), [
      { name: 'metaclaw', base_url: 'http://127.0.0.1:30000/v1', api_key: 'mc-proxy-key', models: { 'qwen3-32b': { context_length: 128000 } } },
    ]);
    assert.ok(text.startsWith('# mine\n'));
    writeFileSync(join(folder, 'config.yaml'), `${text}extra: true\n`);
    await unwireClaw('hermes', environment);
    assert.equal(readFileSync(join(folder, 'config.yaml'), 'utf8'), `${original}extra: true\n`);
  });
});

describe('unwireAll', () => {
  test('restores every agent in the ledger', async () => {
    const environment = fakeEnvironment({ binaries: ['copaw', 'zeroclaw'] });
    const copaw = installFixture(environment.home, 'copaw-config.json', '.copaw/config.json');
    const zeroclaw = installFixture(environment.home, 'zeroclaw-config.toml', '.zeroclaw/config.toml');
    await wireClaw('copaw', target, environment);
    await wireClaw('zeroclaw', target, environment);
    assert.deepEqual(
      readLedger(environment.metaclawHome).entries.map((entry) => entry.claw),
      ['copaw', 'zeroclaw'],
    );
    const results = await unwireAll(environment);
    assert.deepEqual(
      results.map((item) => [item.type, item.result?.exact]),
      [
        ['zeroclaw', true],
        ['copaw', true],
      ],
    );
    assert.ok(readFileSync(copaw).equals(fixtureBytes('copaw-config.json')));
    assert.ok(readFileSync(zeroclaw).equals(fixtureBytes('zeroclaw-config.toml')));
    assert.deepEqual(readLedger(environment.metaclawHome).entries, []);
    assert.deepEqual(backupFiles(environment), []);
  });

  test('one agent that cannot be unwired does not stop the others and keeps its entry', async () => {
    const environment = fakeEnvironment();
    const copaw = installFixture(environment.home, 'copaw-config.json', '.copaw/config.json');
    const hermes = installFixture(environment.home, 'hermes-config.yaml', '.hermes/config.yaml');
    await wireClaw('copaw', target, environment);
    await wireClaw('hermes', target, environment);
    writeFileSync(hermes, 'model: [broken\n');
    const results = await unwireAll(environment);
    const failed = results.find((item) => item.type === 'hermes');
    assert.equal(failed?.error?.status, 'config_malformed');
    assert.ok(readFileSync(copaw).equals(fixtureBytes('copaw-config.json')));
    assert.deepEqual(
      readLedger(environment.metaclawHome).entries.map((entry) => entry.claw),
      ['hermes'],
    );
  });
});
