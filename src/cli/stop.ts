import { readFileSync, rmSync } from 'node:fs';
import type { LoadedConfig } from '../config/index.js';
import { isProcessAlive, readPidFile } from '../runtime/index.js';
import { CliExit, loadCliConfigOrDefaults, numberArgument, print } from './context.js';

export interface StopOptions {
  config?: string;
  timeout?: string;
  unwire?: boolean;
}

/** `metaclaw stop`: SIGTERM, wait for the process to exit, SIGKILL after the timeout; stale pid files are cleaned. */
export async function stopCommand(options: StopOptions): Promise<void> {
  // A config.yaml edited into an error while the proxy runs must not keep it running.
  const { config, broken } = loadCliConfigOrDefaults(options, 'Stopping with the default shutdown timeout; fix the file before the next start.');
  await stopProxy(config, options.timeout);
  if (!options.unwire) return;
  if (broken) throw new CliExit('Not unwiring: the agents are found through the config, which does not load.');
  await (await import('./claw.js')).unwireEverything(config);
}

/** Stops the proxy this config's pid file names; prints what happened. */
export async function stopProxy(config: LoadedConfig, timeout?: string): Promise<void> {
  const pidFile = config.paths.pidFile;
  const timeoutMs =
    (timeout === undefined ? config.values['proxy.shutdown_timeout_seconds'] + 10 : numberArgument(timeout, '--timeout', { min: 0, integer: false })) * 1000;
  const info = readPidFile(pidFile);
  if (!info) {
    print('MetaClaw is not running.');
    return;
  }
  if (!isProcessAlive(info.pid) || !looksLikeMetaclaw(info.pid)) {
    rmSync(pidFile, { force: true });
    print(`MetaClaw is not running (removed a stale pid file for pid ${info.pid}).`);
    return;
  }
  process.kill(info.pid, 'SIGTERM');
  if (await waitForExit(info.pid, timeoutMs)) {
    rmSync(pidFile, { force: true });
    print(`MetaClaw stopped (pid ${info.pid}).`);
    return;
  }
  process.kill(info.pid, 'SIGKILL');
  await waitForExit(info.pid, 5_000);
  rmSync(pidFile, { force: true });
  print(`MetaClaw did not stop within ${timeoutMs / 1000} s and was killed (pid ${info.pid}).`);
}

async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!isProcessAlive(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return !isProcessAlive(pid);
}

/** Guards against a reused pid: only signal a process whose command line is a MetaClaw start. */
function looksLikeMetaclaw(pid: number): boolean {
  let commandLine: string;
  try {
    commandLine = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\u0000', ' ');
  } catch {
    return true; // no /proc: trust the pid file
  }
  return commandLine.includes('start') && (commandLine.includes('metaclaw') || commandLine.includes('cli/main'));
}
