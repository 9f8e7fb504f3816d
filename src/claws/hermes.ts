/** Hermes Agent: a `metaclaw` entry in custom_providers of $HERMES_HOME/config.yaml, selected as the model. */
import { join } from 'node:path';
import { readPath } from './document.js';
import type { Setting } from './document.js';
import { folderFrom } from './paths.js';
import { openAIBaseUrl } from './target.js';
import type { ClawEnvironment, WiringTarget } from './types.js';
import { fileAdapter } from './wiring.js';
import { yamlFormat } from './yaml-document.js';

const DEFAULT_CONTEXT_LENGTH = 128_000;

export function hermesConfigPath(environment: ClawEnvironment): string {
  return join(folderFrom(environment, 'HERMES_HOME', '.hermes'), 'config.yaml');
}

function hermesSettings(target: WiringTarget, current: unknown): Setting[] {
  const provider: Setting = {
    path: ['custom_providers', { key: 'name', equals: 'metaclaw' }],
    value: {
      name: 'metaclaw',
      base_url: openAIBaseUrl(target),
      api_key: target.apiKey,
      models: { [target.model]: { context_length: target.contextWindow > 0 ? target.contextWindow : DEFAULT_CONTEXT_LENGTH } },
    },
  };
  // Older configs hold `model` as a plain string; it becomes a mapping (and goes back to the string on unwire).
  if (typeof readPath(current, ['model']) === 'string') return [provider, { path: ['model'], value: { default: target.model, provider: 'custom:metaclaw' } }];
  return [provider, { path: ['model', 'provider'], value: 'custom:metaclaw' }, { path: ['model', 'default'], value: target.model }];
}

export const hermesAdapter = fileAdapter({
  claw: 'hermes',
  agentName: 'Hermes Agent',
  format: yamlFormat,
  missing: 'create-in-existing-folder',
  setupHint: 'Run `hermes setup` first (or set HERMES_HOME to its folder).',
  binary: 'hermes',
  locate: hermesConfigPath,
  settings: hermesSettings,
  restart: () => ({ command: { command: 'hermes', args: ['gateway', 'restart'] }, label: "Hermes' gateway" }),
});
