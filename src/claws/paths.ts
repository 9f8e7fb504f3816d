import { isAbsolute, join, resolve } from 'node:path';
import type { ClawEnvironment } from './types.js';

/** An environment variable's value, or undefined when unset or blank. */
export function variable(environment: ClawEnvironment, name: string): string | undefined {
  const value = environment.env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

/** `~` and `~/…` expand to the home folder; other relative paths resolve from the working folder, as the agent would. */
export function expandHome(environment: ClawEnvironment, path: string): string {
  if (path === '~') return environment.home;
  if (path.startsWith('~/')) return join(environment.home, path.slice(2));
  return isAbsolute(path) ? path : resolve(path);
}

export function inHome(environment: ClawEnvironment, ...segments: string[]): string {
  return join(environment.home, ...segments);
}

/** The folder named by `name` (an agent's *_HOME-style variable), else the default under HOME. */
export function folderFrom(environment: ClawEnvironment, name: string, ...defaultSegments: string[]): string {
  const value = variable(environment, name);
  return value === undefined ? inHome(environment, ...defaultSegments) : expandHome(environment, value);
}
