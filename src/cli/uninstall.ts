import * as prompts from '@clack/prompts';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { relative, resolve, sep } from 'node:path';
import { clawsFolder } from '../claws/index.js';
import { CONFIG_SCHEMA_FILE, type LoadedConfig } from '../config/index.js';
import { uninstallService } from '../service/index.js';
import { unwireEverythingReport } from './claw.js';
import { CliExit, loadCliConfigOrDefaults, print } from './context.js';
import { stopProxy } from './stop.js';
import { clawEnvironment } from './wiring.js';

export interface UninstallOptions {
  config?: string;
  yes?: boolean;
  keepData?: boolean;
}

/**
 * `metaclaw uninstall`: stop → unwire every agent (from the ledger) → remove the login service →
 * remove $METACLAW_HOME (or, with --keep-data, everything in it but skills and memories).
 * If an agent cannot be restored, nothing is deleted: the ledger and backups are what a retry needs.
 */
export async function uninstallCommand(options: UninstallOptions): Promise<void> {
  // A broken config.yaml must not stop the uninstall, as it must not stop `stop`; a folder the
  // defaults do not name is never removed, so nothing is lost by falling back on them.
  const { config } = loadCliConfigOrDefaults(
    options,
    'Uninstalling with the default settings: a skills.dir set in that file is not seen, and anything it placed outside the default paths is left.',
  );
  const kept = options.keepData ? keptPaths(config) : [];
  await confirm(config, options, kept);

  print('1. Stopping the proxy');
  await stopProxy(config);

  print('2. Restoring every agent MetaClaw wired');
  const failures = await unwireEverythingReport(config);
  if (failures > 0) {
    throw new CliExit(
      `Stopped before removing anything else: ${failures} agent(s) could not be restored, and ${clawsFolder(config.home)} holds the backups a retry needs. Fix the problem above and run \`metaclaw uninstall\` again.`,
    );
  }

  print('3. Removing the login service');
  const host = clawEnvironment(config);
  try {
    for (const step of (await uninstallService(host, { enable: true })).steps) print(`   ${step}`);
  } catch (error) {
    print(`   ${(error as Error).message}`);
  }

  print(options.keepData ? `4. Removing ${config.home}, keeping skills and memories` : `4. Removing ${config.home}`);
  removeHome(config, kept);
  for (const path of outsideHome(config)) print(`   Left ${path}: it is outside ${config.home}; remove it yourself if you wish.`);
  print(
    options.keepData
      ? `MetaClaw is uninstalled; your skills and memories are still in ${config.home}.`
      : 'MetaClaw is uninstalled. `npm uninstall -g metaclaw-ts` (or `npm unlink`) removes the command itself.',
  );
}

/** Paths (absolute) that --keep-data keeps: the skill library and the database that holds memories. */
function keptPaths(config: LoadedConfig): string[] {
  const database = config.paths.database;
  // The journal holds answered turns not yet in the database (after a crash): they are part of it.
  return [config.paths.skillsDir, config.paths.memoryDir, database, `${database}-wal`, `${database}-shm`, config.paths.journalDir].filter((path) =>
    isInside(config.home, path),
  );
}

function outsideHome(config: LoadedConfig): string[] {
  return [config.paths.skillsDir, config.paths.memoryDir].filter((path) => existsSync(path) && !isInside(config.home, path));
}

function isInside(folder: string, path: string): boolean {
  const rel = relative(resolve(folder), resolve(path));
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !rel.startsWith(sep);
}

async function confirm(config: LoadedConfig, options: UninstallOptions, kept: string[]): Promise<void> {
  if (options.yes) return;
  const what = options.keepData
    ? `everything in ${config.home} except ${kept.map((path) => relative(config.home, path)).join(', ')}`
    : `${config.home} (config, skills, memories, recorded sessions, logs)`;
  if (!process.stdin.isTTY)
    throw new CliExit(`This removes ${what}. Run \`metaclaw uninstall --yes\` to confirm (add --keep-data to keep skills and memories).`);
  const answer = await prompts.confirm({ message: `Stop MetaClaw, restore your agents' configuration and delete ${what}?`, initialValue: false });
  if (prompts.isCancel(answer) || answer !== true) throw new CliExit('Nothing was changed.', 1);
}

/** What MetaClaw keeps in $METACLAW_HOME (names directly inside it). */
function metaclawEntries(config: LoadedConfig): string[] {
  const names = new Set(['config.yaml', 'config.yaml.lock', CONFIG_SCHEMA_FILE, 'metaclaw.pid', 'admin-token', 'logs', 'claws', 'skills', 'memory', 'journal']);
  for (const path of [
    config.paths.database,
    `${config.paths.database}-wal`,
    `${config.paths.database}-shm`,
    config.paths.skillsDir,
    config.paths.memoryDir,
    config.paths.logDir,
  ]) {
    if (isInside(config.home, path)) names.add(relative(config.home, path).split(sep)[0]!);
  }
  return [...names];
}

/**
 * Removes what MetaClaw put in $METACLAW_HOME, never the folder wholesale: METACLAW_HOME may point
 * at a folder that holds other things (even the user's home). The folder goes only if left empty.
 */
function removeHome(config: LoadedConfig, kept: string[]): void {
  if (!existsSync(config.home)) {
    print(`   ${config.home} does not exist.`);
    return;
  }
  const keptResolved = kept.map((path) => resolve(path));
  const ours = new Set(metaclawEntries(config));
  for (const entry of readdirSync(config.home)) {
    // our files, and the temp files of interrupted atomic writes of them (".config.yaml.123.ab.tmp")
    const mine = ours.has(entry) || [...ours].some((name) => entry.startsWith(`.${name}.`) && entry.endsWith('.tmp'));
    if (!mine) continue;
    const path = resolve(config.home, entry);
    if (keptResolved.includes(path)) continue;
    if (keptResolved.some((keep) => isInside(path, keep))) continue; // a kept path deeper inside (skills.dir = "data/skills")
    rmSync(path, { recursive: true, force: true });
    print(`   Removed ${path}.`);
  }
  const left = readdirSync(config.home);
  if (left.length === 0) {
    rmSync(config.home, { recursive: true, force: true });
    print(`   Removed ${config.home}.`);
  } else if (kept.length === 0) {
    print(`   Left ${config.home}: it also holds files MetaClaw did not make (${left.slice(0, 3).join(', ')}${left.length > 3 ? ', …' : ''}).`);
  }
}
