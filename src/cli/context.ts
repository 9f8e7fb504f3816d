import { fchmodSync, openSync, readFileSync } from 'node:fs';
import { defaultConfig, loadConfig, PRIVATE_FILE_MODE, type LoadedConfig } from '../config/index.js';
import { ConfigError, MetaclawError } from '../errors.js';
import { terminalText } from './terminal-text.js';

/** Thrown by commands to exit with a message and an exit code, without a stack trace. */
export class CliExit extends MetaclawError {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super('cli_exit', message);
  }
}

export interface GlobalOptions {
  config?: string;
}

/** Loads the config for a command; configuration errors become a clean exit with the message. */
export function loadCliConfig(options: { config?: string; overrides?: Record<string, string | undefined> } = {}): LoadedConfig {
  try {
    return loadConfig({ ...(options.config ? { configFile: options.config } : {}), ...(options.overrides ? { overrides: options.overrides } : {}) });
  } catch (error) {
    if (error instanceof ConfigError) throw new CliExit(error.message);
    throw error;
  }
}

/**
 * The config, or the embedded defaults for $METACLAW_HOME when config.yaml does not load (the problem
 * and `consequence` printed as a warning; `broken` then true). For the commands a broken file must not
 * block: the pid file, the agents' ledger and the database lie in the home folder whatever it says.
 */
export function loadCliConfigOrDefaults(options: { config?: string }, consequence: string): { config: LoadedConfig; broken: boolean } {
  try {
    return { config: loadCliConfig(options.config ? { config: options.config } : {}), broken: false };
  } catch (error) {
    if (!(error instanceof CliExit)) throw error;
    printError(`warning: ${error.message}`);
    printError(`  ${consequence}`);
    return { config: defaultConfig(), broken: true };
  }
}

/** Where a client reaches the running proxy: a wildcard bind is reached on loopback. */
export function connectHost(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::') return '::1';
  return host;
}

export function baseUrl(host: string, port: number): string {
  const reachable = connectHost(host);
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}

/** Every line the CLI prints goes through here, made safe for a terminal (see terminal-text.ts). */
export function print(line = ''): void {
  process.stdout.write(`${terminalText(line)}\n`);
}

/** A warning or error line on standard error, made safe the same way. */
export function printError(line: string): void {
  process.stderr.write(`${terminalText(line)}\n`);
}

/**
 * A number typed on the command line, checked. Commander hands every option value over as text,
 * and `Number('abc')` is NaN, which SQLite refuses with a stack trace, a LIMIT takes as "no limit"
 * and a deadline as "already passed" (so `stop --timeout abc` killed at once). `what` names the
 * option in the message, as the user typed it.
 */
export function numberArgument(text: string, what: string, range: { min: number; max?: number; integer?: boolean }): number {
  const value = text.trim() === '' ? Number.NaN : Number(text);
  const integer = range.integer ?? true;
  if (Number.isFinite(value) && (!integer || Number.isInteger(value)) && value >= range.min && (range.max === undefined || value <= range.max)) return value;
  const kind = integer ? 'a whole number' : 'a number';
  const bounds = range.max === undefined ? `${range.min} or more` : `from ${range.min} to ${range.max}`;
  throw new CliExit(`${what} ${JSON.stringify(text)}: expected ${kind} ${bounds}.`);
}

/** Node's file-system error codes that mean "this path is wrong", in words. */
const PATH_PROBLEMS: Record<string, string> = {
  ENOENT: 'no such file or folder',
  EISDIR: 'it is a folder',
  ENOTDIR: 'a part of the path is not a folder',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EEXIST: 'it already exists',
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space left on the device',
};

/**
 * A file-system error about a path the user gave (`--out`, an import file, an export folder) as one
 * line naming the path, or undefined for any other error (a bug, whose stack is worth seeing).
 */
export function pathErrorText(error: unknown): string | undefined {
  const fsError = error as NodeJS.ErrnoException;
  const problem = typeof fsError?.code === 'string' ? PATH_PROBLEMS[fsError.code] : undefined;
  if (problem === undefined || typeof fsError.syscall !== 'string') return undefined;
  return fsError.path ? `${fsError.path}: ${problem}.` : `${problem} (${fsError.syscall}).`;
}

/** What a command prints for an error it did not expect: the path's problem in words, else the message. */
export function errorText(error: unknown): string {
  return pathErrorText(error) ?? (error as Error).message;
}

/**
 * Opens a file the user named for an export of private data (memories, conversations), truncated and
 * readable by the owner only. `open`'s mode applies only when it creates the file: an export over an
 * existing 0644 file would leave the data world-readable, so the mode is set on the open file too.
 */
export function openPrivateFile(path: string): number {
  const fd = openSync(path, 'w', PRIVATE_FILE_MODE);
  fchmodSync(fd, PRIVATE_FILE_MODE);
  return fd;
}

/** A file the user named, read as text; a path that cannot be read is a CliExit naming it. */
export function readUserFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const problem = pathErrorText(error);
    if (problem === undefined) throw error;
    // Reading a folder fails in read(), whose error does not carry the path.
    throw new CliExit(problem.startsWith(`${path}:`) ? problem : `${path}: ${problem.replace(/ \(\w+\)\.$/, '.')}`);
  }
}
