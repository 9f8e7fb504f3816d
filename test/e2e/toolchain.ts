/**
 * Real agent CLIs for end-to-end tests, pinned and installed from the npm registry once into a
 * cache folder outside the checkout ($METACLAW_E2E_CACHE, default ~/.cache/metaclaw-e2e), so later
 * runs start in seconds. A CLI that cannot run on MetaClaw's Node 20 gets a pinned Node 24 binary,
 * itself an npm package (`node-<platform>-<arch>`), shared by every CLI that needs it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';

const NODE24_VERSION = '24.22.3';

export interface AgentPackage {
  /** npm package name */
  name: string;
  version: string;
  /** the launcher it puts in node_modules/.bin */
  binary: string;
  /** its install and launcher need Node >= 22 */
  node24?: boolean;
}

export interface Toolchain {
  /** the launcher's full path */
  command: string;
  /** PATH with the launcher's folder on it (as after a global install), behind the Node 24 folder when the package needs it */
  path: string;
}

/** Why a package could not be installed, when that was the network or the registry (not the package). */
export class RegistryUnavailable extends Error {}

/** npm's words for a registry it could not reach or that would not serve the package. */
const REGISTRY_FAILURE =
  /\b(?:ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|ERR_SOCKET_TIMEOUT|E404|E429|E5\d\d|EINTEGRITY)\b|network|fetch failed/i;

function cacheFolder(): string {
  return process.env['METACLAW_E2E_CACHE'] ?? join(homedir(), '.cache', 'metaclaw-e2e');
}

/** `npm install` into `folder`; with `nodeBin`, npm and every install script run on that Node. */
function npmInstall(folder: string, spec: string, nodeBin?: string): void {
  mkdirSync(folder, { recursive: true });
  if (!existsSync(join(folder, 'package.json'))) writeFileSync(join(folder, 'package.json'), '{"name":"metaclaw-e2e-cache","private":true}\n');
  const env = nodeBin ? onNode(nodeBin) : process.env;
  try {
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', '--save-exact', spec], {
      cwd: folder,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 15 * 60_000,
    });
  } catch (error) {
    const stderr = ((error as { stderr?: Buffer | string }).stderr ?? '').toString().trim();
    if (REGISTRY_FAILURE.test(stderr)) throw new RegistryUnavailable(`npm install ${spec} failed: ${npmReason(stderr)}`, { cause: error });
    throw new Error(`npm install ${spec} failed: ${stderr.slice(-3000) || (error as Error).message}`, { cause: error });
  }
}

/**
 * npm's environment on another Node. npm looks for the machine's global npmrc (a registry mirror, the
 * `cafile` of a TLS-inspecting proxy) next to the Node it runs on, so it is named; a native module is
 * built against that Node's own headers (its npm package has them), not the system's.
 */
function onNode(nodeBin: string): NodeJS.ProcessEnv {
  globalConfig ??= execFileSync('npm', ['config', 'get', 'globalconfig'], { encoding: 'utf8' }).trim();
  return {
    ...process.env,
    PATH: `${nodeBin}${delimiter}${process.env['PATH'] ?? ''}`,
    npm_config_globalconfig: process.env['npm_config_globalconfig'] ?? globalConfig,
    npm_config_nodedir: dirname(nodeBin),
  };
}

let globalConfig: string | undefined;

/** npm's error code and its first line of explanation ("code ECONNREFUSED: FetchError: request to … failed"). */
function npmReason(stderr: string): string {
  const lines = stderr.split('\n').map((line) => line.replace(/^npm (?:error|ERR!)\s*/, '').trim());
  const code = lines.find((line) => line.startsWith('code '));
  const detail = lines.find((line) => line !== '' && !/^(?:code|errno|syscall) /.test(line));
  return [code, detail].filter(Boolean).join(': ');
}

/**
 * Installs once; a marker says the install finished (an interrupted one is redone) and on which Node
 * it ran, since native modules are built for it. Test files run in parallel and share packages (the
 * Node 24 above all), so the install holds a lock: the second process waits, then finds it done.
 */
function ensureInstalled(folder: string, spec: string, launcher: string, nodeBin?: string): void {
  const done = join(folder, nodeBin ? `.complete-node-${NODE24_VERSION}` : '.complete');
  const installed = () => existsSync(done) && existsSync(launcher);
  if (installed()) return;
  withLock(`${folder}.lock`, () => {
    if (installed()) return;
    npmInstall(folder, spec, nodeBin);
    writeFileSync(done, `${new Date().toISOString()}\n`);
  });
}

/** How long a process waits for another's install of the same package (a cold one takes minutes). */
const LOCK_WAIT_MS = 20 * 60_000;

/**
 * Runs `work` holding a lock folder (mkdir is atomic) that names its process; a lock whose process is
 * gone (killed mid-install) is taken over. Waiting blocks: installs happen while the test files load.
 */
function withLock(lock: string, work: () => void): void {
  mkdirSync(join(lock, '..'), { recursive: true });
  const deadline = Date.now() + LOCK_WAIT_MS;
  while (!tryLock(lock)) {
    if (!holderAlive(lock)) {
      rmSync(lock, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`another process has been installing into ${lock.replace(/\.lock$/, '')} for ${LOCK_WAIT_MS / 60_000} minutes`);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
  }
  try {
    writeFileSync(join(lock, 'pid'), String(process.pid));
    work();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** Makes the lock folder; false when another process has it. */
function tryLock(lock: string): boolean {
  try {
    mkdirSync(lock);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/** Whether the process named in the lock still runs; a lock without a pid is held while it is new (its pid is being written). */
function holderAlive(lock: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(lock, 'pid'), 'utf8'));
  } catch {
    try {
      return Date.now() - statSync(lock).mtimeMs < 10_000;
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The folder holding the pinned Node 24's `node`. */
export function ensureNode24(): string {
  const nodePackage = `node-${process.platform}-${process.arch}`;
  const folder = join(cacheFolder(), `node-${NODE24_VERSION}`);
  const nodeBin = join(folder, 'node_modules', nodePackage, 'bin');
  ensureInstalled(folder, `${nodePackage}@${NODE24_VERSION}`, join(nodeBin, 'node'));
  return nodeBin;
}

/** The pinned package, installed (on Node 24 when it needs it: its install scripts may refuse Node 20). */
export function ensurePackage(agent: AgentPackage): Toolchain {
  const nodeBin = agent.node24 ? ensureNode24() : undefined;
  const folder = join(cacheFolder(), `${agent.name.replace(/^@/, '').replace('/', '+')}-${agent.version}`);
  const binFolder = join(folder, 'node_modules', '.bin');
  const command = join(binFolder, agent.binary);
  ensureInstalled(folder, `${agent.name}@${agent.version}`, command, nodeBin);
  return { command, path: [nodeBin, binFolder, process.env['PATH'] ?? '/usr/bin:/bin'].filter(Boolean).join(delimiter) };
}

/** A pinned agent ready to run, or why its tests are skipped, or why they fail. */
export type Installed = { toolchain: Toolchain } | { skip: string } | { failure: Error };

/**
 * Installs the pinned package. When the registry or the network would not provide it, its tests are
 * skipped with npm's reason; any other install failure fails them (a skip would hide it).
 */
export function installAgent(agent: AgentPackage): Installed {
  try {
    return { toolchain: ensurePackage(agent) };
  } catch (error) {
    if (error instanceof RegistryUnavailable) return { skip: `${agent.name}@${agent.version} could not be installed: ${error.message}` };
    return { failure: error instanceof Error ? error : new Error(String(error)) };
  }
}
