import type { RlSample } from '../types.js';

/**
 * GRPO advantages: one scalar per sample, relative to the samples it is compared with.
 *
 * - `batch` (the default, MetaClaw's `compute_advantages`): every judged sample in the step is one
 *   group; advantage = (reward − mean) / (population std + 1e-8). Live conversations never repeat a
 *   prompt, so this batch-level baseline is what MetaClaw actually trains with.
 * - `group` (true group-relative GRPO): samples with the same prompt tokens form a group and are
 *   normalised within it; samples whose prompt is unique fall back to one batch group together.
 *
 * A group whose rewards are all equal carries no signal and is skipped (null), as is a sample
 * without a reward (a tie or a failed judge). Skipped samples count in no mean.
 */

export type AdvantageMode = 'batch' | 'group';

const STD_EPSILON = 1e-8;

function normalise(rewards: number[]): number[] | null {
  const mean = rewards.reduce((sum, reward) => sum + reward, 0) / rewards.length;
  const variance = rewards.reduce((sum, reward) => sum + (reward - mean) ** 2, 0) / rewards.length;
  if (rewards.length < 2 || variance === 0) return null;
  const std = Math.sqrt(variance);
  return rewards.map((reward) => (reward - mean) / (std + STD_EPSILON));
}

/** Advantages aligned to `samples`; null where the sample is skipped. */
export function computeAdvantages(samples: readonly RlSample[], mode: AdvantageMode = 'batch'): (number | null)[] {
  const advantages: (number | null)[] = samples.map(() => null);
  const judged = samples.flatMap((sample, index) => (sample.reward === null ? [] : [index]));

  const groups: number[][] = [];
  if (mode === 'batch') {
    groups.push(judged);
  } else {
    const byPrompt = new Map<string, number[]>();
    for (const index of judged) {
      const key = samples[index]!.promptTokens.join(',');
      byPrompt.set(key, [...(byPrompt.get(key) ?? []), index]);
    }
    const singles: number[] = [];
    for (const members of byPrompt.values()) {
      if (members.length > 1) groups.push(members);
      else singles.push(...members);
    }
    groups.push(singles);
  }

  for (const members of groups) {
    const normalised = normalise(members.map((index) => samples[index]!.reward!));
    if (!normalised) continue;
    members.forEach((sampleIndex, position) => (advantages[sampleIndex] = normalised[position]!));
  }
  return advantages;
}
