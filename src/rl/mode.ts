import type { ConfigValues } from '../config/index.js';

export type Mode = ConfigValues['mode'];

/** What the configured mode means in this run, and why (shown at start, in /status and by `metaclaw doctor`). */
export interface ModeDecision {
  /** `mode` as configured (`madmax` is read as `auto`) */
  configured: Mode;
  /** what runs: `rl` or `auto` only with a training backend, else `skills_only` */
  effective: Mode;
  /** the training backend that will be used, or null */
  backend: 'tinker' | 'mint' | null;
  /** main turns are kept as RL samples and judged (modes rl/auto, or rl.enabled) */
  recording: boolean;
  /** one sentence: why `effective` is what it is */
  reason: string;
}

/** Main turns become RL samples (and are judged) in modes rl and auto, and with rl.enabled in skills_only. */
export function recordsSamples(values: Pick<ConfigValues, 'mode' | 'rl.enabled'>): boolean {
  return values['mode'] !== 'skills_only' || values['rl.enabled'];
}

/** Environment variables MetaClaw (and the Tinker/MinT SDKs) read the training key from. */
const KEY_VARIABLES = { tinker: 'TINKER_API_KEY', mint: 'MINT_API_KEY' } as const;

/**
 * Decides the run's mode. `rl` and `auto` need a training backend (a Tinker or MinT key); without
 * one MetaClaw-TS runs as skills_only instead of failing, says so, and still records and judges
 * samples so they can be exported (`metaclaw rl export`).
 */
export function decideMode(values: ConfigValues, env: NodeJS.ProcessEnv = process.env): ModeDecision {
  const configured = values['mode'];
  const recording = recordsSamples(values);
  if (configured === 'skills_only') {
    return {
      configured,
      effective: 'skills_only',
      backend: null,
      recording,
      reason: recording ? 'as configured, with rl.enabled: samples are recorded and judged, nothing is trained' : 'as configured',
    };
  }
  const backend = trainingBackend(values, env);
  if (typeof backend === 'string') return { configured, effective: configured, backend, recording, reason: `as configured, with the ${backend} backend` };
  return {
    configured,
    effective: 'skills_only',
    backend: null,
    recording,
    reason: `mode ${configured} needs a training backend, but ${backend.missing}: running as skills_only (samples are still recorded and judged for \`metaclaw rl export\`)`,
  };
}

/** The backend `rl.backend` selects, by MetaClaw's rules for `auto`; or what is missing. */
function trainingBackend(values: ConfigValues, env: NodeJS.ProcessEnv): 'tinker' | 'mint' | { missing: string } {
  const choice = values['rl.backend'];
  if (choice === 'file') return { missing: 'rl.backend is file (export only)' };
  if (choice === 'weaver') return { missing: 'rl.backend weaver has no client in MetaClaw-TS (use tinker or mint)' };
  const key = values['rl.api_key'];
  const base = values['rl.base_url'];
  const kind: 'tinker' | 'mint' =
    choice === 'tinker' || choice === 'mint'
      ? choice
      : key.startsWith('sk-mint-') || /mint/i.test(hostOf(base)) || (!key && !env[KEY_VARIABLES.tinker] && Boolean(env[KEY_VARIABLES.mint]))
        ? 'mint'
        : 'tinker';
  if (key || env[KEY_VARIABLES[kind]]) return kind;
  return { missing: `no training key is configured (rl.api_key, or ${KEY_VARIABLES[kind]} in the environment)` };
}

function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return '';
  }
}
