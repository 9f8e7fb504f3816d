/**
 * NemoClaw: routes OpenShell's inference to a `metaclaw` provider (commands, recorded in the ledger
 * with their undo) and writes ~/.nemoclaw/config.json (a file, backed up and restored like any other).
 */
import { existsSync } from 'node:fs';
import { attempt, commandText, outputSummary } from './commands.js';
import type { Attempt } from './commands.js';
import { checkConfigFile, commitConfigFile, planConfigFile } from './config-file.js';
import type { ConfigFileSpec } from './config-file.js';
import { deepEqual, readPath } from './document.js';
import type { JsonValue, Setting } from './document.js';
import { jsonFormat } from './json-document.js';
import { findLedgerEntry, ledgerSaysWired, openLedgerEntry, saveLedgerEntry } from './ledger.js';
import type { LedgerAction, LedgerCommand, LedgerEntry } from './ledger.js';
import { inHome } from './paths.js';
import { normalizeTarget, openAIBaseUrl } from './target.js';
import { ClawError } from './types.js';
import type { ApplyResult, ClawAdapter, ClawEnvironment, Detection, VerifyResult, WiringTarget } from './types.js';
import { undoLedgerEntry } from './wiring.js';

const OPENSHELL = 'openshell';
const PROVIDER = 'metaclaw';
const PROVIDER_ACTION = 'openshell-provider';
const INFERENCE_ACTION = 'openshell-inference';

export interface InferenceSetting {
  /** what `openshell inference get` printed */
  raw: string;
  provider: string | undefined;
  model: string | undefined;
}

function nemoclawSettings(target: WiringTarget, current: unknown): Setting[] {
  const desired: Record<string, JsonValue> = {
    endpointType: 'custom',
    endpointUrl: openAIBaseUrl(target),
    ncpPartner: null,
    model: target.model,
    profile: 'ncp',
    credentialEnv: 'OPENAI_API_KEY',
  };
  const settings: Setting[] = Object.entries(desired).map(([key, value]) => ({ path: [key], value }));
  // Keep the onboarding time when nothing else changes, so a second apply writes nothing.
  const sameEndpoint = settings.every((setting) => deepEqual(readPath(current, setting.path), setting.value));
  const previous = readPath(current, ['onboardedAt']);
  const onboardedAt = sameEndpoint && typeof previous === 'string' ? previous : new Date().toISOString();
  return [...settings, { path: ['onboardedAt'], value: onboardedAt }];
}

const nemoclawFile: ConfigFileSpec = {
  claw: 'nemoclaw',
  agentName: 'NemoClaw',
  format: jsonFormat,
  missing: 'create',
  setupHint: '',
  settings: nemoclawSettings,
};

export function nemoclawConfigPath(environment: ClawEnvironment): string {
  return inHome(environment, '.nemoclaw', 'config.json');
}

/** Reads `provider:` and `model:` lines (or JSON fields) from `openshell inference get`. */
export function parseInference(raw: string): InferenceSetting {
  const field = (name: string): string | undefined => new RegExp(`^\\s*"?${name}"?\\s*[:=]\\s*"?([^",\\s]+)`, 'im').exec(raw)?.[1];
  return { raw, provider: field('provider'), model: field('model') };
}

async function readInference(environment: ClawEnvironment): Promise<InferenceSetting> {
  const result = await attempt(environment, { command: OPENSHELL, args: ['inference', 'get'] });
  if (!result.ran) return { raw: result.reason, provider: undefined, model: undefined };
  const raw = `${result.outcome.stdout}${result.outcome.stderr}`.trim();
  return result.outcome.code === 0 ? parseInference(raw) : { raw, provider: undefined, model: undefined };
}

function providerCommand(verb: 'create' | 'update', target: WiringTarget, apiKey: string): LedgerCommand {
  return {
    command: OPENSHELL,
    args: [
      'provider',
      verb,
      '--name',
      PROVIDER,
      '--type',
      'openai',
      '--credential',
      `OPENAI_API_KEY=${apiKey}`,
      '--config',
      `OPENAI_BASE_URL=${openAIBaseUrl(target)}`,
    ],
  };
}

function succeeded(result: Attempt): boolean {
  return result.ran && result.outcome.code === 0;
}

function failure(result: Attempt, command: LedgerCommand): ClawError {
  const why = result.ran ? outputSummary(result.outcome) : result.reason;
  return new ClawError('command_failed', `\`${commandText(command)}\` failed: ${why}.`, { claw: 'nemoclaw' });
}

/** Creates the metaclaw provider, or updates it when OpenShell says it already exists; returns the command that worked (key redacted). */
async function registerProvider(environment: ClawEnvironment, target: WiringTarget): Promise<LedgerCommand> {
  const create = providerCommand('create', target, target.apiKey);
  let result = await attempt(environment, create);
  let verb: 'create' | 'update' = 'create';
  if (!succeeded(result) && result.ran && /already exists/i.test(`${result.outcome.stdout}\n${result.outcome.stderr}`)) {
    verb = 'update';
    result = await attempt(environment, providerCommand('update', target, target.apiKey));
  }
  if (!succeeded(result)) throw failure(result, providerCommand(verb, target, '<redacted>'));
  return providerCommand(verb, target, '<redacted>');
}

function recordOnce(entry: LedgerEntry, action: LedgerAction): void {
  if (!entry.actions.some((existing) => existing.id === action.id)) entry.actions.push(action);
}

function inferenceUndo(previous: InferenceSetting): Pick<LedgerAction, 'undo' | 'undoNote'> {
  const { provider, model } = previous;
  if (provider !== undefined && model !== undefined && provider !== PROVIDER) {
    return { undo: [{ command: OPENSHELL, args: ['inference', 'set', '--provider', provider, '--model', model] }], undoNote: null };
  }
  return {
    undo: [],
    undoNote: `MetaClaw could not tell which inference provider OpenShell used before (\`openshell inference get\` said: ${previous.raw || 'nothing'}); choose one again with \`openshell inference set --provider <name> --model <id>\`.`,
  };
}

/** Points OpenShell inference at metaclaw/<model>, recording each step (with its undo) as it succeeds. */
async function routeInference(environment: ClawEnvironment, target: WiringTarget, entry: LedgerEntry, previous: InferenceSetting): Promise<void> {
  const registered = await registerProvider(environment, target);
  recordOnce(entry, {
    id: PROVIDER_ACTION,
    description: 'registered the metaclaw provider in OpenShell',
    ran: [registered],
    output: null,
    undo: [{ command: OPENSHELL, args: ['provider', 'delete', PROVIDER] }],
    undoNote: null,
  });
  saveLedgerEntry(environment.metaclawHome, entry);
  const select: LedgerCommand = { command: OPENSHELL, args: ['inference', 'set', '--provider', PROVIDER, '--model', target.model] };
  const result = await attempt(environment, select);
  if (!succeeded(result)) throw failure(result, select);
  recordOnce(entry, {
    id: INFERENCE_ACTION,
    description: 'routed OpenShell inference to metaclaw',
    ran: [select],
    output: previous.raw,
    ...inferenceUndo(previous),
  });
  saveLedgerEntry(environment.metaclawHome, entry);
}

async function apply(rawTarget: WiringTarget, environment: ClawEnvironment): Promise<ApplyResult> {
  const target = normalizeTarget(rawTarget);
  if (environment.which(OPENSHELL) === undefined) {
    throw new ClawError(
      'binary_missing',
      'NemoClaw is wired through OpenShell, but `openshell` is not on PATH. Install NemoClaw first; MetaClaw changed nothing.',
      { claw: 'nemoclaw' },
    );
  }
  const path = nemoclawConfigPath(environment);
  const plan = planConfigFile(nemoclawFile, path, target);
  const before = findLedgerEntry(environment.metaclawHome, 'nemoclaw');
  const inference = await readInference(environment);
  const routed =
    before !== undefined &&
    deepEqual(before.target, target) &&
    before.actions.some((action) => action.id === PROVIDER_ACTION) &&
    inference.provider === PROVIDER &&
    inference.model === target.model;
  const entry = openLedgerEntry(environment.metaclawHome, 'nemoclaw', path, target);
  const messages: string[] = [];
  if (!routed) {
    await routeInference(environment, target, entry, inference);
    messages.push(`Routed OpenShell inference to the metaclaw provider (model ${target.model}).`);
  }
  if (plan.after !== undefined) {
    commitConfigFile(plan, entry, environment.metaclawHome);
    messages.push(`Wrote ${path}.`);
  }
  const changed = !routed || plan.after !== undefined;
  if (!changed) messages.push('NemoClaw already points at MetaClaw; nothing changed.');
  const backupPath = entry.files.find((file) => file.path === path)?.backupPath ?? null;
  return { type: 'nemoclaw', changed, configPath: path, ...(backupPath === null ? {} : { backupPath }), restarted: false, messages };
}

async function verify(rawTarget: WiringTarget, environment: ClawEnvironment): Promise<VerifyResult> {
  const target = normalizeTarget(rawTarget);
  const problems = checkConfigFile(nemoclawFile, nemoclawConfigPath(environment), target);
  if (environment.which(OPENSHELL) === undefined) {
    problems.push('`openshell` is not on PATH, so OpenShell inference cannot be routed to MetaClaw.');
  } else {
    const inference = await readInference(environment);
    if (inference.provider !== PROVIDER || inference.model !== target.model) {
      problems.push(`OpenShell inference uses ${inference.provider ?? '?'}/${inference.model ?? '?'}, expected ${PROVIDER}/${target.model}.`);
    }
  }
  return { wired: problems.length === 0, problems, messages: [] };
}

function detect(environment: ClawEnvironment): Detection {
  const configPath = nemoclawConfigPath(environment);
  const binaryPath = environment.which(OPENSHELL);
  const configExists = existsSync(configPath);
  return {
    type: 'nemoclaw',
    name: 'NemoClaw',
    installed: binaryPath !== undefined || existsSync(inHome(environment, '.nemoclaw')),
    configPath,
    configExists,
    binaryPath,
    wired: ledgerSaysWired(environment.metaclawHome, 'nemoclaw'),
    notes: binaryPath === undefined ? ['`openshell` is not on PATH; NemoClaw cannot be wired without it.'] : [],
  };
}

export const nemoclawAdapter: ClawAdapter = {
  type: 'nemoclaw',
  name: 'NemoClaw',
  detect: async (environment) => detect(environment),
  apply,
  verify,
  unwire: async (environment) => (await undoLedgerEntry(nemoclawFile, environment)).unwire,
};
