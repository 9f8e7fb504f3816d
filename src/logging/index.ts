import pino, { type Logger } from 'pino';
import { LogFile, type LogRotation } from './log-file.js';

export type { Logger } from 'pino';

/** Keys whose values never reach a log line, at the top of a log object or one level down. */
const SECRET_KEY_SPELLINGS = ['authorization', 'Authorization', 'proxy-authorization', 'x-api-key', 'x-metaclaw-api-key', 'api_key', 'apiKey', 'cookie'];
const SECRET_KEYS = new Set(SECRET_KEY_SPELLINGS.map((key) => key.toLowerCase()));
const CENSOR = '[redacted]';

function isSecretKey(key: string): boolean {
  return SECRET_KEYS.has(key.toLowerCase());
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Error);
}

/**
 * Censors secrets in a log object. Copies only what it changes: a line without secrets (nearly
 * all of them) costs a key scan and no allocation. pino's own `redact` clones every object that a
 * wildcard path could match, on every line, which showed up as 13 % of the proxy's allocations.
 */
export function censorSecretFields(object: Record<string, unknown>): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const key in object) {
    const value = object[key];
    let replacement: unknown = value;
    if (isSecretKey(key)) replacement = CENSOR;
    else if (isPlainObject(value)) {
      for (const inner in value) {
        if (!isSecretKey(inner)) continue;
        replacement = { ...value };
        for (const name in replacement as Record<string, unknown>) if (isSecretKey(name)) (replacement as Record<string, unknown>)[name] = CENSOR;
        break;
      }
    }
    if (replacement !== value) (copy ??= { ...object })[key] = replacement;
  }
  return copy ?? object;
}

export interface LoggerOptions {
  level: string;
  /** JSON lines go to this file; undefined: standard output only. */
  file?: string;
  /** Also write to standard output (foreground runs). */
  stdout?: boolean;
  /** When the file is rotated (default: never). */
  rotation?: LogRotation;
}

/**
 * Structured JSON-lines logger. The file is written synchronously in batches (log-file.ts):
 * asynchronous writes cost more, each one went through libuv's thread pool and woke a thread on
 * this 2-core machine.
 */
export function createLogger(options: LoggerOptions): Logger {
  const streams: pino.StreamEntry[] = [];
  if (options.file) streams.push({ level: options.level as pino.Level, stream: new LogFile(options.file, options.rotation) });
  if (options.stdout || !options.file) streams.push({ level: options.level as pino.Level, stream: pino.destination({ dest: 1, sync: false }) });
  const settings: pino.LoggerOptions = {
    level: options.level,
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }), log: censorSecretFields },
    // pino does not pass a child's bindings through `formatters`; its serializers do see them.
    serializers: Object.fromEntries(SECRET_KEY_SPELLINGS.map((key) => [key, () => CENSOR])),
  };
  // One destination (the daemon's file) is written to directly: pino's multistream costs per line.
  return streams.length === 1 ? pino(settings, streams[0]!.stream) : pino(settings, pino.multistream(streams));
}

/** A logger that drops everything (CLI commands that only read). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

export { LogFile, stderrLine, type LogRotation } from './log-file.js';
