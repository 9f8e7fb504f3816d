/**
 * Qwen Code: in $QWEN_HOME/settings.json (default ~/.qwen), a MetaClaw entry first in
 * modelProviders.openai (Qwen Code takes the first entry with a model's id, so one of the user's with
 * the same id does not win), its key in settings' env, the OpenAI auth type and the model selected.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { findItemIndex, isPlainObject, readPath } from './document.js';
import type { ItemSelector, JsonValue, Setting } from './document.js';
import { jsoncFormat } from './json-document.js';
import { folderFrom } from './paths.js';
import { openAIBaseUrl } from './target.js';
import type { ClawEnvironment, WiringTarget } from './types.js';
import { fileAdapter } from './wiring.js';

/** The variable holding the key; it also marks MetaClaw's entry in the list. */
const KEY_VARIABLE = 'METACLAW_API_KEY';
const ENTRY: ItemSelector = { key: 'envKey', equals: KEY_VARIABLE, first: true };

export function qwenSettingsPath(environment: ClawEnvironment): string {
  return join(folderFrom(environment, 'QWEN_HOME', '.qwen'), 'settings.json');
}

function qwenSettings(target: WiringTarget): Setting[] {
  const entry: Record<string, JsonValue> = {
    id: target.model,
    name: `${target.model} (MetaClaw)`,
    baseUrl: openAIBaseUrl(target),
    envKey: KEY_VARIABLE,
  };
  if (target.contextWindow > 0) entry.generationConfig = { contextWindowSize: target.contextWindow };
  return [
    { path: ['modelProviders', 'openai', ENTRY], value: entry },
    { path: ['env', KEY_VARIABLE], value: target.apiKey },
    { path: ['security', 'auth', 'selectedType'], value: 'openai' },
    { path: ['model', 'name'], value: target.model },
  ];
}

/** An entry of the user's with the same model id and no baseUrl is looked up before ours by id. */
async function verifyQwen(environment: ClawEnvironment, target: WiringTarget): Promise<{ problems: string[]; messages: string[] }> {
  const path = qwenSettingsPath(environment);
  if (!existsSync(path)) return { problems: [], messages: [] };
  let models: unknown;
  try {
    models = readPath(jsoncFormat.parse(readFileSync(path, 'utf8'), path).value(), ['modelProviders', 'openai']);
  } catch {
    return { problems: [], messages: [] };
  }
  if (!Array.isArray(models)) return { problems: [], messages: [] };
  const ours = findItemIndex(models, ENTRY);
  const model = target.model;
  const shadowing = models.findIndex(
    (item, index) => index !== ours && isPlainObject(item) && item.id === model && (index < ours || typeof item.baseUrl !== 'string' || item.baseUrl === ''),
  );
  if (shadowing < 0) return { problems: [], messages: [] };
  return {
    problems: [`${path}: modelProviders.openai has another entry for ${model} that Qwen Code picks before MetaClaw's; rename or remove it.`],
    messages: [],
  };
}

export const qwenCodeAdapter = fileAdapter({
  claw: 'qwen-code',
  agentName: 'Qwen Code',
  format: jsoncFormat,
  missing: 'create-in-existing-folder',
  setupHint: 'Run `qwen` once (or set QWEN_HOME to its folder) first.',
  binary: 'qwen',
  locate: qwenSettingsPath,
  settings: qwenSettings,
  restart: () => 'Qwen Code reads settings.json when it starts; new `qwen` sessions use the proxy.',
  verifyMore: verifyQwen,
});
