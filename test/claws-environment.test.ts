import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { findOnPath } from '../src/claws/environment.js';
import {
  adapterFor,
  ALL_CLAW_TYPES,
  backupsFolder,
  ClawError,
  detectClaws,
  findLedgerEntry,
  ledgerPath,
  realEnvironment,
  unwireClaw,
  verifyClaw,
  wireClaw,
} from '../src/claws/index.js';
import type { ClawType, WiringTarget } from '../src/claws/index.js';
import { fakeEnvironment, installFixture, newHome, removeHomes } from './fixtures/claws/harness.js';

after(removeHomes);

const target: WiringTarget = { proxyUrl: 'http://127.0.0.1:30000', apiKey: 'metaclaw', model: 'qwen3-32b', apiFormat: 'openai', contextWindow: 0 };

describe('realEnvironment', () => {
  const environment = realEnvironment({ home: '/nonexistent-home', metaclawHome: '/nonexistent-home/.metaclaw' });

  test('reports exit codes and output without rejecting', async () => {
    const result = await environment.run(process.execPath, ['-e', 'process.stdout.write("out"); process.stderr.write("err"); process.exit(3)']);
    assert.deepEqual(result, { code: 3, stdout: 'out', stderr: 'err' });
  });

  test('rejects only for a missing binary, and turns a timeout into exit code 124', async () => {
    await assert.rejects(environment.run('metaclaw-no-such-binary-xyz', []), (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT');
    const slow = await environment.run(process.execPath, ['-e', 'setTimeout(() => {}, 10000)'], { timeoutMs: 300 });
    assert.equal(slow.code, 124);
    assert.match(slow.stderr, /timed out/);
  });

  test('finds executables on PATH and skips files that are not executable', () => {
    const folder = newHome();
    writeFileSync(join(folder, 'runnable'), '#!/bin/sh\n');
    chmodSync(join(folder, 'runnable'), 0o755);
    writeFileSync(join(folder, 'plain'), '');
    chmodSync(join(folder, 'plain'), 0o644);
    const path = ['/nonexistent-folder', folder].join(delimiter);
    assert.equal(findOnPath('runnable', path, 'linux'), join(folder, 'runnable'));
    assert.equal(findOnPath('plain', path, 'linux'), undefined);
    assert.equal(findOnPath('missing', path, 'linux'), undefined);
    assert.ok(environment.which('node') !== undefined || environment.which(process.execPath) !== undefined);
  });
});

describe('detectClaws', () => {
  test('reports each agent: installed, config location, CLI and wiring', async () => {
    const environment = fakeEnvironment({ binaries: ['openclaw', 'openshell'] });
    installFixture(environment.home, 'copaw-config.json', '.copaw/config.json');
    installFixture(environment.home, 'nanoclaw.env', 'nanoclaw/.env');
    await wireClaw('copaw', target, environment);
    const detections = await detectClaws(environment);
    assert.deepEqual(
      detections.map((detection) => detection.type),
      ALL_CLAW_TYPES.filter((type) => type !== 'none'),
    );
    const byType = new Map(detections.map((detection) => [detection.type, detection]));
    assert.deepEqual(
      detections.filter((detection) => detection.installed).map((detection) => detection.type),
      ['openclaw', 'copaw', 'nanoclaw', 'nemoclaw'],
    );
    assert.equal(byType.get('copaw')?.wired, true);
    assert.equal(byType.get('copaw')?.configExists, true);
    assert.equal(byType.get('openclaw')?.binaryPath, '/usr/local/bin/openclaw');
    assert.equal(byType.get('openclaw')?.configExists, false);
    assert.equal(byType.get('nanoclaw')?.configPath, join(environment.home, 'nanoclaw', '.env'));
    assert.equal(byType.get('hermes')?.installed, false);
  });
});

describe('edge cases', () => {
  test('claw type none changes nothing and says where to point the agent', async () => {
    const environment = fakeEnvironment();
    const result = await wireClaw('none', target, environment);
    assert.equal(result.changed, false);
    assert.match(result.messages[0] ?? '', /http:\/\/127\.0\.0\.1:30000\/v1/);
    assert.equal((await verifyClaw('none', target, environment)).wired, true);
    assert.equal((await unwireClaw('none', environment)).restored, false);
    assert.equal(existsSync(environment.metaclawHome), false);
  });

  test('an unknown claw type or a bad target is a ClawError', async () => {
    assert.throws(
      () => adapterFor('superclaw' as ClawType),
      (error: unknown) => error instanceof ClawError && error.status === 'unknown_claw',
    );
    const environment = fakeEnvironment();
    installFixture(environment.home, 'copaw-config.json', '.copaw/config.json');
    for (const bad of [{ proxyUrl: '127.0.0.1:30000' }, { proxyUrl: 'ftp://host' }, { model: ' ' }, { contextWindow: -1 }]) {
      await assert.rejects(
        wireClaw('copaw', { ...target, ...bad }, environment),
        (error: unknown) => error instanceof ClawError && error.status === 'invalid_target',
      );
    }
  });

  test('a key MetaClaw must nest under that holds a plain value is a conflict; nothing is written', async () => {
    const environment = fakeEnvironment();
    mkdirSync(join(environment.home, '.openclaw'));
    const path = join(environment.home, '.openclaw', 'openclaw.json');
    writeFileSync(path, '{ models: "managed elsewhere" }\n');
    await assert.rejects(
      wireClaw('openclaw', target, environment),
      (error: unknown) => error instanceof ClawError && error.status === 'config_conflict' && /`models`/.test(error.message),
    );
    assert.equal(readFileSync(path, 'utf8'), '{ models: "managed elsewhere" }\n');
    assert.equal(existsSync(environment.metaclawHome), false);
  });

  test('a damaged ledger stops wiring before anything is written', async () => {
    const environment = fakeEnvironment();
    const path = installFixture(environment.home, 'copaw-config.json', '.copaw/config.json');
    mkdirSync(join(environment.metaclawHome, 'claws'), { recursive: true });
    writeFileSync(ledgerPath(environment.metaclawHome), '{ not json');
    await assert.rejects(wireClaw('copaw', target, environment), (error: unknown) => error instanceof ClawError && error.status === 'ledger_corrupt');
    assert.deepEqual(readFileSync(path), readFileSync(join(import.meta.dirname, 'fixtures', 'claws', 'copaw-config.json')));
  });

  test('a config the user deleted after wiring is left deleted and its backup is kept', async () => {
    const environment = fakeEnvironment();
    const path = installFixture(environment.home, 'picoclaw-config.json', '.picoclaw/config.json');
    await wireClaw('picoclaw', target, environment);
    rmSync(path);
    const result = await unwireClaw('picoclaw', environment);
    assert.equal(result.exact, false);
    assert.match(result.messages.join(' '), /was deleted after MetaClaw wired it/);
    assert.equal(existsSync(path), false);
    assert.equal(readdirSync(backupsFolder(environment.metaclawHome)).length, 1);
    assert.equal(findLedgerEntry(environment.metaclawHome, 'picoclaw'), undefined);
  });
});
