/**
 * The life of one wired config file: plan the edit (nothing touched), commit it (backup, ledger,
 * atomic write, in that order), check it, and undo it (exact restore, or revert only our keys).
 */
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { writeFileAtomic } from '../shared/atomic-write.js';
import { isReadOnly } from '../shared/read-only.js';
import { symlinkTarget } from '../shared/symlink-target.js';
import { deepEqual, describePath, isEmptyContainer, readPath } from './document.js';
import type { ConfigDocument, DocumentFormat, Setting } from './document.js';
import { findLedgerEntry, removeBackup, removeLedgerEntry, saveLedgerEntry, sha256, writeBackup } from './ledger.js';
import type { LedgerEntry, LedgerFileRecord } from './ledger.js';
import { applySettings, checkSettings, expectedAfterApply, expectedAfterRevert, renderChecked, revertSettings } from './settings.js';
import { ClawError } from './types.js';
import type { ClawType, WiringTarget } from './types.js';
import { InternalError } from '../errors.js';

/** What to do when the config file does not exist yet. */
export type MissingFilePolicy = 'error' | 'create-in-existing-folder' | 'create';

export interface ConfigFileSpec {
  claw: ClawType;
  agentName: string;
  format: DocumentFormat;
  missing: MissingFilePolicy;
  /** how the user gets a config file, for the "missing" message */
  setupHint: string;
  /** MetaClaw's settings; `current` is the file's data (the original's, when reverting) */
  settings(target: WiringTarget, current: unknown): Setting[];
}

export interface FilePlan {
  path: string;
  before: Buffer | undefined;
  mode: number | null;
  /** the new text, or undefined when the file already says what we want */
  after: string | undefined;
  /** MetaClaw's settings for this file (what an agent's own config writer is asked to set) */
  settings: Setting[];
}

const NEW_FILE_MODE = 0o600;

/** Computes the edit without touching anything; a missing or malformed file is a ClawError. */
export function planConfigFile(spec: ConfigFileSpec, path: string, target: WiringTarget): FilePlan {
  const before = readIfExists(path);
  if (before === undefined) assertMayCreate(spec, path);
  else assertWritable(spec.claw, path);
  const text = before === undefined ? { bom: '', body: undefined } : documentText(before, path);
  const document = text.body === undefined ? spec.format.create(path) : spec.format.parse(text.body, path);
  const settings = spec.settings(target, document.value());
  const expected = expectedAfterApply(document, settings);
  const mode = before === undefined ? null : statSync(writablePath(path)).mode & 0o777;
  if (!applySettings(document, settings)) return { path, before, mode, after: undefined, settings };
  const after = `${text.bom}${renderChecked(spec.format, document, expected, path)}`;
  return { path, before, mode, after: before !== undefined && after === before.toString('utf8') ? undefined : after, settings };
}

interface PreparedRecord {
  record: LedgerFileRecord;
  previous: LedgerEntry | undefined;
  createdBackup: boolean;
}

/** Backs up the original (first change only) and records the change in the ledger, before any write. */
function prepareRecord(plan: FilePlan, entry: LedgerEntry, metaclawHome: string, appliedSha256: string): PreparedRecord {
  const previous = findLedgerEntry(metaclawHome, entry.claw);
  let record = entry.files.find((file) => file.path === plan.path);
  const createdBackup = record === undefined && plan.before !== undefined;
  if (record === undefined) {
    record = {
      path: plan.path,
      existedBefore: plan.before !== undefined,
      mode: plan.mode,
      backupPath: plan.before === undefined ? null : writeBackup(metaclawHome, entry.claw, plan.path, plan.before),
      originalSha256: plan.before === undefined ? null : sha256(plan.before),
      appliedSha256: '',
      editedByUser: false,
    };
    entry.files.push(record);
  } else {
    record.editedByUser = editedSinceLastWrite(record, plan.before);
  }
  record.appliedSha256 = appliedSha256;
  saveLedgerEntry(metaclawHome, entry);
  return { record, previous, createdBackup };
}

/** Undoes prepareRecord: the ledger as it was, no new backup. */
function rollbackRecord(prepared: PreparedRecord, entry: LedgerEntry, metaclawHome: string): void {
  if (prepared.previous === undefined) removeLedgerEntry(metaclawHome, entry.claw);
  else saveLedgerEntry(metaclawHome, prepared.previous);
  if (prepared.createdBackup) removeBackup(prepared.record.backupPath);
}

/**
 * Backs up the original (first change only), records the change in the ledger, then writes.
 * If the write fails, the ledger and any new backup are rolled back.
 */
export function commitConfigFile(plan: FilePlan, entry: LedgerEntry, metaclawHome: string): LedgerFileRecord {
  if (plan.after === undefined) throw new InternalError('nothing to commit');
  const prepared = prepareRecord(plan, entry, metaclawHome, sha256(plan.after));
  try {
    writeConfig(entry.claw, plan.path, plan.after, plan.mode ?? NEW_FILE_MODE, 'Nothing was changed.');
  } catch (error) {
    rollbackRecord(prepared, entry, metaclawHome);
    throw error;
  }
  return prepared.record;
}

/**
 * Like commitConfigFile, but the agent's own tool writes the file (it validates and formats it its
 * way). `write` resolves with a failure reason or undefined; `accepted` checks the result. On any
 * failure the file's original bytes, the ledger and the backup are put back, and the reason returned.
 */
export async function commitConfigFileVia(
  plan: FilePlan,
  entry: LedgerEntry,
  metaclawHome: string,
  write: () => Promise<string | undefined>,
  accepted: () => string | undefined,
): Promise<{ record: LedgerFileRecord } | { failure: string }> {
  if (plan.after === undefined || plan.before === undefined) throw new InternalError('nothing to commit');
  const prepared = prepareRecord(plan, entry, metaclawHome, sha256(plan.after));
  let failure: string | undefined;
  try {
    failure = (await write()) ?? accepted();
  } catch (error) {
    failure = (error as Error).message;
  }
  const now = readIfExists(plan.path);
  if (failure !== undefined) {
    if (now === undefined || !now.equals(plan.before)) writeFileAtomic(writablePath(plan.path), plan.before, { mode: plan.mode ?? NEW_FILE_MODE });
    rollbackRecord(prepared, entry, metaclawHome);
    return { failure };
  }
  // What the agent's writer produced is what "unchanged since MetaClaw wrote it" must match.
  prepared.record.appliedSha256 = sha256(now ?? Buffer.alloc(0));
  saveLedgerEntry(metaclawHome, entry);
  return { record: prepared.record };
}

/** Whether what we are about to overwrite holds user edits (then restoring the backup later would lose them). */
function editedSinceLastWrite(record: LedgerFileRecord, before: Buffer | undefined): boolean {
  const current = before === undefined ? null : sha256(before);
  if (current === record.originalSha256) return false;
  return record.editedByUser || current !== record.appliedSha256;
}

/** Problems with the wiring in `path`; an unreadable file is a problem, not an exception. */
export function checkConfigFile(spec: ConfigFileSpec, path: string, target: WiringTarget): string[] {
  const content = readIfExists(path);
  if (content === undefined) return [`${path} does not exist`];
  let document: ConfigDocument;
  try {
    document = spec.format.parse(documentText(content, path).body, path);
  } catch (error) {
    return [error instanceof Error ? error.message : String(error)];
  }
  return checkSettings(document, spec.settings(target, document.value()), path);
}

export interface FileUndo {
  changed: boolean;
  exact: boolean;
  message: string;
}

/**
 * Puts a wired file back. Unchanged since we wrote it: the original bytes (or no file). Edited by the
 * user since: only our keys go back to their original values, their edits stay, the backup is kept.
 */
export function undoConfigFile(spec: ConfigFileSpec, record: LedgerFileRecord, target: WiringTarget): FileUndo {
  const current = readIfExists(record.path);
  const currentSha = current === undefined ? null : sha256(current);
  if (current === undefined) {
    if (!record.existedBefore) return { changed: false, exact: true, message: `${record.path} is already gone.` };
    return {
      changed: false,
      exact: false,
      message: `${record.path} was deleted after MetaClaw wired it; left it deleted (its original is kept at ${record.backupPath ?? 'nowhere'}).`,
    };
  }
  if (currentSha === record.originalSha256) {
    removeBackup(record.backupPath);
    return { changed: false, exact: true, message: `${record.path} is already back to its original.` };
  }
  const original = record.backupPath !== null && existsSync(record.backupPath) ? readFileSync(record.backupPath) : undefined;
  assertWritable(spec.claw, record.path, STILL_WIRED);
  if (currentSha === record.appliedSha256 && !record.editedByUser && (original !== undefined || !record.existedBefore)) {
    restoreExactly(spec.claw, record, original);
    return {
      changed: true,
      exact: true,
      message: original === undefined ? `Removed ${record.path}, which MetaClaw had created.` : `Restored ${record.path} to its original bytes.`,
    };
  }
  return revertOurKeys(spec, record, target, current, original);
}

function restoreExactly(claw: ClawType, record: LedgerFileRecord, original: Buffer | undefined): void {
  if (original === undefined) removeConfig(claw, record.path);
  else writeConfig(claw, record.path, original, record.mode ?? NEW_FILE_MODE, STILL_WIRED);
  removeBackup(record.backupPath);
}

function revertOurKeys(spec: ConfigFileSpec, record: LedgerFileRecord, target: WiringTarget, current: Buffer, original: Buffer | undefined): FileUndo {
  const currentText = documentText(current, record.path);
  const document = spec.format.parse(currentText.body, record.path);
  const originalDocument = original === undefined ? spec.format.create(record.path) : spec.format.parse(documentText(original, record.path).body, record.path);
  const ours = spec.settings(target, originalDocument.value());
  // Some values depend on the file (NemoClaw's onboardedAt keeps the wire time): what MetaClaw
  // would write into the current file is MetaClaw's too.
  const oursNow = spec.settings(target, document.value());
  const changedByUser = ours.filter((setting) => isChangedByUser(setting, document.value(), originalDocument.value(), oursNow));
  const settings = ours.filter((setting) => !changedByUser.includes(setting));
  const expected = expectedAfterRevert(document, originalDocument, settings);
  const lostBackup = record.existedBefore && original === undefined ? ' Its backup was missing, so MetaClaw’s keys were removed rather than restored.' : '';
  const leftAlone =
    changedByUser.length === 0 ? '' : ` Left ${changedByUser.map((setting) => `\`${describePath(setting.path)}\``).join(', ')} as you changed it after wiring.`;
  if (!revertSettings(document, originalDocument, settings)) {
    return { changed: false, exact: false, message: `${record.path} no longer has MetaClaw’s settings; left it as it is.${leftAlone}${lostBackup}` };
  }
  const text = `${currentText.bom}${renderChecked(spec.format, document, expected, record.path)}`;
  if (!record.existedBefore && isEmptyContainer(expected)) {
    removeConfig(spec.claw, record.path);
    return { changed: true, exact: false, message: `Removed ${record.path}, which MetaClaw had created (only MetaClaw’s settings were left in it).` };
  }
  writeConfig(spec.claw, record.path, text, statSync(writablePath(record.path)).mode & 0o777, STILL_WIRED);
  const kept = record.backupPath === null || original === undefined ? '' : ` The pre-MetaClaw original is kept at ${record.backupPath}.`;
  return {
    changed: true,
    exact: false,
    message: `${record.path} was edited after MetaClaw wired it, so only MetaClaw’s settings were reverted and your other changes were kept.${leftAlone}${kept}${lostBackup}`,
  };
}

/**
 * A single value that now holds neither what MetaClaw writes nor the original: the user chose it
 * while wired, so unwire keeps it. Objects and lists are MetaClaw's own entries or merged with the
 * user's (an allowlist), and are always reverted.
 */
function isChangedByUser(setting: Setting, current: unknown, original: unknown, oursNow: readonly Setting[]): boolean {
  if (typeof setting.value === 'object' || setting.mergesUserValue === true) return false;
  const now = readPath(current, setting.path);
  const where = describePath(setting.path);
  const candidates = [
    setting.value,
    readPath(original, setting.path),
    ...oursNow.filter((mine) => describePath(mine.path) === where).map((mine) => mine.value),
  ];
  return now !== undefined && !candidates.some((value) => deepEqual(now, value));
}

function assertMayCreate(spec: ConfigFileSpec, path: string): void {
  if (spec.missing === 'create') return;
  // Through a symlink, the folder that must exist is the target's (a dotfiles checkout).
  if (spec.missing === 'create-in-existing-folder' && existsSync(dirname(writablePath(path)))) return;
  throw new ClawError('config_missing', `${spec.agentName}'s config file ${path} does not exist. ${spec.setupHint} MetaClaw changed nothing.`, {
    claw: spec.claw,
    path,
  });
}

function readIfExists(path: string): Buffer | undefined {
  const real = writablePath(path);
  if (!existsSync(real)) return undefined;
  if (!statSync(real).isFile()) throw new ClawError('config_malformed', `${path} is not a regular file; MetaClaw changed nothing.`, { path });
  return readFileSync(real);
}

/**
 * Writes go through symlinks (dotfile managers) instead of replacing the link with a file, also a
 * link whose target does not exist yet (the file is then created there, and removed from there).
 */
function writablePath(path: string): string {
  const target = symlinkTarget(path);
  if (target === undefined) throw new ClawError('config_malformed', `${path} is a symlink loop; MetaClaw changed nothing.`, { path });
  return target;
}

/** What a failed write during unwire leaves behind, and how to finish. */
const STILL_WIRED = 'It still points at MetaClaw; the ledger and the backup are kept, so run `metaclaw claw unwire` again once it can be written.';

/** A file the user made read-only is theirs to open up; MetaClaw does not write around it. */
function assertWritable(claw: ClawType, path: string, consequence = 'MetaClaw changed nothing.'): void {
  const real = writablePath(path);
  if (existsSync(real) && isReadOnly(real))
    throw new ClawError('write_failed', `${path} is read-only (permission denied). ${consequence} Make it writable and try again.`, { claw, path });
}

function writeConfig(claw: ClawType, path: string, content: string | Buffer, mode: number, consequence: string): void {
  try {
    const real = writablePath(path);
    // A hard-linked config (dotfiles) must stay one file; a rename would give this name a new inode.
    if ((statSync(real, { throwIfNoEntry: false })?.nlink ?? 1) > 1) writeFileSync(real, content);
    else writeFileAtomic(real, content, { mode });
  } catch (error) {
    throw new ClawError('write_failed', `Could not write ${path} (${fileProblem(error)}). ${consequence}`, { claw, path, cause: error });
  }
}

function removeConfig(claw: ClawType, path: string): void {
  try {
    rmSync(writablePath(path), { force: true });
  } catch (error) {
    throw new ClawError('write_failed', `Could not remove ${path} (${fileProblem(error)}). ${STILL_WIRED}`, { claw, path, cause: error });
  }
}

const FILE_PROBLEMS: Readonly<Record<string, string>> = {
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space left on the device',
};

/** An fs error in words; its own message would name the temporary file, not the config. */
function fileProblem(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  return (code === undefined ? undefined : FILE_PROBLEMS[code]) ?? (error as Error).message;
}

const BOM = '\uFEFF';

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * The file's text without a UTF-8 BOM, which the editors do not expect; the BOM is written back in
 * front. Bytes that are not UTF-8 (a Latin-1 comment) would be written back as U+FFFD, so they are refused.
 */
function documentText(content: Buffer, path: string): { bom: string; body: string } {
  let text: string;
  try {
    text = UTF8.decode(content);
  } catch (error) {
    throw new ClawError('config_malformed', `${path} is not UTF-8 text; MetaClaw changed nothing. Save it as UTF-8 and try again.`, { path, cause: error });
  }
  return text.startsWith(BOM) ? { bom: BOM, body: text.slice(BOM.length) } : { bom: '', body: text };
}
