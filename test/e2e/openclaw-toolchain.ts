/**
 * The real OpenClaw for end-to-end tests: pinned `openclaw` and a pinned Node 24 binary from the npm
 * registry (OpenClaw cannot run on Node 20; MetaClaw itself stays on it). Installed once into a cache
 * folder outside the checkout, so later runs start in seconds.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';

export const OPENCLAW_VERSION = '2026.9.6';
export const NODE24_VERSION = '24.22.3';

export interface OpenclawToolchain {
  /** folder holding the `node` (24) binary */
  nodeBin: string;
  /** folder holding the `openclaw` launcher */
  openclawBin: string;
}

/** `npm install` into `folder`; with `nodeBin`, npm and every install script run on that Node. */
function npmInstall(folder: string, spec: string, nodeBin?: string): void {
  mkdirSync(folder, { recursive: true });
  if (!existsSync(join(folder, 'package.json'))) writeFileSync(join(folder, 'package.json'), '{"name":"metaclaw-e2e-cache","private":true}\n');
  const env = nodeBin ? { ...process.env, PATH: `${nodeBin}${delimiter}${process.env['PATH'] ?? ''}` } : process.env;
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', '--save-exact', spec], {
    cwd: folder,
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
    timeout: 15 * 60_000,
  });
}

export function ensureOpenclaw(): OpenclawToolchain {
  const cache = process.env['METACLAW_E2E_CACHE'] ?? join(homedir(), '.cache', 'metaclaw-e2e');
  const root = join(cache, `openclaw-${OPENCLAW_VERSION}`);
  const nodePackage = `node-${process.platform}-${process.arch}`;
  const toolchain = { nodeBin: join(root, 'node24', 'node_modules', nodePackage, 'bin'), openclawBin: join(root, 'node_modules', '.bin') };
  const done = join(root, `.complete-node-${NODE24_VERSION}`);
  if (existsSync(done) && existsSync(join(toolchain.nodeBin, 'node')) && existsSync(join(toolchain.openclawBin, 'openclaw'))) return toolchain;
  npmInstall(join(root, 'node24'), `${nodePackage}@${NODE24_VERSION}`);
  // OpenClaw's preinstall refuses Node 20: npm and its scripts must run on the Node 24 just fetched.
  npmInstall(root, `openclaw@${OPENCLAW_VERSION}`, toolchain.nodeBin);
  writeFileSync(done, `${new Date().toISOString()}\n`);
  return toolchain;
}
