import { statSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';

/** Where everything lives: `$METACLAW_HOME` (default `~/.metaclaw`). Tests point it at a temp folder. */
export function metaclawHome(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env['METACLAW_HOME'];
  if (fromEnv && fromEnv.trim() !== '') return resolve(expandHome(fromEnv.trim()));
  return join(homedir(), '.metaclaw');
}

/**
 * Why `home` cannot be MetaClaw's home, when it names a file: every command refuses it in this one
 * line (a command that opened the database there said only "it already exists"), or undefined.
 */
export function homeIsFileProblem(home: string): string | undefined {
  let folder: boolean;
  try {
    folder = statSync(home).isDirectory();
  } catch {
    return undefined; // absent (created when needed) or unreadable (the command that needs it says so)
  }
  return folder ? undefined : `The MetaClaw home ${home} is a file, not a folder; nothing was changed. Point METACLAW_HOME at a folder.`;
}

export function expandHome(path: string): string {
  if (path === '~') return homedir();
  if (path.startsWith('~/')) return join(homedir(), path.slice(2));
  return path;
}

/** Resolves a configured path: `~` expanded, relative paths taken from METACLAW_HOME, empty → fallback. */
export function resolveConfiguredPath(home: string, configured: string, fallback: string): string {
  const value = configured.trim() === '' ? fallback : expandHome(configured.trim());
  return isAbsolute(value) ? value : join(home, value);
}

export interface HomePaths {
  home: string;
  configFile: string;
  database: string;
  pidFile: string;
  logDir: string;
  logFile: string;
  /** Answered turns whose record is not committed yet (see conversation/turn-journal.ts). */
  journalDir: string;
  /** The admin token for cross-scope memory work over HTTP (0600, written by the proxy). */
  adminToken: string;
}

export function homePaths(home: string): HomePaths {
  return {
    home,
    configFile: join(home, 'config.yaml'),
    database: join(home, 'metaclaw.db'),
    pidFile: join(home, 'metaclaw.pid'),
    logDir: join(home, 'logs'),
    logFile: join(home, 'logs', 'metaclaw.log'),
    journalDir: join(home, 'journal'),
    adminToken: join(home, 'admin-token'),
  };
}
