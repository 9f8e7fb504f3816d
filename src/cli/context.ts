import { loadConfig, type LoadedConfig } from '../config/index.js';
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
