import type { ConfigValues } from '../config/index.js';
import { ConfigError } from '../errors.js';
import { recordsSamples } from './buffer/recording.js';
import { selectBackend } from './tinker/select.js';

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
  /** what `rl`/`auto` lack when they run as skills_only: a key, or a backend MetaClaw-TS can train with */
  missing?: 'key' | 'backend';
}

/**
 * Decides the run's mode. `rl` and `auto` need a training backend (a Tinker or MinT key, chosen by
 * `rl/tinker/select.ts` with MetaClaw's rules); without one MetaClaw-TS runs as skills_only instead
 * of failing, says so, and still records and judges samples so they can be exported.
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
  try {
    const { kind } = selectBackend({ backend: values['rl.backend'], apiKey: values['rl.api_key'], baseUrl: values['rl.base_url'], env });
    return { configured, effective: configured, backend: kind, recording, reason: `as configured, with the ${kind} backend` };
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return {
      configured,
      effective: 'skills_only',
      backend: null,
      recording,
      missing: error.code === 'rl_backend_unsupported' ? 'backend' : 'key',
      reason: `mode ${configured} needs a training backend (${error.message.replace(/\.$/, '')}): running as skills_only; samples are still recorded and judged for \`metaclaw rl export\``,
    };
  }
}
