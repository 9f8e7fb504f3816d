import { RlBackendError } from '../../errors.js';
import type { AdamParams, LossFunction, PolicySampler, RlBackend, RlSample, StepMetrics, TrainingDatum } from '../types.js';
import { computeAdvantages, type AdvantageMode } from './advantages.js';
import { buildDatum, datumProblem } from './datum.js';

/**
 * One GRPO training step: advantages, data, forward-backward (its loss and metrics awaited and
 * returned, where MetaClaw never read them), an Adam step, then the new weights saved for sampling.
 * The returned sampler is the hot-swap point: serve new requests from it, and let requests already
 * running finish on the sampler they started with. The result fits the training loop's step
 * function (`rl/loop/`): metrics, sampler and its path.
 */

export interface TrainStepOptions {
  lossFn: LossFunction;
  adam: AdamParams;
  /** the name the new sampler weights are saved under, e.g. `step-0012` */
  samplerName: string;
  advantageMode?: AdvantageMode;
  /** OPD KL weight (opd.kl_penalty_coef); used for samples that carry teacher logprobs */
  klPenaltyCoef?: number;
  /**
   * Abandons the step if aborted before forward-backward. Once forward-backward has run the step
   * finishes: the service accumulates gradients until optim_step, so a step abandoned in between
   * would leak its gradients into the next one.
   */
  signal?: AbortSignal;
}

/**
 * The backend refused the batch itself: forward-backward answered a client error about the request
 * (400, 413, 422, or a failed future it puts down to the request), so sending the same batch again
 * will not help. A key refused (401/403), billing (402), rate limits (429), server errors and
 * dropped connections are not refusals of the batch.
 */
export class BatchRefused extends Error {
  constructor(readonly refusal: RlBackendError) {
    super(refusal.message, { cause: refusal });
    this.name = 'BatchRefused';
  }
}

function refusesBatch(error: unknown): error is RlBackendError {
  if (!(error instanceof RlBackendError)) return false;
  if (error.status !== undefined) return error.status === 400 || error.status === 413 || error.status === 422;
  return error.code === 'rl_request_failed_user';
}

/** What became of the batch, trained or not. */
export interface BatchSummary {
  /** samples offered to the step */
  samples: number;
  /** samples that became data */
  trained: number;
  /** samples without a reward, in a group with no reward spread, or malformed */
  skipped: number;
  /** malformed samples, by turn id, with the reason */
  rejected: { turnId: string; reason: string }[];
  meanReward: number | null;
}

export type TrainStepResult =
  | {
      trained: true;
      /** the backend's loss (Tinker's `loss:sum`) and every metric it reported, plus the batch counts */
      metrics: StepMetrics;
      batch: BatchSummary;
      /** the sampler for the new weights: serve new requests from it */
      sampler: PolicySampler;
      samplerPath: string;
    }
  | { trained: false; batch: BatchSummary; reason: string };

export async function trainStep(samples: readonly RlSample[], backend: RlBackend, options: TrainStepOptions): Promise<TrainStepResult> {
  const rejected: { turnId: string; reason: string }[] = [];
  const usable = samples.filter((sample) => {
    const problem = datumProblem(sample);
    if (problem) rejected.push({ turnId: sample.turnId, reason: problem });
    return problem === null;
  });
  const advantages = computeAdvantages(usable, options.advantageMode ?? 'batch');
  const data: TrainingDatum[] = [];
  let distilled = 0;
  usable.forEach((sample, index) => {
    const advantage = advantages[index];
    if (advantage === null || advantage === undefined) return;
    if (options.klPenaltyCoef !== undefined && sample.teacherLogprobs) distilled += 1;
    data.push(buildDatum(sample, advantage, options.klPenaltyCoef === undefined ? {} : { klPenaltyCoef: options.klPenaltyCoef }));
  });
  const rewards: number[] = samples.flatMap((sample) => (sample.reward === null ? [] : [sample.reward]));
  const batch: BatchSummary = {
    samples: samples.length,
    trained: data.length,
    skipped: samples.length - data.length,
    rejected,
    meanReward: rewards.length === 0 ? null : rewards.reduce((sum, reward) => sum + reward, 0) / rewards.length,
  };
  if (data.length === 0) {
    const reason = rewards.length === 0 ? 'no sample has a reward' : 'the rewards do not differ, so no sample is better than another';
    return { trained: false, batch, reason };
  }

  options.signal?.throwIfAborted();
  let result: StepMetrics;
  try {
    result = await backend.forwardBackward(data, options.lossFn);
  } catch (error) {
    throw refusesBatch(error) ? new BatchRefused(error) : error;
  }
  await backend.optimStep(options.adam);
  const sampler = await backend.saveForSampler(options.samplerName);
  const metrics: StepMetrics = {
    loss: result.loss,
    metrics: {
      ...result.metrics,
      'batch:samples': batch.samples,
      'batch:trained': batch.trained,
      'batch:skipped': batch.skipped,
      ...(batch.meanReward === null ? {} : { 'reward:mean': batch.meanReward }),
      ...(options.klPenaltyCoef === undefined ? {} : { 'opd:samples': distilled }),
    },
  };
  return { trained: true, metrics, batch, sampler, samplerPath: sampler.version };
}
