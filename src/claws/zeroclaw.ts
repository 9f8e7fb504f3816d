/** ZeroClaw: top-level provider keys in ~/.zeroclaw/config.toml (before its first [table]). */
import { inHome } from './paths.js';
import { openAIBaseUrl } from './target.js';
import { tomlFormat } from './toml-document.js';
import { fileAdapter } from './wiring.js';

export const zeroclawAdapter = fileAdapter({
  claw: 'zeroclaw',
  agentName: 'ZeroClaw',
  format: tomlFormat,
  missing: 'error',
  setupHint: 'Run `zeroclaw onboard` first so it writes ~/.zeroclaw/config.toml.',
  binary: 'zeroclaw',
  locate: (environment) => inHome(environment, '.zeroclaw', 'config.toml'),
  settings: (target) => [
    { path: ['provider'], value: 'openai-compatible' },
    { path: ['model'], value: target.model },
    { path: ['api_key'], value: target.apiKey },
    { path: ['base_url'], value: openAIBaseUrl(target) },
  ],
  restart: () => ({ command: { command: 'zeroclaw', args: ['service', 'restart'] }, label: "ZeroClaw's service" }),
});
