import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { JsonParser } from '@croct/json5-parser';
import OpenAI from 'openai';
import { parse as parseToml } from 'smol-toml';
import { parse as parseYaml } from 'yaml';
import { ClawError, detectClaws, unwireClaw, verifyClaw, wireClaw } from '../src/claws/index.js';
import type { WiringTarget } from '../src/claws/index.js';
import { FIXTURES, fakeEnvironment, fixtureBytes, installFixture, removeHomes } from './fixtures/claws/harness.js';
import type { FakeEnvironment } from './fixtures/claws/harness.js';
import { runCli, startProxy, tempHome } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

after(removeHomes);

const target: WiringTarget = { proxyUrl: 'http://127.0.0.1:30000', apiKey: 'mc-proxy-key', model: 'qwen3-32b', apiFormat: 'openai', contextWindow: 0 };

type Data = Record<string, any>;

function readJson5(path: string): Data {
  return JsonParser.parse(readFileSync(path, 'utf8')).toJSON() as Data;
}

/** A fresh home holding `text` at `relativePath`. */
function homeWith(relativePath: string, text: string): { environment: FakeEnvironment; path: string } {
  const environment = fakeEnvironment();
  const path = join(environment.home, relativePath);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  return { environment, path };
}

describe('claude-code specifics', () => {
  test("header lines the user keeps in settings.json stay; MetaClaw's key line is added, replaced on a new key, and removed on unwire", async () => {
    const original = '{\n  "env": {\n    "ANTHROPIC_CUSTOM_HEADERS": "X-Team: data\\nx-metaclaw-api-key: stale"\n  }\n}\n';
    const { environment, path } = homeWith('.claude/settings.json', original);
    await wireClaw('claude-code', target, environment);
    assert.equal(readJson5(path).env.ANTHROPIC_CUSTOM_HEADERS, 'X-Team: data\nx-metaclaw-api-key: mc-proxy-key');
    await wireClaw('claude-code', { ...target, apiKey: 'rotated' }, environment);
    assert.equal(readJson5(path).env.ANTHROPIC_CUSTOM_HEADERS, 'X-Team: data\nx-metaclaw-api-key: rotated');
    writeFileSync(path, readFileSync(path, 'utf8').replace('{\n', '{\n  "model": "sonnet",\n'));
    const undone = await unwireClaw('claude-code', environment);
    assert.equal(undone.exact, false);
    assert.equal(readFileSync(path, 'utf8'), original.replace('{\n', '{\n  "model": "sonnet",\n'));
  });

  test('CLAUDE_CONFIG_DIR chooses the folder; a settings.json MetaClaw creates there goes again on unwire; no folder at all is config_missing', async () => {
    const environment = fakeEnvironment();
    const folder = join(environment.home, 'claude-config');
    environment.env.CLAUDE_CONFIG_DIR = folder;
    await assert.rejects(wireClaw('claude-code', target, environment), (error: unknown) => error instanceof ClawError && error.status === 'config_missing');
    mkdirSync(folder);
    const result = await wireClaw('claude-code', target, environment);
    assert.equal(result.configPath, join(folder, 'settings.json'));
    assert.deepEqual(readJson5(join(folder, 'settings.json')), {
      env: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:30000', ANTHROPIC_CUSTOM_HEADERS: 'x-metaclaw-api-key: mc-proxy-key' },
    });
    await unwireClaw('claude-code', environment);
    assert.deepEqual(readdirSync(folder), []);
  });

  test('verify never prints the key, and notes headers the shell sets that settings.json replaces', async () => {
    const environment = fakeEnvironment();
    const path = installFixture(environment.home, 'claude-settings.json', '.claude/settings.json');
    await wireClaw('claude-code', target, environment);
    environment.env.ANTHROPIC_CUSTOM_HEADERS = 'X-Gateway: on';
    const noted = await verifyClaw('claude-code', target, environment);
    assert.equal(noted.wired, true);
    assert.match(noted.messages.join(' '), /Your environment sets ANTHROPIC_CUSTOM_HEADERS; while wired, the value in settings.json replaces it/);
    const changed = await verifyClaw('claude-code', { ...target, apiKey: 'new-key' }, environment);
    assert.equal(changed.wired, false);
    assert.match(changed.problems.join(' '), /`env\.ANTHROPIC_CUSTOM_HEADERS` in .*settings\.json is not what MetaClaw set/);
    assert.doesNotMatch(changed.problems.join(' '), /mc-proxy-key|new-key/);
    assert.ok(readFileSync(path, 'utf8').includes('mc-proxy-key'));
  });
});

describe('codex specifics', () => {
  test('CODEX_HOME chooses the folder; a config.toml MetaClaw creates holds only its provider and goes again on unwire', async () => {
    const environment = fakeEnvironment();
    const folder = join(environment.home, 'codex-home');
    mkdirSync(folder);
    environment.env.CODEX_HOME = folder;
    const result = await wireClaw('codex', target, environment);
    assert.equal(result.configPath, join(folder, 'config.toml'));
    assert.equal(
      readFileSync(join(folder, 'config.toml'), 'utf8'),
      'model_provider = "metaclaw"\n\n[model_providers.metaclaw]\nname = "MetaClaw"\nbase_url = "http://127.0.0.1:30000/v1"\nwire_api = "responses"\nexperimental_bearer_token = "mc-proxy-key"\n',
    );
    await unwireClaw('codex', environment);
    assert.deepEqual(readdirSync(folder), []);
  });

  test('a metaclaw provider table already in the file is replaced where it is, and its own text comes back on unwire', async () => {
    const original =
      'model = "o3"\n\n[model_providers.metaclaw]\nname = "old" # mine\nbase_url = "http://127.0.0.1:29999/v1"\n\n# tools\n[mcp_servers.docs]\ncommand = "docs"\n';
    const { environment, path } = homeWith('.codex/config.toml', original);
    await wireClaw('codex', target, environment);
    const wired = readFileSync(path, 'utf8');
    assert.ok(wired.indexOf('[model_providers.metaclaw]') < wired.indexOf('# tools'), 'replaced in place');
    assert.equal(parseToml(wired).model_provider, 'metaclaw');
    writeFileSync(path, `${wired}\n[profiles.fast]\nmodel = "o4-mini"\n`);
    const undone = await unwireClaw('codex', environment);
    assert.equal(undone.exact, false);
    assert.equal(readFileSync(path, 'utf8'), `${original}\n[profiles.fast]\nmodel = "o4-mini"\n`);
  });

  test('a metaclaw provider written inline is a config_conflict and nothing changes', async () => {
    const original = 'model_providers = { metaclaw = { name = "mine", base_url = "http://x/v1" } }\n';
    const { environment, path } = homeWith('.codex/config.toml', original);
    await assert.rejects(wireClaw('codex', target, environment), (error: unknown) => {
      assert.ok(error instanceof ClawError);
      assert.equal(error.status, 'config_conflict');
      assert.match(error.message, /`model_providers\.metaclaw` is not written as a \[table\] of its own; MetaClaw changed nothing/);
      return true;
    });
    assert.equal(readFileSync(path, 'utf8'), original);
    assert.equal(existsSync(environment.metaclawHome), false);
  });
});

describe('qwen-code specifics', () => {
  test("QWEN_HOME chooses the folder; MetaClaw's entry goes before the user's entry for the same model, which Qwen Code would otherwise pick", async () => {
    const environment = fakeEnvironment();
    const folder = join(environment.home, 'qwen-home');
    mkdirSync(folder);
    environment.env.QWEN_HOME = '~/qwen-home';
    const path = join(folder, 'settings.json');
    const original = readFileSync(join(FIXTURES, 'qwen-settings.json'), 'utf8');
    writeFileSync(path, original);
    const sameModel = { ...target, model: 'qwen3-coder-plus' };
    await wireClaw('qwen-code', sameModel, environment);
    const entries = readJson5(path).modelProviders.openai as Data[];
    assert.deepEqual(Object.keys(entries[0] ?? {}), ['id', 'name', 'baseUrl', 'envKey'], 'the entry keeps its own key order');
    assert.deepEqual(
      entries.map((entry) => [entry.id, entry.baseUrl]),
      [
        ['qwen3-coder-plus', 'http://127.0.0.1:30000/v1'],
        ['qwen3-coder-plus', 'https://dashscope.aliyuncs.com/compatible-mode/v1'],
      ],
    );
    assert.equal((await verifyClaw('qwen-code', sameModel, environment)).wired, true);
    await unwireClaw('qwen-code', environment);
    assert.equal(readFileSync(path, 'utf8'), original);
  });

  test('verify flags an entry of the same model without a baseUrl, which Qwen Code looks up before any other', async () => {
    const environment = fakeEnvironment();
    const path = installFixture(environment.home, 'qwen-settings.json', '.qwen/settings.json');
    await wireClaw('qwen-code', target, environment);
    const shadowed = readFileSync(path, 'utf8')
      .replace('"id": "qwen3-coder-plus"', '"id": "qwen3-32b"')
      .replace(/,\s*"baseUrl": "https:\/\/dashscope[^"]*"/, '');
    writeFileSync(path, shadowed);
    const verified = await verifyClaw('qwen-code', target, environment);
    assert.equal(verified.wired, false);
    assert.match(verified.problems.join(' '), /modelProviders\.openai has another entry for qwen3-32b that Qwen Code picks before MetaClaw's/);
  });
});

describe('opencode specifics', () => {
  test('opencode.json is used when there is no opencode.jsonc; XDG_CONFIG_HOME and OPENCODE_CONFIG choose the file', async () => {
    const { environment: plain, path: json } = homeWith('.config/opencode/opencode.json', '{ "model": "openai/gpt-5" }\n');
    assert.equal((await wireClaw('opencode', target, plain)).configPath, json);
    assert.equal(readJson5(json).model, 'metaclaw/qwen3-32b');
    await unwireClaw('opencode', plain);
    assert.equal(readFileSync(json, 'utf8'), '{ "model": "openai/gpt-5" }\n');

    const xdg = fakeEnvironment();
    mkdirSync(join(xdg.home, 'xdg', 'opencode'), { recursive: true });
    xdg.env.XDG_CONFIG_HOME = join(xdg.home, 'xdg');
    assert.equal((await wireClaw('opencode', target, xdg)).configPath, join(xdg.home, 'xdg', 'opencode', 'opencode.json'));

    const custom = fakeEnvironment();
    const customPath = installFixture(custom.home, 'opencode.jsonc', 'dotfiles/opencode.jsonc');
    custom.env.OPENCODE_CONFIG = customPath;
    assert.equal((await wireClaw('opencode', target, custom)).configPath, customPath);
  });

  test('an enabled_providers allowlist gets metaclaw, removed again on unwire', async () => {
    const original = '{\n  "enabled_providers": ["anthropic"],\n  "model": "anthropic/claude-sonnet-4-5"\n}\n';
    const { environment, path } = homeWith('.config/opencode/opencode.json', original);
    await wireClaw('opencode', target, environment);
    assert.deepEqual(readJson5(path).enabled_providers, ['anthropic', 'metaclaw']);
    assert.equal((await wireClaw('opencode', target, environment)).changed, false);
    await unwireClaw('opencode', environment);
    assert.equal(readFileSync(path, 'utf8'), original);
  });
});

describe('detecting the coding agents', () => {
  test('each is found by its CLI on PATH or by its config folder', async () => {
    const environment = fakeEnvironment({ binaries: ['claude', 'opencode'] });
    mkdirSync(join(environment.home, '.codex'));
    const found = (await detectClaws(environment)).filter((detection) => detection.installed);
    assert.deepEqual(
      found.map((detection) => [detection.type, detection.binaryPath, detection.configExists]),
      [
        ['claude-code', '/usr/local/bin/claude', false],
        ['codex', undefined, false],
        ['opencode', '/usr/local/bin/opencode', false],
      ],
    );
  });
});

/** Claude Code's "Name: Value" lines as headers. */
function headerLines(text: string): Record<string, string> {
  return Object.fromEntries(text.split('\n').map((line) => [line.slice(0, line.indexOf(':')).trim(), line.slice(line.indexOf(':') + 1).trim()]));
}

describe('through the real CLI, against a proxy that requires its key', () => {
  test("claw wire points each coding agent at the proxy; requests made as each config says are accepted, Claude Code's own login still reaches the upstream, and claw unwire restores every file byte for byte", async () => {
    const upstream = await ScriptedUpstream.start();
    const proxyKey = 'mc-proxy-key-5d1e';
    const proxy = await startProxy({
      config: { proxy: { api_key: proxyKey }, llm: { api_base: upstream.url, api_format: 'anthropic', model_id: 'up-model' } },
    });
    try {
      const files = {
        'claude-code': installFixture(proxy.home, 'claude-settings.json', '.claude/settings.json'),
        codex: installFixture(proxy.home, 'codex-config.toml', '.codex/config.toml'),
        'qwen-code': installFixture(proxy.home, 'qwen-settings.json', '.qwen/settings.json'),
        opencode: installFixture(proxy.home, 'opencode.jsonc', '.config/opencode/opencode.jsonc'),
      };
      for (const type of Object.keys(files)) {
        const wired = await proxy.cli(['claw', 'wire', type]);
        assert.equal(wired.code, 0, wired.stderr);
        assert.match(wired.stdout, /Wired .* to the proxy/);
        const verified = await proxy.cli(['claw', 'verify', type]);
        assert.equal(verified.code, 0, verified.stdout);
      }
      const listed = await proxy.cli(['claw', 'list']);
      for (const type of Object.keys(files)) assert.match(listed.stdout, new RegExp(`^${type}\\s+found, wired`, 'm'));

      // Claude Code: its own login (a subscription token) plus MetaClaw's header.
      const claude = (JSON.parse(readFileSync(files['claude-code'], 'utf8')) as Data).env as Record<string, string>;
      const login = 'sk-ant-oat01-users-own-login';
      const asClaude = (headers: Record<string, string>) =>
        new Anthropic({ baseURL: claude.ANTHROPIC_BASE_URL, apiKey: null, authToken: login, defaultHeaders: headers, maxRetries: 0 });
      upstream.reset();
      const reply = await asClaude(headerLines(claude.ANTHROPIC_CUSTOM_HEADERS ?? '')).messages.create({
        model: 'claude-sonnet-4-5',
        max_tokens: 20,
        messages: [{ role: 'user', content: 'say hello' }],
      });
      assert.equal(reply.content[0]?.type, 'text');
      const forwarded = upstream.modelRequests()[0];
      assert.equal(forwarded?.headers['authorization'], `Bearer ${login}`, "the user's own login is passed upstream");
      assert.equal(JSON.stringify(forwarded?.headers).includes(proxyKey), false, 'the proxy key never travels upstream');
      await assert.rejects(
        asClaude({}).messages.create({ model: 'c', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
        Anthropic.AuthenticationError,
      );

      // Codex, Qwen Code and opencode: the base URL and key each config holds.
      const codex = (parseToml(readFileSync(files.codex, 'utf8')).model_providers as Data).metaclaw as Data;
      const qwen = JSON.parse(readFileSync(files['qwen-code'], 'utf8')) as Data;
      const qwenEntry = (qwen.modelProviders.openai as Data[])[0] as Data;
      const opencode = readJson5(files.opencode);
      const clients: Array<[string, string, string]> = [
        [codex.base_url, codex.experimental_bearer_token, 'gpt-5-codex'],
        [qwenEntry.baseUrl, qwen.env[qwenEntry.envKey], qwen.model.name],
        [opencode.provider.metaclaw.options.baseURL, opencode.provider.metaclaw.options.apiKey, String(opencode.model).replace(/^metaclaw\//, '')],
      ];
      for (const [baseURL, apiKey, model] of clients) {
        const answer = await new OpenAI({ baseURL, apiKey, maxRetries: 0 }).chat.completions.create({
          model,
          messages: [{ role: 'user', content: 'say hello' }],
        });
        assert.equal(answer.choices[0]?.message.role, 'assistant', `${baseURL} accepts ${model}`);
      }

      const unwired = await proxy.cli(['claw', 'unwire']);
      assert.equal(unwired.code, 0, unwired.stderr);
      for (const [type, path] of Object.entries(files)) {
        const fixture = { 'claude-code': 'claude-settings.json', codex: 'codex-config.toml', 'qwen-code': 'qwen-settings.json', opencode: 'opencode.jsonc' }[
          type
        ]!;
        assert.deepEqual(readFileSync(path), fixtureBytes(fixture), `${type} is byte-identical`);
      }
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test('setup --claw accepts each coding agent and remembers it as claw_type', async () => {
    const home = tempHome('metaclaw-setup-claw-');
    try {
      for (const claw of ['claude-code', 'codex', 'qwen-code', 'opencode']) {
        const result = await runCli(
          [
            'setup',
            '--yes',
            '--provider',
            'custom',
            '--api-base',
            'http://127.0.0.1:9/v1',
            '--model',
            'm',
            '--claw',
            claw,
            '--no-verify',
            '--no-starter-skills',
          ],
          { home },
        );
        assert.equal(result.code, 0, result.stderr);
        assert.equal((parseYaml(readFileSync(join(home, 'config.yaml'), 'utf8')) as Data).claw_type, claw);
      }
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
