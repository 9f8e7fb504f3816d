import assert from 'node:assert/strict';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { after, describe, test } from 'node:test';
import OpenAI from 'openai';
import { cleanEnv, freePort, REPO, runProgram as run, waitFor } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

/**
 * What this proves: the tarball `npm pack` makes from a checkout (its `prepack` builds dist/) holds
 * everything the CLI loads at run time, installs globally into an empty prefix with no install step
 * of its own (`--ignore-scripts`), and runs from there with no checkout, no dev dependency and an
 * empty METACLAW_HOME. What it does not: better-sqlite3's native build. Its install script fetches
 * a prebuilt binary or compiles one (minutes here, and no host but the npm registry is reachable),
 * so the test installs without scripts and puts the checkout's own build of the same pinned version
 * in place; that compile is npm's and node-gyp's, as for any user of better-sqlite3.
 */

/** npm's environment without what an outer `npm test` passes down (npm_config_*, npm_package_*), which would point npm at the checkout. */
function npmEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));
}

/** The checkout as a fresh clone has it: no dist/, no node_modules (linked back for the build's TypeScript), no git folder. */
function copyCheckout(target: string): void {
  const skipped = new Set(['node_modules', 'dist', '.git']);
  cpSync(REPO, target, { recursive: true, filter: (source) => !skipped.has(relative(REPO, source).split(sep)[0]!) });
  symlinkSync(join(REPO, 'node_modules'), join(target, 'node_modules'));
}

describe('the package installs and runs without a checkout', () => {
  const work = mkdtempSync(join(tmpdir(), 'metaclaw-package-'));
  after(() => rmSync(work, { recursive: true, force: true }));

  test('npm pack builds it; npm install -g of the tarball into an empty prefix gives a metaclaw that, before its SQLite driver is built, says how to rebuild it, and then answers --version, installs the starter skills, starts, proxies, serves its dashboard and stops', async () => {
    const source = join(work, 'checkout');
    copyCheckout(source);
    const packed = await run('npm', ['pack', '--pack-destination', work], { cwd: source, env: npmEnv(), timeoutMs: 300_000 });
    assert.equal(packed.code, 0, packed.stderr);
    const tarball = join(work, packed.stdout.trim().split('\n').at(-1)!);
    assert.ok(existsSync(tarball), `npm pack wrote ${tarball}`);

    const prefix = join(work, 'prefix');
    mkdirSync(prefix);
    const installed = await run('npm', ['install', '-g', '--prefix', prefix, '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', tarball], {
      env: npmEnv(),
      timeoutMs: 300_000,
    });
    assert.equal(installed.code, 0, installed.stderr);
    const packageDir = join(prefix, 'lib', 'node_modules', 'metaclaw-ts');
    const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { scripts?: Record<string, string>; private?: boolean };
    assert.equal(manifest.private, undefined);
    for (const script of ['preinstall', 'install', 'postinstall', 'prepare'])
      assert.equal(manifest.scripts?.[script], undefined, `no ${script} script runs at install`);
    assert.deepEqual(readdirSync(packageDir).sort(), [
      'README.md',
      'bin',
      'data',
      'dist',
      'node_modules',
      'openclaw-plugin',
      'package.json',
      'prompts',
      'skills-starter',
    ]);
    for (const file of [
      'dist/runtime/turn-writer-worker.js',
      'dist/store/checkpoint-worker.js',
      'prompts/skill-evolve.md',
      'data/secret-rules.json',
      'data/term-statistics.json',
      'dist/ui/index.html',
      'dist/ui/app.js',
      'dist/ui/app.css',
    ])
      assert.ok(existsSync(join(packageDir, file)), `${file} is shipped`);

    // better-sqlite3's native module, from the checkout's build of the same version (see above).
    const sqlite = join(packageDir, 'node_modules', 'better-sqlite3');
    const version = (folder: string) => (JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as { version: string }).version;
    assert.equal(version(sqlite), version(join(REPO, 'node_modules', 'better-sqlite3')));
    const home = join(work, 'home');
    mkdirSync(home);
    const upstream = await ScriptedUpstream.start();
    const port = await freePort();
    // The installed bin, run by its path in an empty home: nothing is taken from the checkout.
    const env = cleanEnv(home, { OPENAI_BASE_URL: `${upstream.url}/v1`, OPENAI_API_KEY: 'sk-from-env' });
    const metaclaw = (...args: string[]) => run(join(prefix, 'bin', 'metaclaw'), args, { cwd: home, env, timeoutMs: 120_000 });

    try {
      // Installed without its install script (as npm 12 does for a dependency allowScripts does not
      // list), the driver has no native module: commands say what is wrong and how to fix it, with no
      // stack trace, and doctor fails its versions check with the same fix.
      for (const args of [
        ['memory', 'stats'],
        ['start', '--port', String(port)],
      ]) {
        const unbuilt = await metaclaw(...args);
        assert.equal(unbuilt.code, 1, `${args.join(' ')}: ${unbuilt.stdout}${unbuilt.stderr}`);
        assert.match(unbuilt.stderr, /The SQLite driver better-sqlite3 is not built; run `npm rebuild better-sqlite3` in MetaClaw's folder/, args.join(' '));
        assert.doesNotMatch(unbuilt.stderr, /\n\s+at /, `${args.join(' ')} prints no stack trace`);
      }
      const doctor = await metaclaw('doctor');
      assert.match(doctor.stdout, /versions.*SQLite does not load: The SQLite driver better-sqlite3 is not built\n.*npm rebuild better-sqlite3/);

      mkdirSync(join(sqlite, 'build', 'Release'), { recursive: true });
      copyFileSync(
        join(REPO, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node'),
        join(sqlite, 'build', 'Release', 'better_sqlite3.node'),
      );

      const printed = await metaclaw('--version');
      assert.equal(printed.code, 0, printed.stderr);
      assert.equal(printed.stdout.trim(), version(REPO));

      const starter = await metaclaw('skills', 'install-starter');
      assert.equal(starter.code, 0, starter.stderr);
      assert.match(starter.stdout, /git-commit-hygiene/);

      const started = await metaclaw('start', '--port', String(port));
      assert.equal(started.code, 0, started.stderr);
      assert.match(started.stdout, /is running/);
      const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'x', maxRetries: 0 });
      const completion = await client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'Help me split my staged changes into small git commits with clear commit messages.' }],
      });
      assert.equal(completion.choices[0]!.message.content, 'Hello from the scripted upstream.');
      const forwarded = upstream.modelRequests()[0]!;
      assert.equal(forwarded.headers['authorization'], 'Bearer sk-from-env');
      assert.match(JSON.stringify(forwarded.body.messages), /<metaclaw-context>[\s\S]*git-commit-hygiene/, 'a starter skill was injected');
      const dashboard = await fetch(`http://127.0.0.1:${port}/ui`);
      assert.equal(dashboard.status, 200, 'the installed package serves its dashboard');
      assert.match(await dashboard.text(), /<script type="module" src="\/ui\/assets\/app.js">/);
      assert.equal((await fetch(`http://127.0.0.1:${port}/ui/assets/app.js`)).status, 200);

      const stopped = await metaclaw('stop');
      assert.equal(stopped.code, 0, stopped.stderr);
      await waitFor(
        async () =>
          !(await fetch(`http://127.0.0.1:${port}/healthz`).then(
            () => true,
            () => false,
          )),
      );
    } finally {
      await metaclaw('stop');
      await upstream.close();
    }
  });
});
