import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { freePort, runCli, tempHome } from './support/proxy.js';

/** A path the user typed that cannot be written or read is their mistake to fix: a line naming it, not a stack trace. */
describe('file errors of the CLI', () => {
  test('a path that cannot be written or read is named in one line with the reason, exit 1, no stack trace', async () => {
    const home = tempHome();
    const file = join(home, 'notes.txt');
    writeFileSync(file, 'a file, not a folder');
    const cases: Array<[string[], RegExp]> = [
      [['rl', 'export', '--out', join(home, 'missing-folder', 'samples.jsonl')], /missing-folder\/samples\.jsonl: no such file or folder/],
      [['rl', 'export', '--out', home], /: it is a folder/],
      [['skills', 'export', join(file, 'inside')], /notes\.txt\/inside: a part of the path is not a folder/],
      [['memory', 'import', home], new RegExp(`${home}: it is a folder\\.`)],
      [['memory', 'ingest', join(home, 'chat.json')], /chat\.json: no such file or folder/],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(args, { home });
      const shown = `metaclaw ${args.join(' ')}:\n${result.stdout}\n${result.stderr}`;
      assert.equal(result.code, 1, shown);
      assert.match(result.stderr, message, shown);
      assert.doesNotMatch(result.stderr, /\n\s+at |node:fs/, shown);
    }
  });

  test('a database file this version cannot use (not a database, a newer schema, a folder in its place) is one line naming it and what to do, exit 1, for commands and start alike, and the file is left as it was', async () => {
    const notADatabase = tempHome();
    writeFileSync(join(notADatabase, 'metaclaw.db'), 'my shopping list, not a database\n'.repeat(200));
    const newer = tempHome();
    const db = new Database(join(newer, 'metaclaw.db'));
    db.pragma('user_version = 999');
    db.close();
    const folder = tempHome();
    mkdirSync(join(folder, 'metaclaw.db'));
    const cases: Array<[string, RegExp]> = [
      [
        notADatabase,
        /^MetaClaw's database .*metaclaw\.db cannot be opened: file is not a database; move it aside to start afresh, or put a backup in its place\.$/m,
      ],
      [newer, /^The database .*metaclaw\.db has schema version 999, newer than this MetaClaw \(knows up to \d+\); upgrade MetaClaw\.$/m],
      [folder, /^MetaClaw's database .*metaclaw\.db cannot be opened: unable to open database file; check that its folder exists/m],
    ];
    const port = await freePort();
    for (const [home, message] of cases) {
      const before = statSync(join(home, 'metaclaw.db')).isFile() ? readFileSync(join(home, 'metaclaw.db')) : undefined;
      for (const args of [
        ['memory', 'stats'],
        ['skills', 'list'],
        ['start', '--port', String(port)],
      ]) {
        const result = await runCli(args, { home });
        const shown = `metaclaw ${args.join(' ')}:\n${result.stdout}\n${result.stderr}`;
        assert.equal(result.code, 1, shown);
        assert.match(result.stderr, message, shown);
        assert.doesNotMatch(`${result.stdout}${result.stderr}`, /\n\s+at |SqliteError|StoreError|node_modules/, shown);
      }
      if (before) assert.deepEqual(readFileSync(join(home, 'metaclaw.db')), before, 'the file is not changed');
    }
  });

  test(
    'a folder the file system will not create (under /proc) is an error in one line, not a command that never returns',
    { skip: existsSync('/proc/self') ? false : 'no /proc here' },
    async () => {
      const home = tempHome();
      const cases: Array<[string[], Record<string, string>, RegExp]> = [
        [['memory', 'stats'], { METACLAW_HOME: '/proc/metaclaw-home' }, /^\/proc\/metaclaw-home: no such file or folder\.$/m],
        [['skills', 'export', '/proc/metaclaw-skills/out'], {}, /^\/proc\/metaclaw-skills: no such file or folder\.$/m],
      ];
      for (const [args, env, message] of cases) {
        // Node 20's recursive mkdirSync spins forever on these paths: the timeout is the failure.
        const result = await runCli(args, { home, env, timeoutMs: 15_000 });
        const shown = `metaclaw ${args.join(' ')}:\n${result.stdout}\n${result.stderr}`;
        assert.equal(result.code, 1, shown);
        assert.match(result.stderr, message, shown);
      }
    },
  );

  test('an export written over an existing world-readable file leaves it readable by the owner only (0600), as a new export file is', async () => {
    const home = tempHome();
    await runCli(['memory', 'add', 'The alarm code is in the blue notebook.'], { home });
    for (const args of [
      ['memory', 'export', '--output'],
      ['rl', 'export', '--out'],
    ]) {
      const file = join(home, `${args[0]}-export.jsonl`);
      writeFileSync(file, 'an older export\n', { mode: 0o644 });
      const result = await runCli([...args, file], { home });
      assert.equal(result.code, 0, result.stderr);
      assert.equal(statSync(file).mode & 0o777, 0o600, args.join(' '));
    }
  });
});
