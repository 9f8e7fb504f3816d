/**
 * The wiring ledger: <metaclawHome>/claws/ledger.json records every change MetaClaw made to an agent
 * (files with their pre-MetaClaw backups, commands with their undo), so `metaclaw uninstall` can undo
 * all of it. Mode 0600: it names key-bearing files and holds the target (with its proxy key).
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from '../shared/atomic-write.js';
import { ClawError } from './types.js';
import { CLAW_TYPES } from '../config/schema.js';
import type { ClawType, WiringTarget } from './types.js';
import { makeFolders } from '../shared/make-folders.js';

const commandSchema = z.object({ command: z.string(), args: z.array(z.string()) });

const fileRecordSchema = z.object({
  path: z.string(),
  existedBefore: z.boolean(),
  /** permission bits of the original file, restored with it */
  mode: z.number().nullable(),
  /** byte-for-byte copy of the original; null when the file did not exist */
  backupPath: z.string().nullable(),
  originalSha256: z.string().nullable(),
  /** sha256 of the bytes MetaClaw last wrote */
  appliedSha256: z.string(),
  /** the user changed the file between two of MetaClaw's writes, so the last write holds their edits too */
  editedByUser: z.boolean(),
});

const actionSchema = z.object({
  /** stable id so a second apply keeps the first record (and so the first undo) */
  id: z.string(),
  description: z.string(),
  /** what we ran, secrets redacted */
  ran: z.array(commandSchema),
  /** raw output worth keeping, e.g. the setting we replaced */
  output: z.string().nullable(),
  /** commands that undo the action, in order */
  undo: z.array(commandSchema),
  /** what the user must do by hand when `undo` cannot */
  undoNote: z.string().nullable(),
});

const entrySchema = z.object({
  claw: z.enum(CLAW_TYPES),
  configPath: z.string(),
  target: z.object({
    proxyUrl: z.string(),
    apiKey: z.string(),
    model: z.string(),
    apiFormat: z.enum(['openai', 'anthropic']),
    contextWindow: z.number(),
    plugin: z.object({ path: z.string(), config: z.record(z.string(), z.unknown()) }).optional(),
  }),
  files: z.array(fileRecordSchema),
  actions: z.array(actionSchema),
  wiredAt: z.string(),
  updatedAt: z.string(),
});

const ledgerSchema = z.object({ version: z.literal(1), entries: z.array(entrySchema) });

export type LedgerCommand = z.infer<typeof commandSchema>;
export type LedgerFileRecord = z.infer<typeof fileRecordSchema>;
export type LedgerAction = z.infer<typeof actionSchema>;
export type LedgerEntry = z.infer<typeof entrySchema>;
export type Ledger = z.infer<typeof ledgerSchema>;

const PRIVATE_FILE = 0o600;
const PRIVATE_FOLDER = 0o700;

export function clawsFolder(metaclawHome: string): string {
  return join(metaclawHome, 'claws');
}

export function ledgerPath(metaclawHome: string): string {
  return join(clawsFolder(metaclawHome), 'ledger.json');
}

export function backupsFolder(metaclawHome: string): string {
  return join(clawsFolder(metaclawHome), 'backups');
}

export function sha256(content: string | Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}

/** What a user can do about a damaged ledger: it alone knows what wiring changed, so it is never reset silently. */
const LEDGER_FIX = (metaclawHome: string): string =>
  `fix it by hand, or move it aside to start a new one (the agents' original files are kept in ${backupsFolder(metaclawHome)}).`;

/** What is wrong with the ledger, or undefined when it reads (or does not exist yet). */
export function ledgerProblem(metaclawHome: string): string | undefined {
  try {
    readLedger(metaclawHome);
    return undefined;
  } catch (error) {
    if (error instanceof ClawError && error.status === 'ledger_corrupt') return error.message;
    throw error;
  }
}

/**
 * Whether the ledger says MetaClaw wired `claw`, for listing agents: false when the ledger cannot be
 * read, so one damaged file does not hide every agent (`ledgerProblem` says why). Wiring and unwiring
 * read the ledger strictly.
 */
export function ledgerSaysWired(metaclawHome: string, claw: ClawType): boolean {
  try {
    return findLedgerEntry(metaclawHome, claw) !== undefined;
  } catch (error) {
    if (error instanceof ClawError && error.status === 'ledger_corrupt') return false;
    throw error;
  }
}

/** The ledger, or an empty one when none was written yet. A damaged ledger is an error, never silently reset. */
export function readLedger(metaclawHome: string): Ledger {
  const path = ledgerPath(metaclawHome);
  if (!existsSync(path)) return { version: 1, entries: [] };
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ClawError('ledger_corrupt', `The wiring ledger ${path} is not valid JSON; ${LEDGER_FIX(metaclawHome)}`, { path, cause: error });
  }
  const result = ledgerSchema.safeParse(parsed);
  if (!result.success) {
    throw new ClawError(
      'ledger_corrupt',
      `The wiring ledger ${path} has an unexpected shape (${result.error.issues[0]?.message ?? 'invalid'}); ${LEDGER_FIX(metaclawHome)}`,
      { path },
    );
  }
  return result.data;
}

export function writeLedger(metaclawHome: string, ledger: Ledger): void {
  ensurePrivateFolder(clawsFolder(metaclawHome));
  writeFileAtomic(ledgerPath(metaclawHome), `${JSON.stringify(ledger, null, 2)}\n`, { mode: PRIVATE_FILE });
}

export function findLedgerEntry(metaclawHome: string, claw: ClawType): LedgerEntry | undefined {
  return readLedger(metaclawHome).entries.find((entry) => entry.claw === claw);
}

export function saveLedgerEntry(metaclawHome: string, entry: LedgerEntry): void {
  const ledger = readLedger(metaclawHome);
  const others = ledger.entries.filter((existing) => existing.claw !== entry.claw);
  writeLedger(metaclawHome, { version: 1, entries: [...others, entry] });
}

export function removeLedgerEntry(metaclawHome: string, claw: ClawType): void {
  const ledger = readLedger(metaclawHome);
  writeLedger(metaclawHome, { version: 1, entries: ledger.entries.filter((entry) => entry.claw !== claw) });
}

/** Copies `content` (the original bytes of `sourcePath`) into the backups folder, mode 0600; returns the copy's path. */
export function writeBackup(metaclawHome: string, claw: ClawType, sourcePath: string, content: Buffer): string {
  const folder = backupsFolder(metaclawHome);
  ensurePrivateFolder(folder);
  const stamp = new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  const path = join(folder, `${claw}-${basename(sourcePath)}-${stamp}-${randomBytes(3).toString('hex')}.bak`);
  writeFileAtomic(path, content, { mode: PRIVATE_FILE });
  return path;
}

export function removeBackup(path: string | null): void {
  if (path !== null) rmSync(path, { force: true });
}

function ensurePrivateFolder(path: string): void {
  if (existsSync(path)) return;
  makeFolders(path, PRIVATE_FOLDER);
  chmodSync(path, PRIVATE_FOLDER);
}

/** The claw's entry to extend (its files and actions kept, so backups stay the pre-MetaClaw originals), or a new one. */
export function openLedgerEntry(metaclawHome: string, claw: ClawType, configPath: string, target: WiringTarget): LedgerEntry {
  const now = new Date().toISOString();
  const existing = findLedgerEntry(metaclawHome, claw);
  if (existing === undefined) return { claw, configPath, target, files: [], actions: [], wiredAt: now, updatedAt: now };
  return { ...existing, configPath, target, updatedAt: now };
}
