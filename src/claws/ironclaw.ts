/** IronClaw: LLM_* variables in ~/.ironclaw/.env. */
import { envFormat } from './env-document.js';
import { inHome } from './paths.js';
import { openAIBaseUrl } from './target.js';
import { fileAdapter } from './wiring.js';

export const ironclawAdapter = fileAdapter({
  claw: 'ironclaw',
  agentName: 'IronClaw',
  format: envFormat,
  missing: 'create-in-existing-folder',
  setupHint: 'Run `ironclaw onboard` first so ~/.ironclaw exists.',
  binary: 'ironclaw',
  locate: (environment) => inHome(environment, '.ironclaw', '.env'),
  settings: (target) => [
    { path: ['LLM_BACKEND'], value: 'openai_compatible' },
    { path: ['LLM_BASE_URL'], value: openAIBaseUrl(target) },
    { path: ['LLM_MODEL'], value: target.model },
    { path: ['LLM_API_KEY'], value: target.apiKey },
  ],
  restart: () => ({ command: { command: 'ironclaw', args: ['service', 'restart'] }, label: "IronClaw's service" }),
});
