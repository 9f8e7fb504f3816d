/**
 * Claude Code: `env.ANTHROPIC_BASE_URL` in its user settings.json ($CLAUDE_CONFIG_DIR, else
 * ~/.claude), and MetaClaw's key as an `x-metaclaw-api-key` line of `env.ANTHROPIC_CUSTOM_HEADERS`.
 * Claude Code keeps its own login (subscription, Console key, ANTHROPIC_AUTH_TOKEN): the proxy
 * passes it upstream when MetaClaw has no key of its own, and the proxy key, in its own header,
 * never replaces it. No model is set: MetaClaw's llm.model_id decides what the upstream runs.
 */
import { join } from 'node:path';
import { readPath } from './document.js';
import type { Setting } from './document.js';
import { jsonFormat } from './json-document.js';
import { folderFrom, variable } from './paths.js';
import type { ClawEnvironment, WiringTarget } from './types.js';
import { fileAdapter } from './wiring.js';

const HEADERS_VARIABLE = 'ANTHROPIC_CUSTOM_HEADERS';
const KEY_HEADER = 'x-metaclaw-api-key';

export function claudeSettingsPath(environment: ClawEnvironment): string {
  return join(folderFrom(environment, 'CLAUDE_CONFIG_DIR', '.claude'), 'settings.json');
}

/** The user's own header lines (one "Name: Value" per line) with MetaClaw's key line last. */
function customHeaders(target: WiringTarget, current: unknown): string {
  const existing = readPath(current, ['env', HEADERS_VARIABLE]);
  const own = typeof existing === 'string' ? existing.split(/\r?\n/).filter((line) => line.trim() !== '' && !isKeyHeader(line)) : [];
  return [...own, `${KEY_HEADER}: ${target.apiKey}`].join('\n');
}

function isKeyHeader(line: string): boolean {
  return line.trimStart().toLowerCase().startsWith(`${KEY_HEADER}:`);
}

function claudeSettings(target: WiringTarget, current: unknown): Setting[] {
  return [
    // Claude Code appends /v1/messages itself.
    { path: ['env', 'ANTHROPIC_BASE_URL'], value: target.proxyUrl },
    { path: ['env', HEADERS_VARIABLE], value: customHeaders(target, current), mergesUserValue: true },
  ];
}

/** settings.json's env wins over the shell's, so headers the shell sets are not sent while wired. */
async function verifyClaude(environment: ClawEnvironment): Promise<{ problems: string[]; messages: string[] }> {
  const shell = variable(environment, HEADERS_VARIABLE);
  if (shell === undefined) return { problems: [], messages: [] };
  return {
    problems: [],
    messages: [`Your environment sets ${HEADERS_VARIABLE}; while wired, the value in settings.json replaces it. Add its lines there if you need them.`],
  };
}

export const claudeCodeAdapter = fileAdapter({
  claw: 'claude-code',
  agentName: 'Claude Code',
  format: jsonFormat,
  missing: 'create-in-existing-folder',
  setupHint: 'Run `claude` once (or set CLAUDE_CONFIG_DIR to its folder) first.',
  binary: 'claude',
  locate: claudeSettingsPath,
  settings: claudeSettings,
  restart: () => 'Claude Code reads settings.json when a session starts; new `claude` sessions use the proxy.',
  verifyMore: verifyClaude,
});
