import { z } from 'zod';
import type { AdamParams, LossFunction, SamplingParams, TrainingDatum } from '../types.js';

/**
 * The Tinker JSON wire as the Python SDK 0.6.0 speaks it (thinking-machines-lab/tinker `bd639de`,
 * `src/tinker/types/*.py`): request bodies as the SDK serialises them (pydantic, unset fields left
 * out) and the responses we read, checked with zod. MinT speaks the same wire.
 */

/** The SDK generation whose wire this client mirrors; sent as `sdk_version` and in the User-Agent. */
export const WIRE_SDK_VERSION = '0.6.0';

export const DEFAULT_TINKER_BASE_URL = 'https://tinker.thinkingmachines.dev/services/tinker-prod';
export const DEFAULT_MINT_BASE_URL = 'https://mint.macaron.im';

export interface WireModelInput {
  chunks: { tokens: number[]; type: 'encoded_text' }[];
}

export interface WireTensorData {
  data: number[];
  dtype: 'int64' | 'float32';
  shape: number[];
}

export interface WireDatum {
  model_input: WireModelInput;
  loss_fn_inputs: Record<string, WireTensorData>;
}

export function modelInput(tokens: number[]): WireModelInput {
  return { chunks: [{ tokens, type: 'encoded_text' }] };
}

function tensor(data: number[], dtype: WireTensorData['dtype']): WireTensorData {
  return { data, dtype, shape: [data.length] };
}

/** A datum on the wire: the keys and dtypes of the SDK's `_key_to_type` table, and nothing else. */
export function wireDatum(datum: TrainingDatum): WireDatum {
  return {
    model_input: modelInput(datum.modelInput),
    loss_fn_inputs: {
      target_tokens: tensor(datum.targetTokens, 'int64'),
      logprobs: tensor(datum.logprobs, 'float32'),
      advantages: tensor(datum.advantages, 'float32'),
    },
  };
}

/** Cross-entropy (supervised) data: the datum's advantages are the per-token weights (0 on the prompt). */
export function wireCrossEntropyDatum(datum: TrainingDatum): WireDatum {
  return {
    model_input: modelInput(datum.modelInput),
    loss_fn_inputs: { target_tokens: tensor(datum.targetTokens, 'int64'), weights: tensor(datum.advantages, 'float32') },
  };
}

/** Adam as SDK 0.6 sends it (its defaults: beta1 0.9, beta2 0.95, eps 1e-12). */
export function wireAdamParams(adam: AdamParams): { learning_rate: number; beta1: number; beta2: number; eps: number } {
  return { learning_rate: adam.learningRate, beta1: adam.beta1 ?? 0.9, beta2: adam.beta2 ?? 0.95, eps: adam.eps ?? 1e-12 };
}

export interface WireSamplingParams {
  max_tokens: number;
  temperature: number;
  top_p?: number;
  stop?: number[];
  seed?: number;
}

export function wireSamplingParams(params: SamplingParams): WireSamplingParams {
  return {
    max_tokens: params.maxTokens,
    temperature: params.temperature,
    ...(params.topP === undefined ? {} : { top_p: params.topP }),
    ...(params.stopTokens === undefined || params.stopTokens.length === 0 ? {} : { stop: params.stopTokens }),
    ...(params.seed === undefined ? {} : { seed: params.seed }),
  };
}

export const LOSS_FUNCTIONS: readonly LossFunction[] = ['importance_sampling', 'ppo', 'cispo', 'cross_entropy'];

// ---- responses -------------------------------------------------------------------------------

/** `UntypedAPIFuture`: what every queued route answers at once. */
export const untypedFutureSchema = z.object({ request_id: z.string().min(1), model_id: z.string().nullish() }).loose();

export const createSessionResponseSchema = z
  .object({
    session_id: z.string().min(1),
    info_message: z.string().nullish(),
    warning_message: z.string().nullish(),
    error_message: z.string().nullish(),
  })
  .loose();

export const createSamplingSessionResponseSchema = z.object({ sampling_session_id: z.string().min(1) }).loose();

export const createModelResponseSchema = z.object({ model_id: z.string().min(1) }).loose();

const tensorDataSchema = z.object({
  data: z.array(z.number()),
  dtype: z.enum(['int64', 'float32']),
  shape: z.array(z.number().int()).nullish(),
});

export const forwardBackwardOutputSchema = z
  .object({
    loss_fn_output_type: z.string(),
    loss_fn_outputs: z.array(z.record(z.string(), tensorDataSchema)),
    metrics: z.record(z.string(), z.number()),
  })
  .loose();

export const optimStepResponseSchema = z.object({ metrics: z.record(z.string(), z.number()).nullish() }).loose();

export const saveWeightsForSamplerResponseSchema = z
  .object({ path: z.string().nullish(), sampling_session_id: z.string().nullish() })
  .loose()
  .refine((value) => Boolean(value.path) || Boolean(value.sampling_session_id), 'neither path nor sampling_session_id');

export const saveWeightsResponseSchema = z.object({ path: z.string().min(1) }).loose();

export const loadWeightsResponseSchema = z.object({ path: z.string().nullish() }).loose();

export const sampleResponseSchema = z
  .object({
    sequences: z
      .array(
        z
          .object({
            tokens: z.array(z.number().int()),
            logprobs: z.array(z.number()).nullish(),
            stop_reason: z.enum(['stop', 'length']),
          })
          .loose(),
      )
      .min(1),
  })
  .loose();

/** A future still running: poll again. */
export const tryAgainSchema = z.object({ type: z.literal('try_again'), queue_state: z.string().optional() }).loose();

/** A future that failed on the service (`RequestFailedResponse`). */
export const requestFailedSchema = z.object({ error: z.string(), category: z.string().optional() }).loose();
