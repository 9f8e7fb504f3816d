import { execFile } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, isAbsolute, join } from 'node:path';
import type { ClawEnvironment, CommandOutcome } from './types.js';

const DEFAULT_TIMEOUT_MS = 15_000;
const TIMED_OUT_CODE = 124;

export interface RealEnvironmentOptions {
  home?: string;
  metaclawHome: string;
}

/** The environment of this process: its PATH, its environment variables, real commands. */
export function realEnvironment(options: RealEnvironmentOptions): ClawEnvironment {
  const env = process.env;
  return {
    home: options.home ?? homedir(),
    env,
    metaclawHome: options.metaclawHome,
    platform: process.platform,
    uid: process.getuid?.(),
    run: (command, args, runOptions) => runCommand(command, args, runOptions?.timeoutMs ?? DEFAULT_TIMEOUT_MS),
    which: (binary) => findOnPath(binary, env.PATH ?? '', process.platform, env.PATHEXT),
  };
}

function runCommand(command: string, args: readonly string[], timeoutMs: number): Promise<CommandOutcome> {
  return new Promise((resolve, reject) => {
    execFile(command, [...args], { timeout: timeoutMs, windowsHide: true, maxBuffer: 4 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error === null) {
        resolve({ code: 0, stdout, stderr });
        return;
      }
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        reject(Object.assign(new Error(error.message, { cause: error }), { code: 'ENOENT' }));
        return;
      }
      if (error.killed) {
        resolve({ code: TIMED_OUT_CODE, stdout, stderr: `${stderr}\n${command} timed out after ${timeoutMs} ms`.trim() });
        return;
      }
      const code = typeof error.code === 'number' ? error.code : 1;
      resolve({ code, stdout, stderr: stderr === '' ? error.message : stderr });
    });
  });
}

/** The first executable called `binary` in the PATH folders (with PATHEXT suffixes on Windows). */
export function findOnPath(binary: string, path: string, platform: NodeJS.Platform, pathExtensions?: string): string | undefined {
  const suffixes = platform === 'win32' ? ['', ...(pathExtensions ?? '.COM;.EXE;.BAT;.CMD').split(';').filter((suffix) => suffix !== '')] : [''];
  const folders = isAbsolute(binary) ? [''] : path.split(delimiter).filter((folder) => folder !== '');
  for (const folder of folders) {
    for (const suffix of suffixes) {
      const candidate = folder === '' ? `${binary}${suffix}` : join(folder, `${binary}${suffix}`);
      if (isExecutableFile(candidate, platform)) return candidate;
    }
  }
  return undefined;
}

function isExecutableFile(path: string, platform: NodeJS.Platform): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    if (platform !== 'win32') accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
