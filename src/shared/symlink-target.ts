import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * The file a write to `path` should replace, so that an atomic write (temp file + rename) goes
 * through a symlink (a dotfiles manager's) instead of replacing the link with a file. A link whose
 * target does not exist yet resolves to that target (the file is created there). Undefined for a
 * symlink loop, which the caller refuses in its own words.
 */
export function symlinkTarget(path: string): string | undefined {
  const seen = new Set<string>();
  let current = path;
  while (!existsSync(current) && lstatSync(current, { throwIfNoEntry: false })?.isSymbolicLink() === true) {
    if (seen.has(current)) return undefined;
    seen.add(current);
    current = resolve(dirname(current), readlinkSync(current));
  }
  return existsSync(current) ? realpathSync(current) : current;
}
