/**
 * opencode: a `metaclaw` provider (@ai-sdk/openai-compatible) in its global config, selected as
 * the top-level `model`. The user's own providers stay, so their models are still one /models away,
 * and the model they had comes back on unwire. `small_model` (titles) is left alone.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { readPath } from './document.js';
import type { JsonValue, Setting } from './document.js';
import { jsoncFormat } from './json-document.js';
import { expandHome, folderFrom, variable } from './paths.js';
import { openAIBaseUrl } from './target.js';
import type { ClawEnvironment, WiringTarget } from './types.js';
import { fileAdapter } from './wiring.js';

const PROVIDER = 'metaclaw';

/** $OPENCODE_CONFIG, else opencode.jsonc or opencode.json in $XDG_CONFIG_HOME/opencode (default ~/.config/opencode). */
export function opencodeConfigPath(environment: ClawEnvironment): string {
  const explicit = variable(environment, 'OPENCODE_CONFIG');
  if (explicit !== undefined) return expandHome(environment, explicit);
  const folder = join(folderFrom(environment, 'XDG_CONFIG_HOME', '.config'), 'opencode');
  const jsonc = join(folder, 'opencode.jsonc');
  return existsSync(jsonc) ? jsonc : join(folder, 'opencode.json');
}

function opencodeSettings(target: WiringTarget, current: unknown): Setting[] {
  const settings: Setting[] = [
    {
      path: ['provider', PROVIDER],
      value: {
        npm: '@ai-sdk/openai-compatible',
        name: 'MetaClaw',
        options: { baseURL: openAIBaseUrl(target), apiKey: target.apiKey },
        models: { [target.model]: { name: `${target.model} (MetaClaw)`, tool_call: true } },
      },
    },
    { path: ['model'], value: `${PROVIDER}/${target.model}` },
  ];
  // A non-empty enabled_providers is an allowlist; MetaClaw's provider must be on it.
  const enabled = readPath(current, ['enabled_providers']);
  if (Array.isArray(enabled) && enabled.length > 0 && !enabled.includes(PROVIDER))
    settings.push({ path: ['enabled_providers'], value: [...(enabled as JsonValue[]), PROVIDER] });
  return settings;
}

export const opencodeAdapter = fileAdapter({
  claw: 'opencode',
  agentName: 'opencode',
  format: jsoncFormat,
  missing: 'create-in-existing-folder',
  setupHint: 'Run `opencode` once (or set OPENCODE_CONFIG to its config file) first.',
  binary: 'opencode',
  locate: opencodeConfigPath,
  settings: opencodeSettings,
  restart: () => 'opencode reads its config when it starts; new `opencode` sessions use the proxy.',
});
