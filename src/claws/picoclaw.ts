/** PicoClaw: a `metaclaw` entry in model_list of ~/.picoclaw/config.json, selected as the default model. */
import { jsonFormat } from './json-document.js';
import { inHome } from './paths.js';
import { openAIBaseUrl } from './target.js';
import { fileAdapter } from './wiring.js';

export const picoclawAdapter = fileAdapter({
  claw: 'picoclaw',
  agentName: 'PicoClaw',
  format: jsonFormat,
  missing: 'error',
  setupHint: 'Run `picoclaw onboard` first so it writes ~/.picoclaw/config.json.',
  binary: 'picoclaw',
  locate: (environment) => inHome(environment, '.picoclaw', 'config.json'),
  settings: (target) => [
    {
      path: ['model_list', { key: 'model_name', equals: 'metaclaw' }],
      value: { model_name: 'metaclaw', model: `openai/${target.model}`, api_key: target.apiKey, api_base: openAIBaseUrl(target) },
    },
    { path: ['agents', 'defaults', 'model_name'], value: 'metaclaw' },
  ],
  restart: () => ({ command: { command: 'picoclaw', args: ['gateway', 'restart'] }, label: "PicoClaw's gateway" }),
});
