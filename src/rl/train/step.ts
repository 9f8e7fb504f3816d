import type { AdamParams, LossFunction, PolicySampler, RlBackend, RlSample, TrainingDatum } from '../types.js';
import { computeAdvantages, type AdvantageMode } from './advantages.js';
import { buildDatum, datumProblem } from './datum.js';

/**
 * One GRPO training step: advantages, data, forward-backward (its loss and metrics awaited and
 * returned, where MetaClaw never read them), an Adam step, then the new weights saved for sampling.
 * The returned sampler is the hot-swap point: serve new requests from it, and let requests already
 * running finish on the sampler they started with.
 */

export interface TrainStepOptions {
  lossFn: LossFunction;
  adam: AdamParams;
  /** the name the new sampler weights are saved under, e.g. `step-0012` */
  samplerName: string;
  advantageMode?: AdvantageMode;
  /** OPD KL weight (opd.kl_penalty_coef); used for samples that carry teacher logprobs */
  klPenaltyCoef?: number;
}

export interface TrainStepMetrics {
  /** samples offered to the step */
  samples: number;
  /** samples that became data */
  trained: number;
  /** samples without a reward, in a group with no reward spread, or malformed */
  skipped: number;
  /** malformed samples, by turn id, with the reason */
  rejected: { turnId: string; reason: string }[];
  meanReward: number | null;
  /** the backend's loss for the step (Tinker's `loss:sum`), null when nothing was trained */
  loss: number | null;
  /** everything the backend reported for forward-backward */
  backendMetrics: Record<string, number>;
}

export interface TrainStepResult {
  metrics: TrainStepMetrics;
  /** the sampler for the new weights; null when there was nothing to train (keep serving the old one) */
  sampler: PolicySampler | null;
}

export async function trainStep(samples: readonly RlSample[], backend: RlBackend, options: TrainStepOptions): Promise<TrainStepResult> {
  const rejected: { turnId: string; reason: string }[] = [];
  const usable = samples.filter((sample) => {
    const problem = datumProblem(sample);
    if (problem) rejected.push({ turnId: sample.turnId, reason: problem });
    return problem === null;
  });
  const advantages = computeAdvantages(usable, options.advantageMode ?? 'batch');
  const data: TrainingDatum[] = [];
  usable.forEach((sample, index) => {
    const advantage = advantages[index];
    if (advantage === null || advantage === undefined) return;
    data.push(buildDatum(sample, advantage, options.klPenaltyCoef === undefined ? {} : { klPenaltyCoef: options.klPenaltyCoef }));
  });
  const rewards: number[] = samples.flatMap((sample) => (sample.reward === null ? [] : [sample.reward]));
  const metrics: TrainStepMetrics = {
    samples: samples.length,
    trained: data.length,
    skipped: samples.length - data.length,
    rejected,
    meanReward: rewards.length === 0 ? null : rewards.reduce((sum, reward) => sum + reward, 0) / rewards.length,
    loss: null,
    backendMetrics: {},
  };
  if (data.length === 0) return { metrics, sampler: null };

  const result = await backend.forwardBackward(data, options.lossFn);
  metrics.loss = result.loss;
  metrics.backendMetrics = result.metrics;
  await backend.optimStep(options.adam);
  const sampler = await backend.saveForSampler(options.samplerName);
  return { metrics, sampler };
}
