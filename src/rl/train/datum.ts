import type { RlSample, TrainingDatum } from '../types.js';
import { klPenaltyTerms } from './opd.js';

/**
 * One sample as one Tinker datum (MetaClaw's `sample_to_datum`, minus its re-tokenisation bug):
 * the full sequence is prompt + the sampled response tokens exactly as returned; the model input is
 * that sequence without its last token and the targets are it shifted by one, so position i predicts
 * token i + 1. Sampling logprobs and advantages sit on the response positions; the prompt positions
 * carry zero advantage, which is how the loss is masked (no `mask` key goes on the wire).
 */

export interface DatumOptions {
  /** OPD: weight of the KL term toward the teacher (needs `teacherLogprobs` on the sample) */
  klPenaltyCoef?: number;
}

/** Why a sample cannot become a datum, or null when it can. */
export function datumProblem(sample: RlSample): string | null {
  if (sample.promptTokens.length === 0) return 'empty prompt';
  if (sample.responseTokens.length === 0) return 'empty response';
  if (sample.responseLogprobs.length !== sample.responseTokens.length)
    return `${sample.responseLogprobs.length} logprobs for ${sample.responseTokens.length} response tokens`;
  if (![...sample.promptTokens, ...sample.responseTokens].every((token) => Number.isInteger(token) && token >= 0))
    return 'a token id is not a non-negative integer';
  if (!sample.responseLogprobs.every((logprob) => Number.isFinite(logprob) && logprob <= 0)) return 'a response logprob is not a finite log-probability';
  if (sample.teacherLogprobs && sample.teacherLogprobs.length !== sample.responseTokens.length) return 'teacher logprobs are not aligned to the response';
  return null;
}

export function buildDatum(sample: RlSample, advantage: number, options: DatumOptions = {}): TrainingDatum {
  const problem = datumProblem(sample);
  if (problem) throw new RangeError(`sample ${sample.turnId} cannot be trained on: ${problem}`);
  if (!Number.isFinite(advantage)) throw new RangeError(`sample ${sample.turnId}: advantage ${advantage} is not finite`);
  const all = [...sample.promptTokens, ...sample.responseTokens];
  const promptPositions = sample.promptTokens.length - 1;
  const coefficient = options.klPenaltyCoef ?? 0;
  const kl = coefficient !== 0 && sample.teacherLogprobs ? klPenaltyTerms(sample.responseLogprobs, sample.teacherLogprobs, coefficient) : undefined;
  return {
    modelInput: all.slice(0, -1),
    targetTokens: all.slice(1),
    logprobs: [...new Array<number>(promptPositions).fill(0), ...sample.responseLogprobs],
    advantages: [...new Array<number>(promptPositions).fill(0), ...sample.responseTokens.map((_, index) => advantage + (kl?.[index] ?? 0))],
  };
}
