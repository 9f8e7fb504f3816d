import type { LoadedConfig } from './load.js';
import type { UpstreamEntry } from './schema.js';

export type WireFormat = 'openai' | 'anthropic';
/** Where an upstream's key comes from; `client` means the client's own key is passed through. */
export type KeySource = 'config' | 'env' | 'client';

export interface UpstreamTarget {
  readonly name: string;
  /** Base URL without a trailing slash: `https://api.openai.com/v1`, `https://api.anthropic.com`. */
  readonly baseUrl: string;
  readonly format: WireFormat;
  /** Serves OpenAI's Responses API at `{baseUrl}/responses` (absent: it does not): Responses requests pass through instead of being translated. */
  readonly responses?: boolean;
  readonly apiKey: string | undefined;
  readonly keySource: KeySource;
  /** When set, replaces the client's `model` for requests to this upstream. */
  readonly model: string | undefined;
}

const OPENAI_BASE = 'https://api.openai.com/v1';
const ANTHROPIC_BASE = 'https://api.anthropic.com';

/**
 * The main upstream and the fallbacks, in the order they are tried. With no config file the main one
 * comes from OPENAI_BASE_URL / OPENAI_API_KEY or ANTHROPIC_API_KEY, else OpenAI with the client's own key.
 * Env keys are only sent to the base URL that came from the env (or the vendor's own), never to a
 * configured third-party base.
 */
export function resolveUpstreams(config: LoadedConfig, env: NodeJS.ProcessEnv = process.env): UpstreamTarget[] {
  return [resolveMain(config, env), ...config.values['llm.fallbacks'].map((entry, index) => resolveFallback(entry, index, env))];
}

function resolveMain(config: LoadedConfig, env: NodeJS.ProcessEnv): UpstreamTarget {
  const values = config.values;
  const model = values['llm.model_id'] || undefined;
  const passthrough = values['llm.auth_method'] === 'passthrough';
  // The user's own key: written in the config, or in the variable the config names (llm.api_key_env).
  const namedKey = passthrough ? undefined : values['llm.api_key'] ? undefined : keyFromEnv(values['llm.api_key_env'], env);
  const configuredKey = passthrough ? undefined : values['llm.api_key'] || namedKey;
  const configuredSource: KeySource = namedKey ? 'env' : 'config';
  if (values['llm.api_base']) {
    const format = detectFormat(values['llm.api_format'], values['llm.api_base'], values['llm.provider']);
    return {
      name: 'main',
      baseUrl: trimSlash(values['llm.api_base']),
      format,
      responses: format === 'openai' && servesResponses(values['llm.api_format'], values['llm.api_base']),
      apiKey: configuredKey,
      keySource: configuredKey ? configuredSource : 'client',
      model,
    };
  }
  const openaiBase = env['OPENAI_BASE_URL']?.trim();
  const openaiKey = env['OPENAI_API_KEY']?.trim();
  const anthropicKey = env['ANTHROPIC_API_KEY']?.trim();
  if (openaiBase || openaiKey || (!anthropicKey && values['llm.api_format'] !== 'anthropic')) {
    const key = configuredKey ?? (passthrough ? undefined : openaiKey || undefined);
    const baseUrl = trimSlash(openaiBase || OPENAI_BASE);
    const format = values['llm.api_format'] === 'anthropic' ? 'anthropic' : 'openai';
    return {
      name: 'main',
      baseUrl,
      format,
      responses: format === 'openai' && servesResponses(values['llm.api_format'], baseUrl),
      apiKey: key,
      keySource: configuredKey ? configuredSource : key ? 'env' : 'client',
      model,
    };
  }
  const key = configuredKey ?? (passthrough ? undefined : anthropicKey || undefined);
  return {
    name: 'main',
    baseUrl: trimSlash(env['ANTHROPIC_BASE_URL']?.trim() || ANTHROPIC_BASE),
    format: 'anthropic',
    responses: false,
    apiKey: key,
    keySource: configuredKey ? configuredSource : key ? 'env' : 'client',
    model,
  };
}

function resolveFallback(entry: UpstreamEntry, index: number, env: NodeJS.ProcessEnv): UpstreamTarget {
  const fromEnv = keyFromEnv(entry.api_key_env, env);
  const key = entry.api_key || fromEnv || undefined;
  const format = detectFormat(entry.api_format ?? 'auto', entry.api_base, '');
  return {
    name: entry.name ?? `fallback-${index + 1}`,
    baseUrl: trimSlash(entry.api_base),
    format,
    responses: format === 'openai' && servesResponses(entry.api_format ?? 'auto', entry.api_base),
    apiKey: key,
    keySource: entry.api_key ? 'config' : fromEnv ? 'env' : 'client',
    model: entry.model_id || undefined,
  };
}

/** The key in the environment variable `name` (empty or unset: none). */
function keyFromEnv(name: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  return (name ? env[name]?.trim() : undefined) || undefined;
}

/**
 * Key variables the config names (llm.api_key_env, a fallback's api_key_env) that are empty or not
 * set in `env`, with no key written beside them: that upstream would get the client's own key.
 */
export function missingKeyVariables(config: LoadedConfig, env: NodeJS.ProcessEnv = process.env): string[] {
  const values = config.values;
  const named = [
    { setting: 'llm.api_key_env', variable: values['llm.auth_method'] === 'passthrough' ? '' : values['llm.api_key_env'], key: values['llm.api_key'] },
    ...values['llm.fallbacks'].map((entry, index) => ({ setting: `llm.fallbacks[${index}].api_key_env`, variable: entry.api_key_env, key: entry.api_key })),
  ];
  return named
    .filter((item) => item.variable && !item.key && !keyFromEnv(item.variable, env))
    .map((item) => `${item.setting} names ${item.variable}, which is empty or not set: that upstream gets the client's own key`);
}

export function detectFormat(configured: string, baseUrl: string, provider: string): WireFormat {
  if (configured === 'openai' || configured === 'anthropic') return configured;
  if (configured === 'openai-responses') return 'openai';
  if (provider === 'anthropic') return 'anthropic';
  try {
    const host = new URL(baseUrl).hostname;
    if (host === 'api.anthropic.com' || host.endsWith('.anthropic.com')) return 'anthropic';
  } catch {
    // validated elsewhere; an unparsable URL is reported by the schema
  }
  return 'openai';
}

/**
 * Whether an upstream serves the Responses API too: said with `openai-responses`, or known for
 * OpenAI's own API under `auto`. Other OpenAI-compatible servers mostly have chat completions only,
 * so Responses requests to them are translated.
 */
export function servesResponses(configured: string, baseUrl: string): boolean {
  if (configured === 'openai-responses') return true;
  if (configured !== 'auto') return false;
  try {
    return new URL(baseUrl).hostname === 'api.openai.com';
  } catch {
    return false;
  }
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}
