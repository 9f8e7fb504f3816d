import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, statfsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CLAW_TYPES,
  DATABASE_URL_VARIABLE,
  exposedConfigFile,
  exposedConfigWarning,
  makeHomePrivate,
  missingKeyVariables,
  octal,
  openHomeWarning,
  writeConfigSchema,
  type LoadedConfig,
} from '../config/index.js';
import { ConfigError } from '../errors.js';
import { decideMode } from '../rl/index.js';
import { isProcessAlive, MetaclawRuntime, readPidFile } from '../runtime/index.js';
import { boundHeapGrowth, PROXY_ENVIRONMENT, PROXY_NODE_FLAGS } from '../runtime/memory-bounds.js';
import { VERSION } from '../version.js';
import { baseUrl, CliExit, loadCliConfig, numberArgument, print, printError } from './context.js';
import { getJson, isHealthy } from './proxy-client.js';
import { makeFolders } from '../shared/make-folders.js';

export interface StartOptions {
  foreground?: boolean;
  daemon?: boolean;
  port?: string;
  host?: string;
  mode?: string;
  config?: string;
  wait?: string;
  claw?: string;
  /** false with --no-wire */
  wire?: boolean;
  /** `--store URL`: the team store (over store.url and METACLAW_DATABASE_URL). */
  store?: string;
}

/** `metaclaw start`: daemonises by default and returns once /healthz answers; `--foreground` runs here. */
export async function startCommand(options: StartOptions): Promise<void> {
  // Checked before anything starts: a NaN here would make the wait for /healthz end at once.
  if (options.wait !== undefined) numberArgument(options.wait, '--wait', { min: 1, integer: false });
  // A mistyped agent is refused here, as a mistyped --mode is, not found out after the proxy started.
  if (options.claw !== undefined && !(CLAW_TYPES as readonly string[]).includes(options.claw))
    throw new CliExit(`--claw "${options.claw}" is not an agent MetaClaw knows; use one of ${CLAW_TYPES.join(', ')}.`);
  const overrides = { 'proxy.port': options.port, 'proxy.host': options.host, mode: options.mode, 'store.url': options.store };
  const config = loadCliConfig({ ...(options.config ? { config: options.config } : {}), overrides });
  const mode = decideMode(config.values);
  // `rl`/`auto` without a training backend runs as skills_only: said at start, not found out later.
  const modeWarnings = mode.effective === mode.configured ? [] : [mode.reason];
  const warnings = [...privacyWarnings(config), ...missingKeyVariables(config), ...modeWarnings];
  // Editors validate config.yaml against it: kept current with the installed version's keys.
  writeConfigSchema(config.home);
  if (options.foreground) {
    await runForeground(config, warnings);
    // The daemon child is started by a parent that wires the agent once the proxy answers.
    if (process.env['METACLAW_DAEMON'] !== '1') await wireAgent(config, options);
    return;
  }
  if (await startDaemon(config, options, warnings)) await wireAgent(config, options);
}

/** What `start` runs: the personal proxy, or a node of a team store. */
interface ServingRuntime {
  readonly logger: { warn(message: string): void };
  start(): Promise<{ url: string }>;
  stop(reason?: string): Promise<void>;
  statusReport(): Record<string, unknown>;
}

/** The team runtime (and `pg`) is loaded only when config names a team store: the personal path never loads it. */
async function createRuntime(config: LoadedConfig, foreground: boolean): Promise<ServingRuntime> {
  if (!config.values['store.url']) return new MetaclawRuntime({ config, foreground });
  const { TeamRuntime } = await import('../runtime/team-app.js');
  return new TeamRuntime({ config, foreground });
}

/** Makes `$METACLAW_HOME` private and returns what is still open to other users, as warnings. */
function privacyWarnings(config: LoadedConfig): string[] {
  const home = makeHomePrivate(config.home);
  if (home.tightenedFrom !== undefined) printError(`note: ${config.home} is now private (0700; it was ${octal(home.tightenedFrom)})`);
  const warnings: string[] = [];
  if (home.leftOpen) warnings.push(openHomeWarning(home.leftOpen));
  const exposed = exposedConfigFile(config);
  if (exposed) warnings.push(exposedConfigWarning(exposed));
  return warnings;
}

/** Points the agent at the proxy now that it answers (a no-op when it already is). */
async function wireAgent(config: LoadedConfig, options: StartOptions): Promise<void> {
  if (options.wire === false) return;
  const { wireConfiguredClaw } = await import('./claw.js');
  await wireConfiguredClaw(config, options.claw);
}

/** `warnings`: what start found beyond the config's own warnings (printed, and logged by the proxy). */
async function runForeground(config: LoadedConfig, warnings: string[]): Promise<void> {
  const daemonised = process.env['METACLAW_DAEMON'] === '1';
  let runtime: ServingRuntime;
  boundHeapGrowth();
  try {
    runtime = await createRuntime(config, !daemonised);
    await runtime.start();
  } catch (error) {
    if (error instanceof ConfigError) throw new CliExit(error.message);
    throw error;
  }
  const stop = (signal: string) => {
    runtime.stop(`received ${signal}`).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  for (const warning of [...config.warnings, ...warnings]) printError(`warning: ${warning}`);
  for (const warning of warnings) runtime.logger.warn(warning); // the runtime logs config.warnings itself
  if (!daemonised) printBanner(config, process.pid, runtime.statusReport());
}

/** Resolves true once the proxy (new or already running) answers. */
async function startDaemon(config: LoadedConfig, options: StartOptions, warnings: string[]): Promise<boolean> {
  const { paths, values } = config;
  const base = baseUrl(values['proxy.host'], values['proxy.port']);
  const existing = readPidFile(paths.pidFile);
  if (existing && isProcessAlive(existing.pid)) {
    const existingBase = baseUrl(existing.host, existing.port);
    if (await isHealthy(existingBase)) {
      // A second proxy cannot share the home's database and pid file: say where the running one is.
      if (existing.port !== values['proxy.port']) {
        throw new CliExit(
          `MetaClaw is already running (pid ${existing.pid}) at ${existingBase}, on port ${existing.port}, not ${values['proxy.port']}; run \`metaclaw stop\` first to move it to port ${values['proxy.port']}.`,
        );
      }
      print(`MetaClaw is already running (pid ${existing.pid}) at ${existingBase}.`);
      return true;
    }
    throw new CliExit(`A MetaClaw process (pid ${existing.pid}) holds ${paths.pidFile} but does not answer at ${existingBase}; run \`metaclaw stop\` first.`);
  }
  for (const warning of [...config.warnings, ...warnings]) printError(`warning: ${warning}`);

  // Private like the home it is in: the logs hold request summaries.
  makeFolders(paths.logDir, 0o700);
  const outputFile = join(paths.logDir, 'metaclaw.out');
  const outputStart = fileSize(outputFile);
  const output = openSync(outputFile, 'a', 0o600);
  const args = [...entryArguments(), 'start', '--foreground'];
  if (options.config) args.push('--config', options.config);
  if (options.port) args.push('--port', options.port);
  if (options.host) args.push('--host', options.host);
  if (options.mode) args.push('--mode', options.mode);
  const child = spawn(process.execPath, [...PROXY_NODE_FLAGS, ...args], {
    detached: true,
    stdio: ['ignore', output, output],
    // The store's URL may hold a password: it goes by the environment, never the command line (ps shows that).
    env: { ...PROXY_ENVIRONMENT, ...process.env, METACLAW_DAEMON: '1', ...(options.store ? { [DATABASE_URL_VARIABLE]: options.store } : {}) },
  });
  closeSync(output);
  let exited: number | null | undefined;
  child.once('exit', (code) => {
    exited = code;
  });
  child.unref();

  const waitMs = numberArgument(options.wait ?? '20', '--wait', { min: 1, integer: false }) * 1000;
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    if (exited !== undefined) break;
    if (await isHealthy(base, 500)) {
      let status: Record<string, unknown> | undefined;
      try {
        const response = await getJson(`${base}/status`, values['proxy.api_key'] ? { apiKey: values['proxy.api_key'] } : {});
        status = response.body as Record<string, unknown>;
      } catch {
        status = undefined;
      }
      printBanner(config, child.pid ?? 0, status);
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const log = readTail(outputFile, outputStart) || diskFullNote(paths.home);
  if (exited === undefined) {
    throw new CliExit(
      `MetaClaw did not answer at ${base}/healthz within ${waitMs / 1000} s (pid ${child.pid}); see ${outputFile} and ${paths.logFile}.${log ? `\n${log}` : ''}`,
    );
  }
  throw new CliExit(`MetaClaw exited during start-up (code ${exited}).${log ? `\n${log}` : ` See ${outputFile}.`}`);
}

function printBanner(config: LoadedConfig, pid: number, status: Record<string, unknown> | undefined): void {
  const { values, paths } = config;
  const base = baseUrl(values['proxy.host'], values['proxy.port']);
  const upstream = (status?.['upstream'] ?? {}) as { base_url?: string; format?: string; key_source?: string; model?: string | null };
  print(`MetaClaw-TS ${VERSION} is running (pid ${pid}) at ${base}`);
  print(`  OpenAI-compatible clients:    base URL ${base}/v1`);
  print(`  Anthropic-compatible clients: base URL ${base}`);
  const store = status?.['store'] as { engine?: string; url?: string } | undefined;
  if (store?.engine === 'postgres') print(`  Team store:                   ${store.url} (this is one node; \`metaclaw status\` shows it)`);
  else print(`  Dashboard:                    ${base}/ui`);
  if (upstream.base_url) {
    const key = upstream.key_source === 'client' ? "the client's own key" : upstream.key_source === 'env' ? 'a key from the environment' : 'the configured key';
    print(`  Upstream: ${upstream.base_url} (${upstream.format}, ${upstream.model ? `model ${upstream.model}` : "client's model"}, ${key})`);
  }
  const mode = typeof status?.['mode'] === 'string' ? status['mode'] : values['mode'];
  const configured = typeof status?.['mode_configured'] === 'string' ? status['mode_configured'] : mode;
  const reason = typeof status?.['mode_reason'] === 'string' ? status['mode_reason'] : '';
  print(
    `  Mode: ${mode}${configured !== mode ? ` (configured: ${configured}; ${reason})` : ''}   Data: ${paths.home}   Logs: ${paths.logFile} (metaclaw logs -f)`,
  );
  if (!config.fileExists) print('  No config file yet: running on defaults. Run `metaclaw setup` to choose your provider and agent.');
}

/** How to re-run this CLI in a child process (compiled, or from source under tsx in development). */
function entryArguments(): string[] {
  const main = fileURLToPath(new URL('./main.js', import.meta.url));
  if (import.meta.url.endsWith('.ts')) return ['--import', 'tsx', fileURLToPath(new URL('./main.ts', import.meta.url))];
  return [main];
}

/**
 * Why a daemon could leave no word at all: its output file sits on the same disk as its data, and
 * a full disk swallows both. Says so plainly instead of pointing at an empty file.
 */
function diskFullNote(home: string): string {
  try {
    const stats = statfsSync(home);
    const free = stats.bavail * stats.bsize;
    if (free >= 1024 * 1024) return '';
    return `The disk holding ${home} is full (${Math.round(free / 1024)} KiB free): MetaClaw cannot write its database, pid file or logs there. Free some space (or set METACLAW_HOME to a folder on another disk) and start again.`;
  } catch {
    return '';
  }
}

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

function readTail(path: string, from: number): string {
  try {
    const text = readFileSync(path).subarray(from).toString('utf8').trim();
    return text.split('\n').slice(-15).join('\n');
  } catch {
    return '';
  }
}
