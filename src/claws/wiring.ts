/**
 * The adapter shape most agents share (one config file, maybe a service to restart), and the undo of
 * any ledger entry, which `metaclaw uninstall` also uses.
 */
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { attempt, commandText, outputSummary, restartAgent } from './commands.js';
import type { Restart } from './commands.js';
import { checkConfigFile, commitConfigFile, commitConfigFileVia, planConfigFile, undoConfigFile } from './config-file.js';
import type { ConfigFileSpec, FilePlan } from './config-file.js';
import { findLedgerEntry, ledgerSaysWired, openLedgerEntry, removeLedgerEntry } from './ledger.js';
import type { LedgerEntry, LedgerFileRecord } from './ledger.js';
import { normalizeTarget } from './target.js';
import { ClawError } from './types.js';
import type { ApplyResult, ClawAdapter, ClawEnvironment, Detection, UnwireResult, VerifyResult, WiringTarget } from './types.js';

export interface FileAdapterSpec extends ConfigFileSpec {
  /** the agent's CLI, used to detect it and to restart it */
  binary: string | undefined;
  /** the config file, or undefined when the agent cannot be found */
  locate(environment: ClawEnvironment): string | undefined;
  /** how to restart the agent, or a sentence saying why nothing is restarted */
  restart(environment: ClawEnvironment): Restart | string;
  /** checks beyond reading the file back, e.g. the agent's own validator */
  verifyMore?(environment: ClawEnvironment, target: WiringTarget): Promise<{ problems: string[]; messages: string[] }>;
  /**
   * The agent's own config writer (e.g. `openclaw config set`), used when its CLI is on PATH and the
   * file exists; resolves with a failure reason, or undefined. On failure the file is edited directly.
   */
  agentWriter?: { label: string; write(environment: ClawEnvironment, plan: FilePlan): Promise<string | undefined> };
}

export function fileAdapter(spec: FileAdapterSpec): ClawAdapter {
  return {
    type: spec.claw,
    name: spec.agentName,
    detect: async (environment) => detectFile(spec, environment),
    apply: (target, environment) => applyFile(spec, target, environment),
    verify: (target, environment) => verifyFile(spec, target, environment),
    unwire: (environment) => unwireWithRestart(spec, environment),
  };
}

export function detectFile(spec: FileAdapterSpec, environment: ClawEnvironment): Detection {
  const configPath = spec.locate(environment);
  const configExists = configPath !== undefined && existsSync(configPath);
  const binaryPath = spec.binary === undefined ? undefined : environment.which(spec.binary);
  const folderExists = configPath !== undefined && existsSync(dirname(configPath));
  const notes: string[] = [];
  if (configPath === undefined) notes.push(`Could not locate ${spec.agentName}.`);
  else if (!configExists) notes.push(`${configPath} does not exist yet.`);
  return {
    type: spec.claw,
    name: spec.agentName,
    installed: configExists || folderExists || binaryPath !== undefined,
    configPath,
    configExists,
    binaryPath,
    wired: ledgerSaysWired(environment.metaclawHome, spec.claw),
    notes,
  };
}

/** The config path, or a ClawError when the agent cannot be found. */
function locateOrFail(spec: FileAdapterSpec, environment: ClawEnvironment): string {
  const path = spec.locate(environment);
  if (path === undefined)
    throw new ClawError('not_installed', `Could not find ${spec.agentName}. ${spec.setupHint} MetaClaw changed nothing.`, { claw: spec.claw });
  return path;
}

async function applyFile(spec: FileAdapterSpec, rawTarget: WiringTarget, environment: ClawEnvironment): Promise<ApplyResult> {
  const target = normalizeTarget(rawTarget);
  const path = locateOrFail(spec, environment);
  const plan = planConfigFile(spec, path, target);
  if (plan.after === undefined) return unchanged(spec, path, environment);
  const messages: string[] = [];
  let record: LedgerFileRecord | undefined;
  const writer = spec.agentWriter;
  if (writer !== undefined && spec.binary !== undefined && environment.which(spec.binary) !== undefined && plan.before !== undefined) {
    const entry = openLedgerEntry(environment.metaclawHome, spec.claw, path, target);
    const accepted = () => {
      const problems = checkConfigFile(spec, path, target);
      return problems.length === 0 ? undefined : `the result is not what MetaClaw asked for: ${problems.join('; ')}`;
    };
    const outcome = await commitConfigFileVia(plan, entry, environment.metaclawHome, () => writer.write(environment, plan), accepted);
    if ('record' in outcome) {
      record = outcome.record;
      messages.push(`Pointed ${spec.agentName} at MetaClaw with ${writer.label} (${path}).`);
    } else messages.push(`${writer.label} did not work (${outcome.failure}); edited ${path} directly instead.`);
  }
  if (record === undefined) {
    record = commitConfigFile(planConfigFile(spec, path, target), openLedgerEntry(environment.metaclawHome, spec.claw, path, target), environment.metaclawHome);
    messages.push(`Pointed ${spec.agentName} at MetaClaw in ${path}.`);
  }
  const restart = await restartIfPossible(spec, environment);
  return {
    type: spec.claw,
    changed: true,
    configPath: path,
    ...(record.backupPath === null ? {} : { backupPath: record.backupPath }),
    restarted: restart.restarted,
    messages: [...messages, restart.message],
  };
}

function unchanged(spec: FileAdapterSpec, path: string, environment: ClawEnvironment): ApplyResult {
  const backupPath = findLedgerEntry(environment.metaclawHome, spec.claw)?.files.find((file) => file.path === path)?.backupPath ?? null;
  return {
    type: spec.claw,
    changed: false,
    configPath: path,
    ...(backupPath === null ? {} : { backupPath }),
    restarted: false,
    messages: [`${spec.agentName} already points at MetaClaw (${path}); nothing changed.`],
  };
}

async function verifyFile(spec: FileAdapterSpec, rawTarget: WiringTarget, environment: ClawEnvironment): Promise<VerifyResult> {
  const target = normalizeTarget(rawTarget);
  const path = spec.locate(environment);
  if (path === undefined) return { wired: false, problems: [`Could not find ${spec.agentName}.`], messages: [] };
  const problems = checkConfigFile(spec, path, target);
  const more = spec.verifyMore === undefined ? { problems: [], messages: [] } : await spec.verifyMore(environment, target);
  const allProblems = [...problems, ...more.problems];
  return { wired: allProblems.length === 0, problems: allProblems, messages: more.messages };
}

async function unwireWithRestart(spec: FileAdapterSpec, environment: ClawEnvironment): Promise<UnwireResult> {
  const result = await undoLedgerEntry(spec, environment);
  if (!result.changed) return result.unwire;
  const restart = await restartIfPossible(spec, environment);
  return { ...result.unwire, restarted: restart.restarted, messages: [...result.unwire.messages, restart.message] };
}

async function restartIfPossible(spec: FileAdapterSpec, environment: ClawEnvironment): Promise<{ restarted: boolean; message: string }> {
  const restart = spec.restart(environment);
  if (typeof restart === 'string') return { restarted: false, message: restart };
  return restartAgent(environment, restart, spec.agentName);
}

/**
 * Undoes everything the ledger records for `claw`: files (exactly, or only our keys when the user
 * edited them since), then commands, newest first; then drops the entry. A file that cannot be
 * reverted (e.g. the user broke its syntax) throws and keeps the entry for a retry.
 */
export async function undoLedgerEntry(spec: ConfigFileSpec, environment: ClawEnvironment): Promise<{ changed: boolean; unwire: UnwireResult }> {
  const claw = spec.claw;
  const entry = findLedgerEntry(environment.metaclawHome, claw);
  if (entry === undefined) {
    return {
      changed: false,
      unwire: { restored: false, exact: true, restarted: false, messages: [`MetaClaw has no record of wiring ${claw}; nothing to undo.`] },
    };
  }
  const messages: string[] = [];
  let changed = false;
  let exact = true;
  for (const record of [...entry.files].reverse()) {
    const undo = undoConfigFile(spec, record, entry.target);
    changed ||= undo.changed;
    exact &&= undo.exact;
    messages.push(undo.message);
  }
  const failures = await undoActions(entry, environment, messages);
  removeLedgerEntry(environment.metaclawHome, claw);
  return { changed: changed || entry.actions.length > 0, unwire: { restored: failures === 0, exact: exact && failures === 0, restarted: false, messages } };
}

async function undoActions(entry: LedgerEntry, environment: ClawEnvironment, messages: string[]): Promise<number> {
  let failures = 0;
  for (const action of [...entry.actions].reverse()) {
    if (action.undoNote !== null) messages.push(action.undoNote);
    for (const command of action.undo) {
      const result = await attempt(environment, command);
      if (result.ran && result.outcome.code === 0) {
        messages.push(`Undid: ${action.description} (\`${commandText(command)}\`).`);
        continue;
      }
      failures += 1;
      const why = result.ran ? outputSummary(result.outcome) : result.reason;
      messages.push(`Could not undo "${action.description}" (${why}); run \`${commandText(command)}\` yourself.`);
    }
  }
  return failures;
}
