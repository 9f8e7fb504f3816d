/**
 * Wiring the user's agent ("claw") to the MetaClaw proxy, and undoing it exactly.
 * Every change is recorded in <metaclawHome>/claws/ledger.json; `unwireAll` undoes them all.
 */
import { claudeCodeAdapter } from './claude-code.js';
import { codexAdapter } from './codex.js';
import { copawAdapter } from './copaw.js';
import { hermesAdapter } from './hermes.js';
import { ironclawAdapter } from './ironclaw.js';
import { readLedger } from './ledger.js';
import { nanoclawAdapter } from './nanoclaw.js';
import { nemoclawAdapter } from './nemoclaw.js';
import { noneAdapter } from './none.js';
import { openclawAdapter } from './openclaw.js';
import { opencodeAdapter } from './opencode.js';
import { picoclawAdapter } from './picoclaw.js';
import { qwenCodeAdapter } from './qwen-code.js';
import { CLAW_TYPES } from '../config/schema.js';
import { ClawError } from './types.js';
import type { ApplyResult, ClawAdapter, ClawEnvironment, ClawType, Detection, UnwireResult, VerifyResult, WiringTarget } from './types.js';
import { zeroclawAdapter } from './zeroclaw.js';

export type {
  ApplyResult,
  ClawAdapter,
  ClawEnvironment,
  ClawErrorStatus,
  ClawType,
  CommandOutcome,
  Detection,
  UnwireResult,
  VerifyResult,
  WiringTarget,
} from './types.js';
export { ClawError } from './types.js';
export type { Ledger, LedgerAction, LedgerCommand, LedgerEntry, LedgerFileRecord } from './ledger.js';
export { backupsFolder, clawsFolder, findLedgerEntry, ledgerPath, ledgerProblem, readLedger, removeLedgerEntry } from './ledger.js';
export { realEnvironment } from './environment.js';
export type { RealEnvironmentOptions } from './environment.js';
export { normalizeTarget } from './target.js';

const ADAPTERS: Readonly<Record<ClawType, ClawAdapter>> = {
  openclaw: openclawAdapter,
  copaw: copawAdapter,
  ironclaw: ironclawAdapter,
  picoclaw: picoclawAdapter,
  zeroclaw: zeroclawAdapter,
  nanoclaw: nanoclawAdapter,
  nemoclaw: nemoclawAdapter,
  hermes: hermesAdapter,
  'claude-code': claudeCodeAdapter,
  codex: codexAdapter,
  'qwen-code': qwenCodeAdapter,
  opencode: opencodeAdapter,
  none: noneAdapter,
};

export const ALL_CLAW_TYPES: readonly ClawType[] = CLAW_TYPES;

export function isClawType(value: string): value is ClawType {
  return (ALL_CLAW_TYPES as readonly string[]).includes(value);
}

export function adapterFor(type: ClawType): ClawAdapter {
  const adapter = ADAPTERS[type] as ClawAdapter | undefined;
  if (adapter === undefined) throw new ClawError('unknown_claw', `Unknown claw type "${String(type)}"; expected one of ${ALL_CLAW_TYPES.join(', ')}.`);
  return adapter;
}

/** Points the agent at the proxy: backs up and edits its config, restarts it only if something changed. */
export function wireClaw(type: ClawType, target: WiringTarget, environment: ClawEnvironment): Promise<ApplyResult> {
  return adapterFor(type).apply(target, environment);
}

/** Undoes what the ledger records for this agent. */
export function unwireClaw(type: ClawType, environment: ClawEnvironment): Promise<UnwireResult> {
  return adapterFor(type).unwire(environment);
}

/** Reads the agent's config back (and runs its own validator where there is one). */
export function verifyClaw(type: ClawType, target: WiringTarget, environment: ClawEnvironment): Promise<VerifyResult> {
  return adapterFor(type).verify(target, environment);
}

/** One detection per agent MetaClaw knows (not "none"); filter on `installed`. */
export function detectClaws(environment: ClawEnvironment): Promise<Detection[]> {
  return Promise.all(ALL_CLAW_TYPES.filter((type) => type !== 'none').map((type) => adapterFor(type).detect(environment)));
}

export interface UnwireAllItem {
  type: ClawType;
  result?: UnwireResult;
  /** set when this agent could not be unwired; its ledger entry is kept for a retry */
  error?: ClawError;
}

/** Unwires every agent in the ledger (for `metaclaw uninstall`); one failure does not stop the others. */
export async function unwireAll(environment: ClawEnvironment): Promise<UnwireAllItem[]> {
  const items: UnwireAllItem[] = [];
  for (const entry of [...readLedger(environment.metaclawHome).entries].reverse()) {
    try {
      items.push({ type: entry.claw, result: await unwireClaw(entry.claw, environment) });
    } catch (error) {
      const clawError =
        error instanceof ClawError
          ? error
          : new ClawError('write_failed', `Could not unwire ${entry.claw}: ${String(error)}`, { claw: entry.claw, cause: error });
      items.push({ type: entry.claw, error: clawError });
    }
  }
  return items;
}
