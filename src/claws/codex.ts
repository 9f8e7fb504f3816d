/**
 * Codex: a `metaclaw` model provider in $CODEX_HOME/config.toml (default ~/.codex), speaking the
 * Responses API (current Codex speaks nothing else), selected with top-level `model_provider`. The
 * user's `model` is kept (MetaClaw's llm.model_id decides what the upstream runs). The key goes in
 * `experimental_bearer_token`: `env_key` would need a variable set in every shell that runs Codex.
 */
import { join } from 'node:path';
import { folderFrom } from './paths.js';
import { openAIBaseUrl } from './target.js';
import { tomlFormat } from './toml-document.js';
import type { ClawEnvironment } from './types.js';
import { fileAdapter } from './wiring.js';

export function codexConfigPath(environment: ClawEnvironment): string {
  return join(folderFrom(environment, 'CODEX_HOME', '.codex'), 'config.toml');
}

export const codexAdapter = fileAdapter({
  claw: 'codex',
  agentName: 'Codex',
  format: tomlFormat,
  missing: 'create-in-existing-folder',
  setupHint: 'Run `codex` once (or set CODEX_HOME to its folder) first.',
  binary: 'codex',
  locate: codexConfigPath,
  settings: (target) => [
    { path: ['model_provider'], value: 'metaclaw' },
    {
      path: ['model_providers', 'metaclaw'],
      value: { name: 'MetaClaw', base_url: openAIBaseUrl(target), wire_api: 'responses', experimental_bearer_token: target.apiKey },
    },
  ],
  restart: () => 'Codex reads config.toml when it starts; new `codex` runs use the proxy.',
});
