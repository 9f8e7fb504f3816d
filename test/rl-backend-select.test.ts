import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError } from '../src/errors.js';
import {
  DEFAULT_MINT_BASE_URL,
  DEFAULT_TINKER_BASE_URL,
  resolveApiKey,
  resolveBaseUrl,
  selectBackend,
  type BackendSelectionInput,
} from '../src/rl/tinker/index.js';

/** Ports of MetaClaw's tests/test_sdk_backend.py (b1c800d), minus the Python-package checks. */
function input(overrides: Partial<BackendSelectionInput> = {}): BackendSelectionInput {
  return { backend: 'auto', apiKey: '', baseUrl: '', env: {}, ...overrides };
}

describe('rl.backend selection (MetaClaw b1c800d rules)', () => {
  test('explicit mint keeps the configured key and URL', () => {
    assert.deepEqual(selectBackend(input({ backend: 'mint', apiKey: 'sk-mint-123', baseUrl: 'https://mint.macaron.xin/' })), {
      kind: 'mint',
      apiKey: 'sk-mint-123',
      baseUrl: 'https://mint.macaron.xin/',
    });
  });

  test('explicit tinker stays tinker even with a non-tml key', () => {
    const selection = selectBackend(input({ backend: 'tinker', apiKey: 'sk-tinker-123', baseUrl: 'https://api.tinker.example/v1' }));
    assert.equal(selection.kind, 'tinker');
    assert.equal(selection.apiKey, 'sk-tinker-123');
  });

  test('auto picks mint from an sk-mint- key, a host containing "mint", or a MINT_* variable', () => {
    assert.equal(selectBackend(input({ apiKey: 'sk-mint-123' })).kind, 'mint');
    assert.equal(selectBackend(input({ apiKey: 'k', baseUrl: 'https://mint.macaron.xin/' })).kind, 'mint');
    assert.equal(selectBackend(input({ env: { MINT_API_KEY: 'sk-from-env' } })).kind, 'mint');
    assert.equal(selectBackend(input({ env: { TINKER_API_KEY: 'sk-mint-env' } })).kind, 'mint', 'a MinT key in TINKER_API_KEY counts too');
    assert.equal(selectBackend(input({ apiKey: 'k', env: { TINKER_BASE_URL: 'https://mint.example.org' } })).kind, 'mint');
  });

  test('auto picks tinker without a MinT signal, with Tinker’s default URL; "mint" in a URL path is no signal', () => {
    assert.deepEqual(selectBackend(input({ apiKey: 'tml-abc' })), { kind: 'tinker', apiKey: 'tml-abc', baseUrl: DEFAULT_TINKER_BASE_URL });
    assert.equal(selectBackend(input({ apiKey: 'tml-abc', baseUrl: 'https://example.org/mint/' })).kind, 'tinker');
  });

  test('mint without a URL uses MinT’s default URL', () => {
    assert.equal(selectBackend(input({ apiKey: 'sk-mint-1' })).baseUrl, DEFAULT_MINT_BASE_URL);
  });

  test('the configured (neutral) key and URL win over the environment', () => {
    const configured = input({
      apiKey: 'neutral-key',
      baseUrl: 'https://neutral.example/v1',
      env: { MINT_API_KEY: 'env-key', MINT_BASE_URL: 'https://env.example' },
    });
    assert.equal(resolveApiKey(configured, 'mint'), 'neutral-key');
    assert.equal(resolveBaseUrl(configured, 'mint'), 'https://neutral.example/v1');
  });

  test('environment order: MINT_* then TINKER_* for mint, the reverse for tinker', () => {
    const env = { MINT_API_KEY: 'mint-key', TINKER_API_KEY: 'tinker-key', MINT_BASE_URL: 'https://m.example', TINKER_BASE_URL: 'https://t.example' };
    assert.equal(resolveApiKey(input({ env }), 'mint'), 'mint-key');
    assert.equal(resolveApiKey(input({ env }), 'tinker'), 'tinker-key');
    assert.equal(resolveBaseUrl(input({ env }), 'mint'), 'https://m.example');
    assert.equal(resolveBaseUrl(input({ env }), 'tinker'), 'https://t.example');
    assert.equal(resolveApiKey(input({ env: { MINT_API_KEY: 'only-mint' } }), 'tinker'), 'only-mint', 'falls back to the other service’s variable');
  });

  test('no key anywhere is a ConfigError naming rl.api_key and the variables', () => {
    assert.throws(
      () => selectBackend(input()),
      (error: unknown) => error instanceof ConfigError && error.code === 'rl_no_api_key' && /rl\.api_key or TINKER_API_KEY or MINT_API_KEY/.test(error.message),
    );
  });

  test('weaver and file are refused with the reason (a different API; export only)', () => {
    assert.throws(() => selectBackend(input({ backend: 'weaver', apiKey: 'k' })), /Weaver speaks its own API/);
    assert.throws(() => selectBackend(input({ backend: 'file', apiKey: 'k' })), /metaclaw rl export/);
    assert.throws(() => selectBackend(input({ apiKey: 'k', baseUrl: 'https://weaver-console.nex-agi.cn' })), /looks like a Weaver service/);
  });
});
