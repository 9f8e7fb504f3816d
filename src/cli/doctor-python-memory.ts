import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { LoadedConfig } from '../config/index.js';
import {
  livePythonRows,
  pythonImportOf,
  pythonStorePath,
  PythonStoreError,
  readPythonStore,
  type PythonStore,
  type RememberedImport,
} from '../memory/index.js';
import { openDatabase } from '../store/index.js';
import type { DoctorCheck } from './doctor.js';

/**
 * The doctor's line for a user coming from the Python MetaClaw: its memory store (where its config
 * keys or its default put it) is offered for import, with the exact command, until it is imported.
 * Nothing is said when there is no such file.
 */
export function checkPythonMemory(config: LoadedConfig, checks: DoctorCheck[]): void {
  const path = pythonStorePath(config.home, config.values);
  if (!existsSync(path)) return;
  let store: PythonStore;
  try {
    store = readPythonStore(path);
  } catch (error) {
    const detail = error instanceof PythonStoreError ? error.message.replace(/; nothing was imported\.$/, '') : `${path}: ${(error as Error).message}`;
    checks.push({
      name: 'metaclaw memories',
      verdict: 'warn',
      detail,
      fix: 'it cannot be imported; point memory.store_path at the right file, or ignore this',
    });
    return;
  }
  const done = importedBefore(config, store.fingerprint);
  if (done) {
    checks.push({
      name: 'metaclaw memories',
      verdict: 'pass',
      detail: `the Python MetaClaw's memories in ${path} were imported on ${done.imported_at.slice(0, 10)} (${done.imported} added)`,
    });
    return;
  }
  const live = livePythonRows(store);
  checks.push({
    name: 'metaclaw memories',
    verdict: 'warn',
    detail: `${path} holds ${live} active memor${live === 1 ? 'y' : 'ies'} of the Python MetaClaw that MetaClaw-TS does not use until they are imported`,
    fix: `run \`metaclaw memory import ${shellWord(path)}${configOption(config)}\` (the file is only read; memories already here are skipped)`,
  });
}

/** The import of this store's content noted in the database, if any. */
function importedBefore(config: LoadedConfig, fingerprint: string): RememberedImport | undefined {
  if (!existsSync(config.paths.database)) return undefined;
  try {
    const db = openDatabase(config.paths.database, { readonly: true });
    try {
      return pythonImportOf(db, fingerprint);
    } finally {
      db.close();
    }
  } catch {
    return undefined; // the database check says why it cannot be read
  }
}

/** ` -c FILE` when doctor read a config file of its own (-c), so the import goes to the same store. */
function configOption(config: LoadedConfig): string {
  return config.file === join(config.home, 'config.yaml') ? '' : ` -c ${shellWord(config.file)}`;
}

/** A path as one shell word, so the printed command can be pasted as it is. */
function shellWord(path: string): string {
  return /^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replace(/'/g, `'\\''`)}'`;
}
