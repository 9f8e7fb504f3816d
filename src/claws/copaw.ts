/** CoPaw: models.default in ~/.copaw/config.json (its ConfigWatcher also hot-reloads). */
import { jsonFormat } from './json-document.js';
import { inHome } from './paths.js';
import { openAIBaseUrl } from './target.js';
import { fileAdapter } from './wiring.js';

export const copawAdapter = fileAdapter({
  claw: 'copaw',
  agentName: 'CoPaw',
  format: jsonFormat,
  missing: 'error',
  setupHint: 'Run CoPaw once (e.g. `copaw init`) so it writes ~/.copaw/config.json.',
  binary: 'copaw',
  locate: (environment) => inHome(environment, '.copaw', 'config.json'),
  settings: (target) => [
    {
      path: ['models', 'default'],
      value: { provider: 'openai_compatible', model: target.model, api_key: target.apiKey, base_url: openAIBaseUrl(target) },
    },
  ],
  restart: () => ({ command: { command: 'copaw', args: ['daemon', 'restart'] }, label: "CoPaw's daemon" }),
});
