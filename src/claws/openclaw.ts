/**
 * OpenClaw: models.providers.metaclaw plus agents.defaults.model.primary in its JSON5 config, written
 * with `openclaw config set` when the CLI is on PATH (else by editing the file, comments kept).
 * OpenClaw hot-reloads its config, so nothing is restarted. agents.defaults.sandbox is never touched.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { attempt, outputSummary } from './commands.js';
import { isPlainObject, readPath } from './document.js';
import type { JsonValue, KeyPath, Setting } from './document.js';
import type { FilePlan } from './config-file.js';
import { json5Format } from './json-document.js';
import { expandHome, folderFrom, variable } from './paths.js';
import { openAIBaseUrl } from './target.js';
import type { ClawEnvironment, WiringTarget } from './types.js';
import { fileAdapter } from './wiring.js';

const VALIDATE_TIMEOUT_MS = 30_000;
/** `openclaw config set` loads plugins and validates the whole config: seconds, not milliseconds. */
const CONFIG_SET_TIMEOUT_MS = 90_000;

/** OpenClaw's path syntax: dots, with bracketed JSON strings for keys such as "metaclaw/qwen3.5". */
function openclawPath(path: KeyPath): string | undefined {
  let text = '';
  for (const segment of path) {
    if (typeof segment !== 'string') return undefined;
    text += /^[A-Za-z_][A-Za-z0-9_-]*$/.test(segment) ? `${text === '' ? '' : '.'}${segment}` : `[${JSON.stringify(segment)}]`;
  }
  return text;
}

/**
 * Writes the settings with `openclaw config set --batch-json` (OpenClaw's docs prefer CLI writes): it
 * validates the whole result before committing, and a running gateway trusts it at once. It rewrites
 * JSON5 as plain JSON, so comments go while wired; unwiring restores the original bytes.
 */
async function writeWithOpenclaw(environment: ClawEnvironment, plan: FilePlan): Promise<string | undefined> {
  const batch: Array<{ path: string; value: JsonValue }> = [];
  for (const setting of plan.settings) {
    const path = openclawPath(setting.path);
    if (path === undefined) return 'a setting has no OpenClaw path';
    batch.push({ path, value: setting.value });
  }
  const result = await attempt(environment, { command: 'openclaw', args: ['config', 'set', '--batch-json', JSON.stringify(batch)] }, CONFIG_SET_TIMEOUT_MS);
  if (!result.ran) return result.reason;
  return result.outcome.code === 0 ? undefined : outputSummary(result.outcome);
}

function openclawStateFolder(environment: ClawEnvironment): string {
  return folderFrom(environment, 'OPENCLAW_STATE_DIR', '.openclaw');
}

/** $OPENCLAW_CONFIG_PATH, else $OPENCLAW_STATE_DIR/openclaw.json, else ~/.openclaw/openclaw.json. */
export function openclawConfigPath(environment: ClawEnvironment): string {
  const explicit = variable(environment, 'OPENCLAW_CONFIG_PATH');
  return explicit === undefined ? join(openclawStateFolder(environment), 'openclaw.json') : expandHome(environment, explicit);
}

export function openclawProvider(target: WiringTarget): JsonValue {
  const anthropic = target.apiFormat === 'anthropic';
  return {
    // The Anthropic client appends /v1/messages itself.
    baseUrl: anthropic ? target.proxyUrl : openAIBaseUrl(target),
    apiKey: target.apiKey,
    api: anthropic ? 'anthropic-messages' : 'openai-completions',
    models: [
      {
        id: target.model,
        name: target.model,
        reasoning: false,
        input: ['text'],
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        ...(target.contextWindow > 0 ? { contextWindow: target.contextWindow } : {}),
        // Makes OpenClaw send its session id, which the proxy needs to group turns.
        compat: { sendSessionAffinityHeaders: true, supportsUsageInStreaming: true },
      },
    ],
  };
}

function openclawSettings(target: WiringTarget, current: unknown): Setting[] {
  const reference = `metaclaw/${target.model}`;
  // `agents.defaults.model` may be the short string form; keep the user's shape.
  const modelPath =
    typeof readPath(current, ['agents', 'defaults', 'model']) === 'string' ? ['agents', 'defaults', 'model'] : ['agents', 'defaults', 'model', 'primary'];
  const settings: Setting[] = [
    { path: ['models', 'providers', 'metaclaw'], value: openclawProvider(target) },
    { path: modelPath, value: reference },
  ];
  // A non-empty agents.defaults.models is an allowlist for /model and session overrides; our model must be on it.
  const allowlist = readPath(current, ['agents', 'defaults', 'models']);
  if (isPlainObject(allowlist) && Object.keys(allowlist).length > 0) settings.push({ path: ['agents', 'defaults', 'models', reference], value: {} });
  if (target.plugin) settings.push(...pluginSettings(target.plugin, current));
  return settings;
}

/**
 * MetaClaw's OpenClaw plugin, loaded from its folder in place (no copy to clean up) and enabled with
 * its config. It needs no conversation access: it only listens to `session_end`.
 */
function pluginSettings(plugin: NonNullable<WiringTarget['plugin']>, current: unknown): Setting[] {
  const paths = readPath(current, ['plugins', 'load', 'paths']);
  const existing = Array.isArray(paths) ? (paths as JsonValue[]) : [];
  const settings: Setting[] = [
    { path: ['plugins', 'load', 'paths'], value: existing.includes(plugin.path) ? existing : [...existing, plugin.path] },
    { path: ['plugins', 'entries', 'metaclaw'], value: { enabled: true, config: plugin.config as JsonValue } },
  ];
  const allow = readPath(current, ['plugins', 'allow']);
  if (Array.isArray(allow) && allow.length > 0 && !allow.includes('metaclaw'))
    settings.push({ path: ['plugins', 'allow'], value: [...(allow as JsonValue[]), 'metaclaw'] });
  return settings;
}

/**
 * Per-agent catalogs (<state>/agents/<id>/agent/models.json) merge over models.providers and their
 * non-empty baseUrl wins (openclaw/openclaw#73144), so a stale `metaclaw` entry there silently
 * bypasses the wiring.
 */
function staleAgentCatalogs(environment: ClawEnvironment, target: WiringTarget): string[] {
  const agents = join(openclawStateFolder(environment), 'agents');
  if (!existsSync(agents)) return [];
  const expected = readPath(openclawProvider(target), ['baseUrl']);
  const problems: string[] = [];
  for (const agent of readdirSync(agents)) {
    const catalog = join(agents, agent, 'agent', 'models.json');
    if (!existsSync(catalog)) continue;
    let baseUrl: unknown;
    try {
      baseUrl = readPath(json5Format.parse(readFileSync(catalog, 'utf8'), catalog).value(), ['providers', 'metaclaw', 'baseUrl']);
    } catch {
      continue;
    }
    if (typeof baseUrl === 'string' && baseUrl !== '' && baseUrl !== expected) {
      problems.push(`${catalog} sets the metaclaw provider's baseUrl to ${baseUrl}, which overrides ${String(expected)}; remove that entry.`);
    }
  }
  return problems;
}

async function verifyOpenclaw(environment: ClawEnvironment, target: WiringTarget): Promise<{ problems: string[]; messages: string[] }> {
  const validation = await validateWithCli(environment);
  return { problems: [...staleAgentCatalogs(environment, target), ...validation.problems], messages: validation.messages };
}

/** `openclaw config validate --json` when the CLI is present; its absence or failure to run is only a note. */
async function validateWithCli(environment: ClawEnvironment): Promise<{ problems: string[]; messages: string[] }> {
  if (environment.which('openclaw') === undefined) return { problems: [], messages: ['`openclaw` is not on PATH, so its own validator was not run.'] };
  const result = await attempt(environment, { command: 'openclaw', args: ['config', 'validate', '--json'] }, VALIDATE_TIMEOUT_MS);
  if (!result.ran) return { problems: [], messages: [`Could not run \`openclaw config validate\` (${result.reason}).`] };
  const report = jsonObjectIn(result.outcome.stdout);
  if (report !== undefined && (report.valid === false || report.ok === false)) {
    return { problems: [`\`openclaw config validate\` rejects the config: ${issuesOf(report) ?? outputSummary(result.outcome)}`], messages: [] };
  }
  if (result.outcome.code === 0) return { problems: [], messages: ['`openclaw config validate` accepts the config.'] };
  return { problems: [], messages: [`\`openclaw config validate\` could not check the config (${outputSummary(result.outcome)}).`] };
}

function jsonObjectIn(output: string): Record<string, unknown> | undefined {
  const start = output.indexOf('{');
  if (start < 0) return undefined;
  try {
    const parsed: unknown = JSON.parse(output.slice(start));
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function issuesOf(report: Record<string, unknown>): string | undefined {
  const issues = report.issues ?? report.errors;
  if (!Array.isArray(issues) || issues.length === 0) return undefined;
  return issues
    .slice(0, 3)
    .map((issue: unknown) => {
      if (typeof issue === 'string') return issue;
      const { path, message } = (issue ?? {}) as { path?: unknown; message?: unknown };
      return [path, message]
        .filter((part) => part !== undefined)
        .map(String)
        .join(': ');
    })
    .join('; ');
}

export const openclawAdapter = fileAdapter({
  claw: 'openclaw',
  agentName: 'OpenClaw',
  format: json5Format,
  missing: 'create-in-existing-folder',
  setupHint: 'Run `openclaw onboard` (or set OPENCLAW_CONFIG_PATH to its config file) first.',
  binary: 'openclaw',
  locate: openclawConfigPath,
  settings: openclawSettings,
  restart: () => 'OpenClaw reloads its config by itself; no restart needed.',
  verifyMore: verifyOpenclaw,
  agentWriter: { label: '`openclaw config set`', write: writeWithOpenclaw },
});
