import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import pino, { type Logger } from 'pino';

export type { Logger } from 'pino';

/** Paths that must never reach a log line, whatever a caller passes in. */
const REDACTED_PATHS = [
  'authorization',
  'headers.authorization',
  'headers["x-api-key"]',
  'headers["x-metaclaw-api-key"]',
  'api_key',
  'apiKey',
  '*.api_key',
  '*.apiKey',
  '*.authorization',
];

export interface LoggerOptions {
  level: string;
  /** JSON lines go to this file; undefined: standard output only. */
  file?: string;
  /** Also write to standard output (foreground runs). */
  stdout?: boolean;
}

/** Structured JSON-lines logger. Writes are asynchronous so logging never sits on the request path. */
export function createLogger(options: LoggerOptions): Logger {
  const streams: pino.StreamEntry[] = [];
  if (options.file) {
    mkdirSync(dirname(options.file), { recursive: true });
    // Lines are written in 4 KB batches (one write per few requests, not one per line), and at least
    // every half second so `tail -f` stays current; pino flushes at exit, shutdown flushes too.
    const file = pino.destination({ dest: options.file, sync: false, mkdir: true, minLength: 4_096 });
    setInterval(() => file.flush(), 500).unref();
    streams.push({ level: options.level as pino.Level, stream: file });
  }
  if (options.stdout || !options.file) streams.push({ level: options.level as pino.Level, stream: pino.destination({ dest: 1, sync: false }) });
  return pino(
    {
      level: options.level,
      base: { pid: process.pid },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    pino.multistream(streams),
  );
}

/** A logger that drops everything (CLI commands that only read). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
