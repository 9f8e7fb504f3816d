import { ClawError } from './types.js';
import type { WiringTarget } from './types.js';

const DEFAULT_API_KEY = 'metaclaw';

/**
 * Checks a target and puts it in canonical form: proxyUrl without trailing slashes or /v1 (so every
 * adapter can append exactly what its protocol needs), an empty key replaced by "metaclaw".
 */
export function normalizeTarget(target: WiringTarget): WiringTarget {
  let url: URL;
  try {
    url = new URL(target.proxyUrl);
  } catch {
    throw new ClawError('invalid_target', `The proxy URL "${target.proxyUrl}" is not a URL (expected e.g. http://127.0.0.1:30000).`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ClawError('invalid_target', `The proxy URL "${target.proxyUrl}" must start with http:// or https://.`);
  if (target.model.trim() === '') throw new ClawError('invalid_target', 'The model to wire is empty.');
  if (!Number.isInteger(target.contextWindow) || target.contextWindow < 0) {
    throw new ClawError('invalid_target', `The context window ${target.contextWindow} must be a whole number of tokens (0 = leave unset).`);
  }
  if (target.apiFormat !== 'openai' && target.apiFormat !== 'anthropic')
    throw new ClawError('invalid_target', `Unknown API format "${String(target.apiFormat)}".`);
  const proxyUrl = target.proxyUrl.trim().replace(/\/+$/, '').replace(/\/v1$/, '');
  return { ...target, proxyUrl, apiKey: target.apiKey === '' ? DEFAULT_API_KEY : target.apiKey };
}

/** Base URL for OpenAI-compatible clients, which append /chat/completions. */
export function openAIBaseUrl(target: WiringTarget): string {
  return `${target.proxyUrl}/v1`;
}
