import { ConfigError } from '../../errors.js';
import { urlHost } from '../../shared/url-host.js';
import type { BackendKind } from './transport.js';
import { DEFAULT_MINT_BASE_URL, DEFAULT_TINKER_BASE_URL } from './wire.js';

/**
 * Which training service `rl.backend` means, with MetaClaw's rules (aiming-lab/MetaClaw `b1c800d`,
 * `metaclaw/sdk_backend.py`, tested by `tests/test_sdk_backend.py`):
 * - `tinker` or `mint` is taken as given;
 * - `auto` picks MinT when a MINT_* variable is set, the key starts with `sk-mint-`, or the base URL's
 *   host contains "mint" (MetaClaw also required the `mint` Python package; both speak one wire here,
 *   so there is nothing to be missing); otherwise Tinker;
 * - the key and URL come from `rl.api_key` / `rl.base_url` (which already won over the legacy
 *   `rl.tinker_*` names when the config loaded), else the environment: MINT_* then TINKER_* for MinT,
 *   the reverse for Tinker; else the service's default URL.
 * Weaver is a different API and `file` is export only: both are refused here with a clear reason.
 */

export type ConfiguredBackend = 'auto' | 'tinker' | 'mint' | 'weaver' | 'file';

export interface BackendSelectionInput {
  backend: ConfiguredBackend;
  apiKey: string;
  baseUrl: string;
  env: Readonly<Record<string, string | undefined>>;
}

export interface BackendSelection {
  kind: BackendKind;
  apiKey: string;
  baseUrl: string;
}

function firstNonEmpty(...values: (string | undefined)[]): string {
  for (const value of values) {
    const trimmed = value?.trim();
    if (trimmed) return trimmed;
  }
  return '';
}

function hostOf(url: string): string {
  return urlHost(url) ?? '';
}

function hasMintSignal(input: BackendSelectionInput): boolean {
  if (firstNonEmpty(input.env.MINT_API_KEY, input.env.MINT_BASE_URL)) return true;
  if ([input.apiKey, input.env.TINKER_API_KEY ?? ''].some((key) => key.trim().startsWith('sk-mint-'))) return true;
  return [input.baseUrl, input.env.TINKER_BASE_URL ?? ''].some((url) => hostOf(url).includes('mint'));
}

export function inferBackendKind(input: BackendSelectionInput): BackendKind {
  if (input.backend === 'weaver') {
    throw new ConfigError(
      'rl.backend weaver is not supported yet: Weaver speaks its own API, not the Tinker wire. Use tinker or mint.',
      'rl_backend_unsupported',
    );
  }
  if (input.backend === 'file') {
    throw new ConfigError(
      'rl.backend file trains nothing: use `metaclaw rl export` to write the scored samples, or set rl.backend to tinker or mint.',
      'rl_backend_unsupported',
    );
  }
  if (input.backend === 'tinker' || input.backend === 'mint') return input.backend;
  return hasMintSignal(input) ? 'mint' : 'tinker';
}

function envOrder(kind: BackendKind, suffix: 'API_KEY' | 'BASE_URL'): string[] {
  return kind === 'mint' ? [`MINT_${suffix}`, `TINKER_${suffix}`] : [`TINKER_${suffix}`, `MINT_${suffix}`];
}

export function resolveApiKey(input: BackendSelectionInput, kind: BackendKind): string {
  return firstNonEmpty(input.apiKey, ...envOrder(kind, 'API_KEY').map((name) => input.env[name]));
}

export function resolveBaseUrl(input: BackendSelectionInput, kind: BackendKind): string {
  return firstNonEmpty(input.baseUrl, ...envOrder(kind, 'BASE_URL').map((name) => input.env[name]));
}

/** The service, key and URL to use; throws a ConfigError naming what is missing. */
export function selectBackend(input: BackendSelectionInput): BackendSelection {
  const kind = inferBackendKind(input);
  const baseUrl = resolveBaseUrl(input, kind) || (kind === 'mint' ? DEFAULT_MINT_BASE_URL : DEFAULT_TINKER_BASE_URL);
  if (hostOf(baseUrl).includes('weaver')) {
    throw new ConfigError(`${baseUrl} looks like a Weaver service, which speaks its own API; MetaClaw-TS supports Tinker and MinT.`, 'rl_backend_unsupported');
  }
  const apiKey = resolveApiKey(input, kind);
  if (!apiKey) {
    const variables = envOrder(kind, 'API_KEY').join(' or ');
    throw new ConfigError(`RL needs a ${kind === 'mint' ? 'MinT' : 'Tinker'} API key: set rl.api_key or ${variables}.`, 'rl_no_api_key');
  }
  return { kind, apiKey, baseUrl };
}
