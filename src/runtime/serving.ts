import type { Server } from 'node:http';
import { maskDatabaseUrl, type LoadedConfig, type UpstreamTarget } from '../config/index.js';
import type { ContextPlanner } from '../context/index.js';
import { ConfigError, errorMessage } from '../errors.js';
import { createLogger, type Logger } from '../logging/index.js';
import type { ProxyMetrics } from '../metrics/index.js';
import { ResponsesHistory, type AfterServing, type ProxyAuth, type ProxyDeps, type ProxyStats } from '../proxy/index.js';
import type { ConversationPort } from '../proxy/types.js';
import { listModels, type UpstreamForwarder } from '../upstream/index.js';
import { VERSION } from '../version.js';
import { isProcessAlive, readPidFile, removePidFile, writePidFile } from './pid-file.js';

/** What both runtimes (personal and team node) share about serving: their dependencies, the pid file, listening, the last-resort error handler. */

/** Listens on host:port; a port or host that cannot be listened on becomes a ConfigError that says what to do. */
export function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      const problem = listenProblem(error.code, host, port);
      reject(problem === undefined ? error : new ConfigError(problem));
    });
    server.listen(port, host, () => resolve());
  });
}

/** Why listening failed, in the user's terms, for the failures their host or port settings cause. */
function listenProblem(code: string | undefined, host: string, port: number): string | undefined {
  const chooseHost = 'set proxy.host (or --host) to an address of this machine, or 127.0.0.1';
  switch (code) {
    case 'EADDRINUSE':
      return `Port ${port} on ${host} is already in use; choose another with --port or proxy.port.`;
    case 'EACCES':
      return `Listening on port ${port} needs privileges this user lacks (ports below 1024); choose another with --port or proxy.port.`;
    case 'EADDRNOTAVAIL':
      return `${host} is not an address of this machine; ${chooseHost}.`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `The host name ${JSON.stringify(host)} does not resolve to an address; ${chooseHost}.`;
    default:
      return undefined;
  }
}

/** An upstream as /status, the dashboard and the log show it: a password in its URL (`user:password@host`) masked. */
export function describeTarget(target: UpstreamTarget) {
  return { name: target.name, base_url: maskDatabaseUrl(target.baseUrl), format: target.format, model: target.model ?? null, key_source: target.keySource };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Shuts the server down (both runtimes alike): stops accepting, lets running requests finish for up
 * to `graceMs`, lets `cut` end those still running, then closes every connection.
 */
export async function closeServer(server: Server, stats: { readonly active: number }, graceMs: number, cut: () => void | Promise<void>): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const deadline = Date.now() + graceMs;
  while (stats.active > 0 && Date.now() < deadline) await sleep(50);
  if (stats.active > 0) await cut();
  server.closeAllConnections();
  await closed;
}

/** The runtime's log, as log.* configures it (`foreground`: also on stdout). */
export function runtimeLogger(config: LoadedConfig, foreground: boolean | undefined): Logger {
  const { values, paths } = config;
  return createLogger({
    level: values['log.level'],
    file: paths.logFile,
    stdout: foreground,
    rotation: { maxBytes: Math.round(values['log.max_size_mb'] * 1024 * 1024), maxFiles: values['log.max_files'] },
  });
}

/**
 * Listens on proxy.host:proxy.port; then errors that escape every handler go to `lastResort`, and the pid file says where this process serves.
 * `listening` runs as soon as the port is taken, so a shutdown closes the server even if writing the pid file fails.
 */
export async function startServing(
  server: Server,
  config: LoadedConfig,
  startedAt: number,
  lastResort: (error: unknown) => void,
  listening: () => void,
): Promise<void> {
  const { values, paths } = config;
  await listen(server, values['proxy.host'], values['proxy.port']);
  listening();
  process.on('uncaughtException', lastResort);
  process.on('unhandledRejection', lastResort);
  announceServing(paths.pidFile, values['proxy.host'], values['proxy.port'], startedAt, values['store.url']);
}

/** The last of a shutdown: the pid file removed, `lastResort` handed back, "stopped" logged and the log flushed. */
export async function endServing(config: LoadedConfig, lastResort: (error: unknown) => void, logger: Logger): Promise<void> {
  removePidFile(config.paths.pidFile, process.pid);
  process.off('uncaughtException', lastResort);
  process.off('unhandledRejection', lastResort);
  logger.info('stopped');
  await new Promise<void>((resolve) => logger.flush(() => resolve()));
}

/** Refuses to start a second proxy on the same home: its pid file names a live process. */
export function refuseIfRunning(pidFile: string): void {
  const existing = readPidFile(pidFile);
  if (existing && existing.pid !== process.pid && isProcessAlive(existing.pid)) {
    throw new ConfigError(`MetaClaw is already running (pid ${existing.pid}, http://${existing.host}:${existing.port}); stop it first with \`metaclaw stop\`.`);
  }
}

/**
 * Says where this process serves, for `metaclaw stop` and `status`, and (a node) which team store,
 * password masked: the CLI's store commands refuse the install's own database while a node runs.
 */
export function announceServing(pidFile: string, host: string, port: number, startedAt: number, storeUrl = ''): void {
  writePidFile(pidFile, {
    pid: process.pid,
    host,
    port,
    startedAt: new Date(startedAt).toISOString(),
    version: VERSION,
    ...(storeUrl ? { store: maskDatabaseUrl(storeUrl) } : {}),
  });
}

/**
 * What to do with an error that escaped every handler (a bug in one request's path, a failed timer,
 * a database connection's late 'error' event): log it, count it and show it in /status, and keep
 * serving, because every agent's access to its LLM goes through this process.
 */
export function reportEscapedError(stats: ProxyStats, logger: Logger, error: unknown): void {
  stats.uncaughtErrors++;
  stats.rememberError('-', null, `uncaught: ${errorMessage(error)}`);
  try {
    logger.error({ err: error }, 'an error escaped its handler; the proxy keeps serving');
  } catch {
    process.stderr.write(`metaclaw: an error escaped its handler (${errorMessage(error)}); the proxy keeps serving\n`);
  }
}

/**
 * A runtime (personal or team node) as serving reads it: both name these parts the same, and the
 * proxy's shared dependencies are read off it here, once.
 */
export interface ServingRuntime {
  readonly options: { readonly config: LoadedConfig };
  readonly auth: ProxyAuth;
  readonly forwarder: UpstreamForwarder;
  readonly conversation: ConversationPort;
  readonly stats: ProxyStats;
  readonly metrics: ProxyMetrics;
  readonly logger: Logger;
  readonly pendingRecords: Map<string, Promise<void>>;
  readonly afterServing: AfterServing;
  statusReport(): Record<string, unknown>;
}

/** The proxy's dependencies: the runtime's shared parts and its context planner, plus what each runtime serves on its own (routes, store health, an RL policy). */
export function servingDeps(
  runtime: ServingRuntime,
  context: ContextPlanner,
  own: Pick<ProxyDeps, 'routeGroups' | 'health'> & Pick<Partial<ProxyDeps>, 'policy'>,
): ProxyDeps {
  const { auth, forwarder, conversation, stats, metrics, logger, pendingRecords, afterServing } = runtime;
  const values = runtime.options.config.values;
  return {
    auth,
    forwarder,
    conversation,
    context,
    stats,
    metrics,
    logger,
    statusReport: () => runtime.statusReport(),
    pendingRecords,
    afterServing,
    ...own,
    maxBodyBytes: Math.round(values['proxy.max_body_mb'] * 1024 * 1024),
    // Any positive setting times out (a tiny one rounded to 0 ms would turn the limit off).
    requestTimeoutMs: values['proxy.request_timeout_seconds'] > 0 ? Math.max(1, Math.round(values['proxy.request_timeout_seconds'] * 1000)) : 0,
    defaultScope: values['memory.scope'],
    listModels: (clientFormat, credentials) => listModels(forwarder.mainTarget, credentials, clientFormat, values['proxy.served_model_name'], 10_000),
    responses: new ResponsesHistory(conversation, pendingRecords),
  };
}
