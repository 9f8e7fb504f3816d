/**
 * NanoClaw: ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY in its project .env (it speaks Anthropic Messages,
 * so the URL has no /v1). The project is found through its service definition or the usual folders.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Restart } from './commands.js';
import { envFormat } from './env-document.js';
import { expandHome, inHome } from './paths.js';
import type { ClawEnvironment } from './types.js';
import { fileAdapter } from './wiring.js';

const SERVICE = 'com.nanoclaw';

function systemdUnit(environment: ClawEnvironment): string {
  return inHome(environment, '.config', 'systemd', 'user', 'nanoclaw.service');
}

function launchdPlist(environment: ClawEnvironment): string {
  return inHome(environment, 'Library', 'LaunchAgents', `${SERVICE}.plist`);
}

function systemdWorkingDirectory(environment: ClawEnvironment): string | undefined {
  const unit = readText(systemdUnit(environment));
  const value = unit === undefined ? undefined : /^\s*WorkingDirectory\s*=\s*(.+?)\s*$/m.exec(unit)?.[1];
  if (value === undefined) return undefined;
  // systemd allows a leading "-" (optional directory) and %h for the home folder.
  const path = value
    .replace(/^-/, '')
    .replace(/^"(.*)"$/, '$1')
    .replace(/%h/g, environment.home);
  return expandHome(environment, path);
}

function launchdWorkingDirectory(environment: ClawEnvironment): string | undefined {
  const plist = readText(launchdPlist(environment));
  const value = plist === undefined ? undefined : /<key>\s*WorkingDirectory\s*<\/key>\s*<string>([^<]*)<\/string>/.exec(plist)?.[1];
  if (value === undefined) return undefined;
  return expandHome(environment, decodeXml(value.trim()));
}

function decodeXml(text: string): string {
  return text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}

function readText(path: string): string | undefined {
  return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
}

function isFolder(path: string | undefined): path is string {
  return path !== undefined && existsSync(path) && statSync(path).isDirectory();
}

/** The NanoClaw project folder: the service's WorkingDirectory, else ~/nanoclaw, ~/code/nanoclaw, ~/.nanoclaw. */
export function nanoclawProjectFolder(environment: ClawEnvironment): string | undefined {
  const candidates = [
    systemdWorkingDirectory(environment),
    launchdWorkingDirectory(environment),
    inHome(environment, 'nanoclaw'),
    inHome(environment, 'code', 'nanoclaw'),
    inHome(environment, '.nanoclaw'),
  ];
  return candidates.find(isFolder);
}

function nanoclawRestart(environment: ClawEnvironment): Restart | string {
  const manual = 'Restart NanoClaw yourself so it picks up the change.';
  if (environment.platform === 'linux') {
    if (!existsSync(systemdUnit(environment))) return `NanoClaw has no systemd user service. ${manual}`;
    return { command: { command: 'systemctl', args: ['--user', 'restart', 'nanoclaw'] }, label: 'the nanoclaw user service' };
  }
  if (environment.platform === 'darwin') {
    const uid = environment.uid ?? process.getuid?.();
    if (!existsSync(launchdPlist(environment)) || uid === undefined) return `NanoClaw has no launchd agent. ${manual}`;
    return { command: { command: 'launchctl', args: ['kickstart', '-k', `gui/${uid}/${SERVICE}`] }, label: 'the com.nanoclaw launchd agent' };
  }
  return manual;
}

export const nanoclawAdapter = fileAdapter({
  claw: 'nanoclaw',
  agentName: 'NanoClaw',
  format: envFormat,
  missing: 'create-in-existing-folder',
  setupHint: 'Install NanoClaw (its project folder is looked for in the nanoclaw service, ~/nanoclaw, ~/code/nanoclaw and ~/.nanoclaw).',
  binary: undefined,
  locate: (environment) => {
    const folder = nanoclawProjectFolder(environment);
    return folder === undefined ? undefined : join(folder, '.env');
  },
  settings: (target) => [
    { path: ['ANTHROPIC_BASE_URL'], value: target.proxyUrl },
    { path: ['ANTHROPIC_API_KEY'], value: target.apiKey },
  ],
  restart: nanoclawRestart,
});
