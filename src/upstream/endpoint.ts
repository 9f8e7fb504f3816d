import type { UpstreamTarget } from '../config/index.js';

/**
 * Where an upstream's endpoints are and what every call to it carries: the one place that knows
 * an OpenAI-compatible base ends in `/v1` while an Anthropic one may or may not, and which header
 * a key goes in. The forwarder, the model list, the setup probe and the learning calls use it.
 */

/** The client's own credentials, passed upstream when no key is configured for the target. */
export interface ClientCredentials {
  authorization?: string;
  apiKey?: string;
}

/**
 * `model`: the target's chat endpoint (chat completions or messages); `responses`: OpenAI's
 * Responses API; `count_tokens`: Anthropic's token counter; `embeddings`: OpenAI's embeddings.
 */
export type EndpointKind = 'model' | 'models' | 'responses' | 'count_tokens' | 'embeddings';

const ANTHROPIC_VERSION = '2023-06-01';

/** A target's base with the API version folder, for paths that are the same in both formats. */
function versionedBase(target: Pick<UpstreamTarget, 'baseUrl' | 'format'>): string {
  return target.format === 'openai' || target.baseUrl.endsWith('/v1') ? target.baseUrl : `${target.baseUrl}/v1`;
}

export function endpointPath(target: Pick<UpstreamTarget, 'baseUrl' | 'format'>, kind: EndpointKind): string {
  switch (kind) {
    case 'model':
      return target.format === 'openai' ? `${target.baseUrl}/chat/completions` : `${versionedBase(target)}/messages`;
    case 'count_tokens':
      return `${versionedBase(target)}/messages/count_tokens`;
    default:
      return `${versionedBase(target)}/${kind}`;
  }
}

const modelEndpoints = new WeakMap<UpstreamTarget, URL>();
const responsesEndpoints = new WeakMap<UpstreamTarget, URL>();

/** A target's model or Responses endpoint (parsed once per target: the forwarder asks on every request). */
export function endpointUrl(target: UpstreamTarget, kind: 'model' | 'responses' = 'model'): URL {
  const cache = kind === 'model' ? modelEndpoints : responsesEndpoints;
  let url = cache.get(target);
  if (!url) {
    url = new URL(endpointPath(target, kind));
    cache.set(target, url);
  }
  return url;
}

/** The key for one target: its own, or the client's passed through in the target's convention. */
export function authHeaders(target: Pick<UpstreamTarget, 'apiKey' | 'format'>, credentials: ClientCredentials): Record<string, string> {
  if (target.apiKey) return target.format === 'anthropic' ? { 'x-api-key': target.apiKey } : { authorization: `Bearer ${target.apiKey}` };
  const bearer = credentials.authorization?.replace(/^Bearer\s+/i, '');
  if (target.format === 'openai') {
    if (credentials.authorization) return { authorization: credentials.authorization };
    return credentials.apiKey ? { authorization: `Bearer ${credentials.apiKey}` } : {};
  }
  if (credentials.apiKey) return { 'x-api-key': credentials.apiKey };
  // Anthropic API keys go in x-api-key; OAuth (subscription) tokens stay a bearer token.
  if (bearer && bearer.startsWith('sk-ant-api')) return { 'x-api-key': bearer };
  return credentials.authorization ? { authorization: credentials.authorization } : {};
}

/** The API version header an Anthropic upstream requires (the client's own when it sent one). */
export function versionHeaders(target: Pick<UpstreamTarget, 'format'>, clientVersion?: string): Record<string, string> {
  return target.format === 'anthropic' ? { 'anthropic-version': clientVersion ?? ANTHROPIC_VERSION } : {};
}

/** The headers a plain JSON call to the upstream needs: its key (or the client's) and its API version. */
export function jsonHeaders(target: Pick<UpstreamTarget, 'apiKey' | 'format'>, credentials: ClientCredentials): Record<string, string> {
  return { accept: 'application/json', 'content-type': 'application/json', ...authHeaders(target, credentials), ...versionHeaders(target) };
}
