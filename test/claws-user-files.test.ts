/**
 * Wiring and unwiring config files in the shapes users really have: a UTF-8 BOM, a dotfiles symlink
 * whose target is not there yet, a key the user changed while wired, an inline TOML table, a file
 * that cannot be written.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, linkSync, lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ClawError, findLedgerEntry, unwireClaw, wireClaw } from '../src/claws/index.js';
import type { ClawType, UnwireResult, WiringTarget } from '../src/claws/index.js';
import { fakeEnvironment, removeHomes } from './fixtures/claws/harness.js';
import type { FakeEnvironment } from './fixtures/claws/harness.js';

after(removeHomes);

const target: WiringTarget = { proxyUrl: 'http://127.0.0.1:30000', apiKey: 'mc-proxy-key', model: 'qwen3-32b', apiFormat: 'openai', contextWindow: 65536 };
const BOM = '\uFEFF';
const asRoot = process.getuid?.() === 0 ? 'root may write any file' : false;

function writeHomeFile(environment: FakeEnvironment, relativePath: string, text: string | Buffer): string {
  const path = join(environment.home, relativePath);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  return path;
}

/** Wiring `claw` is refused with `status` and a message matching `pattern`; the file keeps its bytes and nothing is recorded. */
async function assertRefused(environment: FakeEnvironment, claw: ClawType, path: string, status: string, pattern: RegExp): Promise<void> {
  const original = readFileSync(path);
  await assert.rejects(
    wireClaw(claw, target, environment),
    (error: unknown) => error instanceof ClawError && error.status === status && pattern.test(error.message),
  );
  assert.ok(readFileSync(path).equals(original));
  assert.equal(findLedgerEntry(environment.metaclawHome, claw), undefined);
}

/** Wires `claw`, replaces `from` with `to` in the wired file as a user would, unwires; the file's text and the unwire result. */
async function unwireAfterUserEdit(
  environment: FakeEnvironment,
  claw: ClawType,
  path: string,
  from: string,
  to: string,
): Promise<{ text: string; result: UnwireResult }> {
  await wireClaw(claw, target, environment);
  writeFileSync(path, readFileSync(path, 'utf8').replace(from, to));
  const result = await unwireClaw(claw, environment);
  return { text: readFileSync(path, 'utf8'), result };
}

describe('a UTF-8 BOM at the start of the file', () => {
  test('.env: the first key is recognised (set in place, not added twice); unwire restores the bytes', async () => {
    const environment = fakeEnvironment();
    const original = `${BOM}LLM_BACKEND=openai\nFOO=1\n`;
    const path = writeHomeFile(environment, '.ironclaw/.env', original);
    await wireClaw('ironclaw', target, environment);
    const wired = readFileSync(path, 'utf8');
    assert.ok(wired.startsWith(`${BOM}LLM_BACKEND=openai_compatible\n`), wired);
    assert.equal(wired.match(/LLM_BACKEND=/g)?.length, 1);
    await unwireClaw('ironclaw', environment);
    assert.equal(readFileSync(path, 'utf8'), original);
  });

  test('TOML: a first key MetaClaw sets is edited in place instead of failing as a broken edit', async () => {
    const environment = fakeEnvironment();
    const original = `${BOM}model_provider = "openai"\nmodel = "o3"\n`;
    const path = writeHomeFile(environment, '.codex/config.toml', original);
    await wireClaw('codex', target, environment);
    assert.ok(readFileSync(path, 'utf8').startsWith(`${BOM}model_provider = "metaclaw"\nmodel = "o3"\n`));
    await unwireClaw('codex', environment);
    assert.equal(readFileSync(path, 'utf8'), original);
  });

  test('YAML: the BOM stays while wired and after a revert that keeps user edits', async () => {
    const environment = fakeEnvironment();
    const path = writeHomeFile(environment, '.hermes/config.yaml', `${BOM}model: foo\nother: 1\n`);
    const { text } = await unwireAfterUserEdit(environment, 'hermes', path, 'other: 1', 'other: 2');
    assert.equal(text, `${BOM}model: foo\nother: 2\n`);
  });
});

describe('a file that is not UTF-8', () => {
  test('a Latin-1 byte in a comment is a config_malformed ClawError, and the file keeps its bytes', async () => {
    const environment = fakeEnvironment();
    const path = writeHomeFile(environment, '.ironclaw/.env', Buffer.from('# caf\xe9\nFOO=1\n', 'latin1'));
    await assertRefused(environment, 'ironclaw', path, 'config_malformed', /is not UTF-8 text/);
  });
});

describe('a config that is a link (dotfiles)', () => {
  test('a symlink whose target does not exist yet: the file is created at the target and removed again, the link stays', async () => {
    const environment = fakeEnvironment();
    mkdirSync(join(environment.home, 'dotfiles'));
    mkdirSync(join(environment.home, '.claude'));
    const link = join(environment.home, '.claude', 'settings.json');
    symlinkSync('../dotfiles/claude-settings.json', link);
    await wireClaw('claude-code', target, environment);
    assert.ok(lstatSync(link).isSymbolicLink());
    assert.match(readFileSync(join(environment.home, 'dotfiles', 'claude-settings.json'), 'utf8'), /ANTHROPIC_BASE_URL/);
    const result = await unwireClaw('claude-code', environment);
    assert.ok(result.exact);
    assert.ok(lstatSync(link).isSymbolicLink());
    assert.equal(existsSync(join(environment.home, 'dotfiles', 'claude-settings.json')), false);
  });

  test('a hard-linked config stays one file with its link while wired and after unwire', async () => {
    const environment = fakeEnvironment();
    const original = 'model = "o3"\n';
    const kept = writeHomeFile(environment, 'dotfiles/config.toml', original);
    mkdirSync(join(environment.home, '.codex'));
    const path = join(environment.home, '.codex', 'config.toml');
    linkSync(kept, path);
    await wireClaw('codex', target, environment);
    assert.match(readFileSync(kept, 'utf8'), /model_provider = "metaclaw"/);
    await unwireClaw('codex', environment);
    assert.equal(readFileSync(kept, 'utf8'), original);
    assert.equal(statSync(path).ino, statSync(kept).ino);
  });

  test('a symlink whose target folder does not exist: config_missing, and no folder is made for it', async () => {
    const environment = fakeEnvironment();
    mkdirSync(join(environment.home, '.claude'));
    symlinkSync('../dotfiles/claude-settings.json', join(environment.home, '.claude', 'settings.json'));
    await assert.rejects(wireClaw('claude-code', target, environment), (error: unknown) => error instanceof ClawError && error.status === 'config_missing');
    assert.equal(existsSync(join(environment.home, 'dotfiles')), false);
  });
});

describe('a key MetaClaw set that the user changed while wired', () => {
  test('keeps the user’s value on unwire and names it; the keys still holding MetaClaw’s values are reverted', async () => {
    const environment = fakeEnvironment();
    const path = writeHomeFile(environment, '.codex/config.toml', 'model = "o3"\n');
    const { text, result } = await unwireAfterUserEdit(environment, 'codex', path, 'model_provider = "metaclaw"', 'model_provider = "azure"');
    assert.equal(text, 'model = "o3"\nmodel_provider = "azure"\n');
    assert.equal(result.exact, false);
    assert.match(result.messages.join(' '), /`model_provider`.*as you changed it/);
  });

  test('Claude Code header lines the user added while wired do not keep MetaClaw’s key in the file', async () => {
    const environment = fakeEnvironment();
    const path = writeHomeFile(environment, '.claude/settings.json', '{\n  "model": "opus"\n}\n');
    const { text } = await unwireAfterUserEdit(
      environment,
      'claude-code',
      path,
      'x-metaclaw-api-key: mc-proxy-key',
      'x-metaclaw-api-key: mc-proxy-key\\nX-Team: data',
    );
    assert.doesNotMatch(text, /mc-proxy-key/);
  });
});

describe('shapes MetaClaw does not edit through are refused, and nothing changes', () => {
  test('codex model_providers written as an inline table is a config_conflict naming it, and nothing changes', async () => {
    const environment = fakeEnvironment();
    const path = writeHomeFile(environment, '.codex/config.toml', 'model = "o3"\nmodel_providers = { azure = { name = "Azure", base_url = "https://x" } }\n');
    await assertRefused(environment, 'codex', path, 'config_conflict', /`model_providers` is written inline/);
  });

  test('hermes `model` that is an alias of an anchored mapping is a config_conflict that says so, and nothing changes', async () => {
    const environment = fakeEnvironment();
    const path = writeHomeFile(environment, '.hermes/config.yaml', 'base: &m\n  default: foo\n  provider: openrouter\nmodel: *m\n');
    await assertRefused(environment, 'hermes', path, 'config_conflict', /`model` is an alias/);
  });
});

describe('a YAML value put back after the user edited the file', () => {
  test('keeps the comment it had on its line', async () => {
    const environment = fakeEnvironment();
    const path = writeHomeFile(environment, '.hermes/config.yaml', '# hermes\nmodel: foo  # my model\nother: 1\n');
    const { text } = await unwireAfterUserEdit(environment, 'hermes', path, 'other: 1', 'other: 2');
    assert.equal(text, '# hermes\nmodel: foo  # my model\nother: 2\n');
  });
});

describe('files MetaClaw may not write', () => {
  test('a read-only config (no write bit, also for root) is refused with a ClawError and left as it is', async () => {
    const environment = fakeEnvironment();
    const path = writeHomeFile(environment, '.codex/config.toml', 'model = "o3"\n');
    chmodSync(path, 0o444);
    await assertRefused(environment, 'codex', path, 'write_failed', /is read-only/);
  });

  test('unwire that cannot write the file is a ClawError naming the file; the ledger entry is kept for a retry', { skip: asRoot }, async () => {
    const environment = fakeEnvironment();
    const path = writeHomeFile(environment, '.codex/config.toml', 'model = "o3"\n');
    await wireClaw('codex', target, environment);
    chmodSync(dirname(path), 0o555);
    try {
      await assert.rejects(
        unwireClaw('codex', environment),
        (error: unknown) =>
          error instanceof ClawError && error.status === 'write_failed' && error.message.includes(`Could not write ${path} (permission denied)`),
      );
      assert.notEqual(findLedgerEntry(environment.metaclawHome, 'codex'), undefined);
    } finally {
      chmodSync(dirname(path), 0o755);
    }
    await unwireClaw('codex', environment);
    assert.equal(readFileSync(path, 'utf8'), 'model = "o3"\n');
  });
});
