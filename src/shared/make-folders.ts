import { mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * `mkdir -p`: creates `path` and any missing parent folders (each with `mode`, when given), and
 * does nothing when the folder exists. Node 20's own `mkdirSync(path, { recursive: true })`
 * never returns when the file system answers a create with ENOENT although the parent exists (any path
 * under /proc: `METACLAW_HOME=/proc/x`, `skills export /proc/x` spun forever); this walks the
 * missing folders itself, so such a path fails with the file system's own error.
 */
export function makeFolders(path: string, mode?: number): void {
  const target = resolve(path);
  // The missing folders, deepest first, up to the first thing that exists (a folder, or a file in the way).
  const missing: string[] = [];
  let existing: string | undefined;
  for (let folder = target; existing === undefined; folder = dirname(folder)) {
    if (exists(folder)) existing = folder;
    else missing.push(folder);
    if (dirname(folder) === folder) break;
  }
  if (existing === target) {
    // A file where the folder should be is EEXIST, as mkdirSync says.
    if (!statSync(target).isDirectory()) mkdirSync(target);
    return;
  }
  for (const folder of missing.reverse()) {
    try {
      mkdirSync(folder, mode === undefined ? {} : { mode });
    } catch (error) {
      // Another process made it meanwhile; anything else (ENOENT, ENOTDIR, EACCES) is the answer.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || !statSync(folder).isDirectory()) throw error;
    }
  }
}

function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // ENOTDIR: a file in the way higher up, which the walk reaches next.
    if (code === 'ENOENT' || code === 'ENOTDIR') return false;
    throw error;
  }
}
