import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { installService, serviceFile, uninstallService, type ServiceHost } from '../src/service/index.js';
import { CLI, freePort, runCli, waitFor } from './support/proxy.js';

const folders: string[] = [];
after(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});
/** A home whose path needs quoting in a unit file: a space, a percent sign and a dollar. */
function awkwardHome(): string {
  const folder = mkdtempSync(join(tmpdir(), 'metaclaw svc %h $HOME-'));
  folders.push(folder);
  return folder;
}

/** Splits an ExecStart/Environment value the way systemd does: quotes, backslash escapes, `$$` and `%%`. */
function systemdWords(line: string, inExec: boolean): string[] {
  const words: string[] = [];
  let index = 0;
  while (index < line.length) {
    while (line[index] === ' ') index++;
    if (index >= line.length) break;
    let word = '';
    if (line[index] === '"') {
      index++;
      while (line[index] !== '"') {
        if (line[index] === '\\') index++;
        word += line[index++];
      }
      index++;
    } else {
      while (index < line.length && line[index] !== ' ') word += line[index++];
    }
    word = word.replace(/%%/g, '%');
    words.push(inExec ? word.replace(/\$\$/g, '$') : word);
  }
  return words;
}

describe('metaclaw service (systemd user unit)', () => {
  test('install writes a unit that really starts the proxy; status sees it; uninstall removes unit and link', async () => {
    const home = awkwardHome();
    const port = await freePort();
    writeFileSync(join(home, 'config.yaml'), `proxy:\n  port: ${port}\n`, { mode: 0o600 });
    // No systemd user manager is reachable here (as in most containers): the file and the enable link
    // are still written, and the output says it was not started now.
    const env = { PATH: '/nonexistent' };
    const installed = await runCli(['service', 'install'], { home, env });
    assert.equal(installed.code, 0, installed.stderr);
    const unitPath = join(home, '.config', 'systemd', 'user', 'metaclaw.service');
    assert.match(installed.stdout, new RegExp(`Wrote ${unitPath.replace(/[$.*+?^()[\]{}|\\]/g, '\\$&')}`));
    assert.match(installed.stdout, /Enabled it \(.*default\.target\.wants\/metaclaw\.service\): it starts at every login/);
    assert.match(installed.stdout, /Not started now: the systemd user manager cannot be reached \(systemctl is not available on this machine\)/);
    const link = join(home, '.config', 'systemd', 'user', 'default.target.wants', 'metaclaw.service');
    assert.ok(lstatSync(link).isSymbolicLink());
    assert.equal(readlinkSync(link), unitPath);

    const unit = readFileSync(unitPath, 'utf8');
    assert.match(unit, /^\[Unit\]$/m);
    assert.match(unit, /^WantedBy=default\.target$/m);
    assert.match(unit, /^Restart=on-failure$/m);
    assert.doesNotMatch(unit, /sk-|api_key/i, 'no secrets in the unit');
    if (existsSync('/usr/bin/systemd-analyze')) {
      // systemd's own parser accepts it (system mode: the user manager cannot run in a container)
      const verified = spawnSync('/usr/bin/systemd-analyze', ['verify', unitPath], { encoding: 'utf8' });
      assert.equal(verified.status, 0, verified.stderr);
    }

    // Run the unit's command exactly as systemd would, with its environment: the proxy answers.
    const execLine = /^ExecStart=(.*)$/m.exec(unit)![1]!;
    const [program, ...args] = systemdWords(execLine, true);
    assert.equal(program, process.execPath);
    // the same memory bounds as `metaclaw start`'s daemon (issue 11's soak)
    assert.deepEqual(args, ['--max-semi-space-size=4', CLI, 'start', '--foreground']);
    const environment: Record<string, string> = {};
    for (const match of unit.matchAll(/^Environment=(.*)$/gm)) {
      const [pair] = systemdWords(match[1]!, false);
      const at = pair!.indexOf('=');
      environment[pair!.slice(0, at)] = pair!.slice(at + 1);
    }
    assert.equal(environment['METACLAW_HOME'], home, 'the awkward path survives quoting');
    assert.equal(environment['MALLOC_ARENA_MAX'], '2');
    const child = spawn(program, args, { env: { ...environment, HOME: home }, stdio: 'ignore' });
    try {
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok, 15_000);
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }

    const again = await runCli(['service', 'install', '--no-enable'], { home, env });
    assert.match(again.stdout, /is already up to date/);
    const status = await runCli(['service', 'status'], { home, env });
    assert.match(status.stdout, /Installed: .*metaclaw\.service \(systemd/);

    const removed = await runCli(['service', 'uninstall'], { home, env });
    assert.equal(removed.code, 0, removed.stderr);
    assert.match(removed.stdout, /Removed .*metaclaw\.service/);
    assert.equal(existsSync(unitPath), false);
    assert.equal(existsSync(link), false);
    assert.match((await runCli(['service', 'status'], { home, env })).stdout, /Not installed/);
    assert.match((await runCli(['service', 'uninstall'], { home, env })).stdout, /No service installed/);
  });
});

describe('systemctl failing without a user bus', () => {
  test("uninstall names the reason systemctl gave last (no bus), not the 'Removed' line it printed first", async () => {
    const home = awkwardHome();
    const bin = join(home, 'bin');
    mkdirSync(bin);
    // What systemctl --user prints in a container or WSL with no user manager: the enable link is
    // changed, then connecting to the manager fails.
    const fake = join(bin, 'systemctl');
    writeFileSync(
      fake,
      `#!/bin/sh\ncase "$*" in *disable*) echo 'Removed "/x/default.target.wants/metaclaw.service".' >&2;; esac\necho 'Failed to connect to bus: No medium found' >&2\nexit 1\n`,
    );
    chmodSync(fake, 0o755);
    const env = { PATH: bin };
    assert.equal((await runCli(['service', 'install'], { home, env })).code, 0);
    const removed = await runCli(['service', 'uninstall'], { home, env });
    assert.equal(removed.code, 0, removed.stderr);
    assert.match(removed.stdout, /systemctl could not disable metaclaw\.service \(Failed to connect to bus: No medium found\); removing the file anyway/);
  });
});

describe('launchd agent (macOS)', () => {
  test('install writes a well-formed plist in ~/Library/LaunchAgents and loads it with launchctl; uninstall unloads and removes it', async () => {
    const home = awkwardHome();
    const calls: string[][] = [];
    const host: ServiceHost = {
      home,
      env: { PATH: '/usr/bin' },
      platform: 'darwin',
      uid: 501,
      which: (binary) => (binary === 'launchctl' ? '/bin/launchctl' : undefined),
      run: async (command, args) => {
        calls.push([command, ...args]);
        return { code: 0, stdout: '', stderr: '' };
      },
    };
    let handedOver = false;
    const spec = {
      command: ['/opt/node/bin/node', '/opt/metaclaw/bin/metaclaw.js'],
      args: [],
      environment: { METACLAW_HOME: join(home, '.metaclaw & <co>') },
      logFile: join(home, '.metaclaw', 'logs', 'service.out'),
    };
    const report = await installService(host, spec, { enable: true, beforeStart: async () => void (handedOver = true) });
    const file = join(home, 'Library', 'LaunchAgents', 'ai.metaclaw.proxy.plist');
    assert.equal(report.file, file);
    assert.equal(serviceFile(host), file);
    assert.ok(report.managed);
    assert.ok(handedOver, 'a hand-started proxy is stopped before launchd starts one');
    assert.deepEqual(calls.at(-1), ['launchctl', 'bootstrap', 'gui/501', file]);
    const plist = readFileSync(file, 'utf8');
    assert.match(plist, /<key>Label<\/key>\s*<string>ai\.metaclaw\.proxy<\/string>/);
    assert.match(
      plist,
      /<key>ProgramArguments<\/key>\s*<array>\s*<string>\/opt\/node\/bin\/node<\/string>\s*<string>\/opt\/metaclaw\/bin\/metaclaw\.js<\/string>\s*<string>start<\/string>\s*<string>--foreground<\/string>\s*<\/array>/,
    );
    assert.match(plist, /<key>RunAtLoad<\/key>\s*<true\/>/);
    assert.match(plist, /<string>[^<]*\.metaclaw &amp; &lt;co&gt;<\/string>/, 'values are XML-escaped');
    // balanced tags: every <dict>, <array> and <plist> closes
    for (const tag of ['dict', 'array', 'plist'])
      assert.equal(plist.split(`<${tag}>`).length + plist.split(`<${tag} `).length - 1, plist.split(`</${tag}>`).length, tag);

    const removed = await uninstallService(host, { enable: true });
    assert.deepEqual(calls.at(-1), ['launchctl', 'bootout', 'gui/501/ai.metaclaw.proxy']);
    assert.match(removed.steps.join('\n'), /Unloaded ai\.metaclaw\.proxy/);
    assert.equal(existsSync(file), false);
  });
});
