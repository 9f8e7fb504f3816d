import pg from 'pg';
import { maskDatabaseUrl } from '../../config/database-url.js';
import { errorMessage, StoreError } from '../../errors.js';

/**
 * The team store's connection pool. Loaded only through a dynamic `import()` from the commands
 * that work on PostgreSQL, so the personal path never loads `pg`.
 */

export interface PoolOptions {
  /** Longest a statement may run before PostgreSQL cancels it (default 30 s). */
  readonly statementTimeoutMs?: number;
  /** Longest to wait for a connection (default 5 s): an unreachable store fails fast. */
  readonly connectTimeoutMs?: number;
  readonly max?: number;
}

export function openPool(url: string, options: PoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    application_name: 'metaclaw',
    statement_timeout: options.statementTimeoutMs ?? 30_000,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
    max: options.max ?? 4,
  });
  return hearConnectionErrors(pool);
}

/**
 * A connection the server ends (a restart, a terminated backend, a cut network path) emits 'error':
 * on the pool while it is idle, and on the client itself while it is checked out — between two
 * statements of a transaction too, and pg-pool takes its own listener off a client it hands out.
 * Unheard, either ends the process (or, in a serving node, escapes every handler). Heard here and
 * dropped: the statement in flight, or the next one, fails where its caller handles it, and the pool
 * replaces the broken client when it comes back.
 */
export function hearConnectionErrors(pool: pg.Pool): pg.Pool {
  pool.on('error', () => undefined);
  // 'connect' fires once for each new client: one listener for its whole life.
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

/** SQLSTATE classes and socket codes that mean "could not get a working connection". */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
  '57P01',
  '57P02',
  '57P03',
]);
const UNREACHABLE_CLASSES = ['08', '28', '3D']; // connection exception, invalid authorization, invalid catalog (no such database)

/** Whether an error from the pool means the store could not be reached (rather than a failed statement). */
export function isUnreachable(error: unknown): boolean {
  const code = errorCode(error);
  if (code && (UNREACHABLE_CODES.has(code) || UNREACHABLE_CLASSES.some((prefix) => code.startsWith(prefix)))) return true;
  return /timeout expired|connection timeout|Connection terminated|not queryable|terminating connection/i.test(errorMessage(firstError(error)));
}

/**
 * One line for a user: what failed, where (the URL with its password masked), and why. The
 * password is also scrubbed from the reason, should a driver message ever echo it.
 */
export function describeStoreError(error: unknown, url: string): string {
  if (error instanceof StoreError) return scrub(error.message, url);
  const cause = firstError(error);
  const code = errorCode(error);
  const reason = scrub(errorMessage(cause).split('\n')[0] || code || 'unknown error', url);
  const where = maskDatabaseUrl(url);
  return isUnreachable(error) ? `Cannot reach the team store at ${where}: ${reason}` : `The team store at ${where} failed: ${reason}`;
}

/** `localhost` resolves to two addresses: node reports both refusals as one AggregateError with no message. */
function firstError(error: unknown): unknown {
  return error instanceof AggregateError && error.errors.length > 0 ? error.errors[0] : error;
}

function errorCode(error: unknown): string | undefined {
  const code = (firstError(error) as { code?: unknown } | null)?.code ?? (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function scrub(text: string, url: string): string {
  let password = '';
  try {
    password = decodeURIComponent(new URL(url).password);
  } catch {
    // not a URL: nothing to scrub beyond what the mask hides
  }
  return password.length >= 3 ? text.split(password).join('****') : text;
}
