import { z } from 'zod';
import type { OpenAIChatRequest } from '../../types/index.js';
import type { SampledSequence, SamplingParams } from '../types.js';
import type { ChatTokenizer } from './chat-tokenizer.js';

/** Defaults as MetaClaw samples (api_server.py): 2048 tokens, temperature 0.7, top_p 0.95. */
export interface SamplingDefaults {
  maxTokens: number;
  temperature: number;
  topP: number;
}

export const DEFAULT_SAMPLING: SamplingDefaults = { maxTokens: 2048, temperature: 0.7, topP: 0.95 };

/** Each field on its own: a value the sampler could not take falls back to the default instead of failing the turn. */
const requestSamplingSchema = z.object({
  max_tokens: z.number().int().positive().optional().catch(undefined),
  max_completion_tokens: z.number().int().positive().optional().catch(undefined),
  temperature: z.number().min(0).max(2).optional().catch(undefined),
  top_p: z.number().gt(0).max(1).optional().catch(undefined),
  stop: z
    .union([z.string(), z.array(z.string())])
    .optional()
    .catch(undefined),
  seed: z.number().int().optional().catch(undefined),
});

export interface RequestSampling {
  params: SamplingParams;
  /** Stop strings have no place in SamplingParams (ids only); they cut the decoded answer instead. */
  stopStrings: string[];
}

/** Sampling parameters from an OpenAI request (Anthropic's are translated to these names), with the template's stop tokens. */
export function requestSampling(request: OpenAIChatRequest, stopTokens: readonly number[], defaults: SamplingDefaults = DEFAULT_SAMPLING): RequestSampling {
  const fields = requestSamplingSchema.parse(request);
  const params: SamplingParams = {
    maxTokens: fields.max_completion_tokens ?? fields.max_tokens ?? defaults.maxTokens,
    // 0 is a temperature (greedy), unlike MetaClaw's `temperature or 0.7`.
    temperature: fields.temperature ?? defaults.temperature,
    topP: fields.top_p ?? defaults.topP,
    stopTokens: [...stopTokens],
  };
  if (fields.seed !== undefined) params.seed = fields.seed;
  const stop = fields.stop === undefined ? [] : Array.isArray(fields.stop) ? fields.stop : [fields.stop];
  return { params, stopStrings: stop.filter((text) => text !== '') };
}

/** A sampled answer decoded, possibly cut at a stop string: `sequence` is the prefix of the sampled ids the client's answer came from. */
export interface DecodedSample {
  sequence: SampledSequence;
  text: string;
  /** A request stop string ended it. */
  stoppedByString: boolean;
}

/**
 * Decodes the sample and applies the request's stop strings as OpenAI does (the answer ends before
 * the string). The recorded ids are cut after the token that completed the string: still the exact
 * sampled ids, only fewer of them.
 */
export function decodeSample(tokenizer: ChatTokenizer, sequence: SampledSequence, stopStrings: readonly string[]): DecodedSample {
  const text = tokenizer.decode(sequence.tokens);
  const cut = firstStop(text, stopStrings);
  if (cut === undefined) return { sequence, text, stoppedByString: false };
  // The shortest prefix whose text holds the stop string: "holds it" only grows with the prefix.
  let low = 1;
  let high = sequence.tokens.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (firstStop(tokenizer.decode(sequence.tokens.slice(0, middle)), stopStrings) !== undefined) high = middle;
    else low = middle + 1;
  }
  return {
    sequence: { tokens: sequence.tokens.slice(0, low), logprobs: sequence.logprobs.slice(0, low), stopReason: 'stop' },
    text: text.slice(0, cut),
    stoppedByString: true,
  };
}

function firstStop(text: string, stopStrings: readonly string[]): number | undefined {
  let first: number | undefined;
  for (const stop of stopStrings) {
    const index = text.indexOf(stop);
    if (index !== -1 && (first === undefined || index < first)) first = index;
  }
  return first;
}
