import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { makeFolders } from './make-folders.js';

/**
 * Writes a file so that readers see either the old or the new content, never half of it:
 * a temp file beside the target, fsync, then rename. `mode` applies to the new file (0600 for keys).
 */
export function writeFileAtomic(path: string, content: string | Buffer, options: { mode?: number } = {}): void {
  const directory = dirname(path);
  const mode = options.mode ?? 0o644;
  // A private file (a key, the config) gets private folders when it makes them: `config set` or
  // `setup` on a fresh install creates $METACLAW_HOME here, which must be 0700 as `start` makes it.
  makeFolders(directory, (mode & 0o077) === 0 ? 0o700 : undefined);
  const temporary = join(directory, `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const descriptor = openSync(temporary, 'wx', mode);
  try {
    writeSync(descriptor, typeof content === 'string' ? Buffer.from(content, 'utf8') : content);
    fsyncSync(descriptor);
  } catch (error) {
    closeSync(descriptor);
    rmSync(temporary, { force: true });
    throw error;
  }
  closeSync(descriptor);
  // openSync's mode is filtered by the umask; set it exactly.
  chmodSync(temporary, mode);
  try {
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}
