import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { backupsFolder, ClawError, findLedgerEntry, readLedger, unwireClaw, verifyClaw, wireClaw } from '../src/claws/index.js';
import type { WiringTarget } from '../src/claws/index.js';
import { FakeOpenShell, fakeEnvironment, fixtureBytes, installFixture, removeHomes } from './fixtures/claws/harness.js';
import type { FakeEnvironment } from './fixtures/claws/harness.js';

after(removeHomes);

const target: WiringTarget = { proxyUrl: 'http://127.0.0.1:30000', apiKey: 'mc-proxy-key', model: 'qwen3-32b', apiFormat: 'openai', contextWindow: 0 };

function setup(options: { config?: boolean } = {}): { environment: FakeEnvironment; shell: FakeOpenShell; path: string } {
  const shell = new FakeOpenShell();
  const environment = fakeEnvironment({ binaries: ['openshell'], respond: shell.respond });
  const path = join(environment.home, '.nemoclaw', 'config.json');
  if (options.config !== false) installFixture(environment.home, 'nemoclaw-config.json', '.nemoclaw/config.json');
  return { environment, shell, path };
}

function commandLines(environment: FakeEnvironment): string[] {
  return environment.calls.map((call) => [call.command, ...call.args].join(' '));
}

describe('nemoclaw adapter', () => {
  test('apply records the previous inference route, registers the provider, routes inference and writes the config', async () => {
    const { environment, shell, path } = setup();
    const result = await wireClaw('nemoclaw', target, environment);
    assert.equal(result.changed, true);
    assert.deepEqual(commandLines(environment), [
      'openshell inference get',
      'openshell provider create --name metaclaw --type openai --credential OPENAI_API_KEY=mc-proxy-key --config OPENAI_BASE_URL=http://127.0.0.1:30000/v1',
      'openshell inference set --provider metaclaw --model qwen3-32b',
    ]);
    assert.deepEqual(shell.inference, { provider: 'metaclaw', model: 'qwen3-32b' });
    const config = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
    assert.deepEqual(
      { ...config, onboardedAt: 'now' },
      {
        endpointType: 'custom',
        endpointUrl: 'http://127.0.0.1:30000/v1',
        ncpPartner: null,
        model: 'qwen3-32b',
        profile: 'ncp',
        credentialEnv: 'OPENAI_API_KEY',
        onboardedAt: 'now',
        sandboxName: 'my-assistant',
      },
    );
    assert.notEqual(config.onboardedAt, '2026-03-20T10:00:00.000Z');
    assert.deepEqual(readFileSync(result.backupPath ?? ''), fixtureBytes('nemoclaw-config.json'));

    const entry = findLedgerEntry(environment.metaclawHome, 'nemoclaw');
    const inference = entry?.actions.find((action) => action.id === 'openshell-inference');
    assert.match(inference?.output ?? '', /provider: nvidia/);
    assert.deepEqual(inference?.undo, [
      { command: 'openshell', args: ['inference', 'set', '--provider', 'nvidia', '--model', 'nvidia/nemotron-3-super-120b-a12b'] },
    ]);
    const ledgerText = readFileSync(join(environment.metaclawHome, 'claws', 'ledger.json'), 'utf8');
    assert.ok(ledgerText.includes('OPENAI_API_KEY=<redacted>'), 'commands are recorded without the key');
    assert.deepEqual((await verifyClaw('nemoclaw', target, environment)).problems, []);
  });

  test('a second apply only reads the route: no commands that change anything, config untouched', async () => {
    const { environment, path } = setup();
    await wireClaw('nemoclaw', target, environment);
    const before = { bytes: readFileSync(path), mtimeMs: statSync(path).mtimeMs, inode: statSync(path).ino };
    environment.calls.length = 0;
    const second = await wireClaw('nemoclaw', target, environment);
    assert.equal(second.changed, false);
    assert.deepEqual(commandLines(environment), ['openshell inference get']);
    assert.deepEqual({ bytes: readFileSync(path), mtimeMs: statSync(path).mtimeMs, inode: statSync(path).ino }, before, 'onboardedAt kept, nothing written');
  });

  test('unwire routes inference back, deletes the provider and restores the config bytes', async () => {
    const { environment, shell, path } = setup();
    await wireClaw('nemoclaw', target, environment);
    await wireClaw('nemoclaw', { ...target, model: 'other-model' }, environment);
    environment.calls.length = 0;
    const result = await unwireClaw('nemoclaw', environment);
    assert.equal(result.restored, true);
    assert.equal(result.exact, true);
    assert.deepEqual(commandLines(environment), [
      'openshell inference set --provider nvidia --model nvidia/nemotron-3-super-120b-a12b',
      'openshell provider delete metaclaw',
    ]);
    assert.deepEqual(shell.inference, { provider: 'nvidia', model: 'nvidia/nemotron-3-super-120b-a12b' });
    assert.equal(shell.providers.size, 0);
    assert.ok(readFileSync(path).equals(fixtureBytes('nemoclaw-config.json')));
    assert.deepEqual(readLedger(environment.metaclawHome).entries, []);
    assert.deepEqual(readdirSync(backupsFolder(environment.metaclawHome)), []);
  });

  test('an existing metaclaw provider is updated with the same flags', async () => {
    const { environment, shell } = setup();
    shell.providers.set('metaclaw', []);
    await wireClaw('nemoclaw', target, environment);
    assert.deepEqual(commandLines(environment).slice(1, 3), [
      'openshell provider create --name metaclaw --type openai --credential OPENAI_API_KEY=mc-proxy-key --config OPENAI_BASE_URL=http://127.0.0.1:30000/v1',
      'openshell provider update --name metaclaw --type openai --credential OPENAI_API_KEY=mc-proxy-key --config OPENAI_BASE_URL=http://127.0.0.1:30000/v1',
    ]);
  });

  test('an unreadable previous route is kept raw and unwire says how to choose one again', async () => {
    const { environment, shell } = setup();
    shell.inferenceOutput = 'Inference: (not configured)';
    await wireClaw('nemoclaw', target, environment);
    environment.calls.length = 0;
    const result = await unwireClaw('nemoclaw', environment);
    assert.deepEqual(commandLines(environment), ['openshell provider delete metaclaw']);
    assert.match(result.messages.join(' '), /could not tell which inference provider.*not configured.*openshell inference set --provider/);
  });

  test('without openshell it is a ClawError and nothing is written', async () => {
    const environment = fakeEnvironment();
    await assert.rejects(wireClaw('nemoclaw', target, environment), (error: unknown) => error instanceof ClawError && error.status === 'binary_missing');
    assert.equal(existsSync(join(environment.home, '.nemoclaw')), false);
    assert.equal(existsSync(environment.metaclawHome), false);
  });

  test('a malformed config.json is a ClawError before any command runs', async () => {
    const { environment, path } = setup();
    writeFileSync(path, '{ "endpointType": ');
    await assert.rejects(wireClaw('nemoclaw', target, environment), (error: unknown) => error instanceof ClawError && error.status === 'config_malformed');
    assert.deepEqual(environment.calls, []);
    assert.equal(readFileSync(path, 'utf8'), '{ "endpointType": ');
    assert.equal(existsSync(environment.metaclawHome), false);
  });

  test('a config MetaClaw created is removed again; user edits to one it changed are kept', async () => {
    const fresh = setup({ config: false });
    await wireClaw('nemoclaw', target, fresh.environment);
    assert.equal(statSync(fresh.path).mode & 0o777, 0o600);
    await unwireClaw('nemoclaw', fresh.environment);
    assert.equal(existsSync(fresh.path), false);

    const edited = setup();
    await wireClaw('nemoclaw', target, edited.environment);
    writeFileSync(edited.path, readFileSync(edited.path, 'utf8').replace('"my-assistant"', '"renamed"'));
    const result = await unwireClaw('nemoclaw', edited.environment);
    assert.equal(result.exact, false);
    const original = JSON.parse(fixtureBytes('nemoclaw-config.json').toString('utf8')) as Record<string, unknown>;
    assert.deepEqual(JSON.parse(readFileSync(edited.path, 'utf8')), { ...original, sandboxName: 'renamed' });
  });

  test('a failed `inference set` leaves the created provider in the ledger so unwire deletes it', async () => {
    const { environment, shell, path } = setup();
    environment.respond = (command, args) =>
      args[0] === 'inference' && args[1] === 'set' ? { code: 1, stdout: '', stderr: 'gateway unreachable' } : shell.respond(command, args);
    await assert.rejects(
      wireClaw('nemoclaw', target, environment),
      (error: unknown) => error instanceof ClawError && error.status === 'command_failed' && /gateway unreachable/.test(error.message),
    );
    assert.ok(readFileSync(path).equals(fixtureBytes('nemoclaw-config.json')), 'the config is not written after a failed command');
    assert.deepEqual(
      findLedgerEntry(environment.metaclawHome, 'nemoclaw')?.actions.map((action) => action.id),
      ['openshell-provider'],
    );
    environment.respond = shell.respond;
    await unwireClaw('nemoclaw', environment);
    assert.equal(shell.providers.size, 0);
  });

  test('verify notices inference routed elsewhere', async () => {
    const { environment, shell } = setup();
    await wireClaw('nemoclaw', target, environment);
    shell.inference = { provider: 'nvidia', model: 'x' };
    const verified = await verifyClaw('nemoclaw', target, environment);
    assert.equal(verified.wired, false);
    assert.match(verified.problems.join(' '), /uses nvidia\/x, expected metaclaw\/qwen3-32b/);
  });
});
