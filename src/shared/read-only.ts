import { accessSync, constants, statSync } from 'node:fs';

/**
 * Whether the user made `path` read-only: its owner may not write it (`chmod u-w`), or this process
 * may not. The mode is read too because root may write anything, and containers often run as root.
 */
export function isReadOnly(path: string): boolean {
  if ((statSync(path).mode & 0o200) === 0) return true;
  try {
    accessSync(path, constants.W_OK);
    return false;
  } catch {
    return true;
  }
}
