import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runCli, tempHome } from './support/proxy.js';

/** Why a shell's test cannot run here, or false when the shell is installed. */
function missing(shell: string): string | false {
  const found = spawnSync(shell, ['-c', 'exit 0'], { stdio: 'ignore' });
  return found.error || found.status !== 0 ? `${shell} is not installed on this machine, so its script cannot be checked here` : false;
}

/** Runs `script` with `shell -c` and returns its output lines; the completion script's path is written into it (a temp path, no quoting needed). */
function runShell(shell: string, script: string): string[] {
  const result = spawnSync(shell, ['-c', script], { encoding: 'utf8', env: { PATH: process.env['PATH'] } });
  assert.equal(result.status, 0, `${shell} failed: ${result.stderr}`);
  return result.stdout.split('\n').filter(Boolean);
}

describe('metaclaw completion SHELL prints a completion script made from the commands and their options', () => {
  const home = tempHome();
  const scripts = new Map<string, string>();

  before(async () => {
    for (const shell of ['bash', 'zsh', 'fish']) {
      const printed = await runCli(['completion', shell], { home });
      assert.equal(printed.code, 0, printed.stderr);
      const file = join(home, `metaclaw.${shell}`);
      writeFileSync(file, printed.stdout);
      scripts.set(shell, file);
    }
  });
  after(() => rmSync(home, { recursive: true, force: true }));

  test('bash: the script is valid bash and completes `metaclaw sk` to skills, then its subcommands and options', { skip: missing('bash') }, () => {
    const file = scripts.get('bash')!;
    assert.equal(spawnSync('bash', ['-n', file]).status, 0, 'bash -n accepts the script');
    const completeWords = (...words: string[]) =>
      runShell(
        'bash',
        `source ${JSON.stringify(file)}; COMP_WORDS=(${words.map((word) => `'${word}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _metaclaw; printf '%s\\n' "\${COMPREPLY[@]}"`,
      );
    assert.deepEqual(completeWords('metaclaw', 'sk'), ['skills']);
    assert.deepEqual(completeWords('metaclaw', 'skills', 'l'), ['list', 'log']);
    assert.deepEqual(completeWords('metaclaw', 'start', '--p'), ['--port']);
    assert.deepEqual(completeWords('metaclaw', 'completion', ''), ['bash', 'zsh', 'fish', '-h', '--help']);
  });

  test('zsh: the script is valid zsh and offers skills for `metaclaw sk`, sourced or autoloaded from $fpath', { skip: missing('zsh') }, () => {
    const file = scripts.get('zsh')!;
    assert.equal(spawnSync('zsh', ['-n', file]).status, 0, 'zsh -n accepts the script');
    // Outside a completion widget: compdef and _describe are stood in for, the latter prints what it was given.
    const stubs = 'compdef() { :; }; _describe() { local -a list; list=("${(@P)4}"); print -rl -- "${list[@]%%:*}"; }';
    const typed = 'words=(metaclaw sk); CURRENT=2';
    const sourced = runShell('zsh', `${stubs}; source ${JSON.stringify(file)}; ${typed}; _metaclaw`);
    assert.deepEqual(
      sourced.filter((word) => word.startsWith('sk')),
      ['skills'],
    );
    // Saved as _metaclaw in a folder of $fpath, the file is the function's body: its first call must complete too.
    const folder = join(home, 'zsh-functions');
    mkdirSync(folder, { recursive: true });
    copyFileSync(file, join(folder, '_metaclaw'));
    const autoloaded = runShell('zsh', `${stubs}; fpath=(${JSON.stringify(folder)} $fpath); autoload -Uz _metaclaw; ${typed}; _metaclaw`);
    assert.deepEqual(
      autoloaded.filter((word) => word.startsWith('sk')),
      ['skills'],
    );
  });

  test('fish: the script is valid fish and completes `metaclaw sk` to skills', { skip: missing('fish') }, () => {
    const file = scripts.get('fish')!;
    assert.equal(spawnSync('fish', ['--no-execute', file]).status, 0, 'fish --no-execute accepts the script');
    const offered = runShell('fish', `source ${JSON.stringify(file)}; complete -C 'metaclaw sk'`);
    assert.deepEqual(
      offered.map((line) => line.split('\t')[0]),
      ['skills'],
    );
  });

  test('an unknown shell is refused with the choices, and prints no script', async () => {
    const refused = await runCli(['completion', 'tcsh'], { home });
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /Allowed choices are bash, zsh, fish/);
    assert.equal(refused.stdout, '');
  });
});
