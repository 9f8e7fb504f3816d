/**
 * Log levels, in a module of their own with no imports: the config schema, the CLI and the
 * dashboard's bundle all read them.
 */

/** pino's levels, lowest first; the log writes them as labels (logging/index.ts). */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The levels `log.level` may be set to, and so the ones a reader filters by (`logs --level`, the dashboard's Log page). */
export const CONFIG_LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
