import { chmodSync, existsSync, statSync } from 'node:fs';
import { ConfigError } from '../errors.js';
import type { LoadedConfig } from './load.js';
import { homeIsFileProblem } from './home.js';
import { KEY_DEFINITIONS } from './schema.js';
import type { KeyDefinition } from './types.js';
import { makeFolders } from '../shared/make-folders.js';

/**
 * `$METACLAW_HOME` holds the database (every conversation), logs, skills and usually the keys:
 * the folder is the owner's alone (0700), and so is a config file that holds a key (0600).
 */
export const PRIVATE_FOLDER_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** A file or folder that group or others can reach. */
export interface OpenPath {
  path: string;
  /** permission bits, e.g. 0o644 */
  mode: number;
  /** owned by the user running MetaClaw (only then can it be tightened) */
  ours: boolean;
}

/**
 * The keys the config file itself holds: secret keys set in it (a database URL only when it holds
 * a password), and the fallbacks' `api_key`s.
 */
export function keysInConfigFile(config: LoadedConfig): string[] {
  const values = config.values as unknown as Record<string, unknown>;
  const holdsSecret = (definition: KeyDefinition, value: unknown): boolean =>
    value !== '' && (!definition.mask || typeof value !== 'string' || definition.mask(value) !== value);
  const keys: string[] = (KEY_DEFINITIONS as readonly KeyDefinition[])
    .filter((definition) => definition.secret === true && config.fileKeys.has(definition.key) && holdsSecret(definition, values[definition.key]))
    .map((definition) => definition.key);
  config.values['llm.fallbacks'].forEach((entry, index) => {
    if (entry.api_key) keys.push(`llm.fallbacks.${index}.api_key`);
  });
  return keys;
}

/** The config file when it holds a key and group or others can read or change it. */
export function exposedConfigFile(config: LoadedConfig): (OpenPath & { keys: string[] }) | undefined {
  if (!config.fileExists) return undefined;
  const keys = keysInConfigFile(config);
  const open = keys.length > 0 ? openPath(config.file) : undefined;
  return open ? { ...open, keys } : undefined;
}

export function describeExposedConfig(file: OpenPath & { keys: string[] }): string {
  return `${file.path} holds ${file.keys.join(', ')} and is open to other users (mode ${octal(file.mode)})`;
}

/** The warning `start` gives, with the command that fixes it. */
export function exposedConfigWarning(file: OpenPath & { keys: string[] }): string {
  return `${describeExposedConfig(file)}: run \`chmod 600 ${file.path}\`${file.ours ? ' or `metaclaw doctor --fix`' : ' as its owner'}.`;
}

/** What making the home private did. */
export interface HomeOutcome {
  created?: boolean;
  /** the mode it had before it was made 0700 */
  tightenedFrom?: number;
  /** open, but another user's: it cannot be changed from here */
  leftOpen?: OpenPath;
}

/**
 * Creates `$METACLAW_HOME` as 0700, or tightens an existing one to 0700 when it is the user's own
 * (a folder another user owns, e.g. one shared on purpose, is reported instead).
 */
export function makeHomePrivate(home: string): HomeOutcome {
  if (!existsSync(home)) {
    makeFolders(home, PRIVATE_FOLDER_MODE);
    chmodSync(home, PRIVATE_FOLDER_MODE); // mkdir's mode passes through the umask
    return { created: true };
  }
  // A file is not tightened to 0700 (which would also make it executable): nothing is changed.
  const notAFolder = homeIsFileProblem(home);
  if (notAFolder) throw new ConfigError(notAFolder);
  const open = openPath(home);
  if (!open) return {};
  if (!open.ours) return { leftOpen: open };
  chmodSync(home, PRIVATE_FOLDER_MODE);
  return { tightenedFrom: open.mode };
}

export function openHomeWarning(home: OpenPath): string {
  return `${home.path} (MetaClaw's data, logs and keys) is open to other users (mode ${octal(home.mode)}) and belongs to another user; as its owner, run \`chmod 700 ${home.path}\`.`;
}

/** The path's mode and owner when group or others have any access to it; undefined when private or absent. */
export function openPath(path: string): OpenPath | undefined {
  let stats;
  try {
    stats = statSync(path);
  } catch {
    return undefined;
  }
  const mode = stats.mode & 0o777;
  if ((mode & 0o077) === 0) return undefined;
  return { path, mode, ours: process.getuid === undefined || stats.uid === process.getuid() };
}

export function octal(mode: number): string {
  return `0${mode.toString(8).padStart(3, '0')}`;
}
