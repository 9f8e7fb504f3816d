import type { Db } from '../../store/index.js';

/** Where samples are: trained and dropped first, then where they are with the judge. */
export interface BufferStatus {
  samples: number;
  current_generation: number;
  by_state: { waiting: number; queued: number; scored: number; tie: number; failed: number; dropped: number; trained: number; set_aside: number };
  /** the reason the newest sample set aside was given (the backend kept refusing its batch); null when none is */
  set_aside_reason: string | null;
  /** scored, with the sampled token ids, of the current generation, not trained yet */
  trainable: number;
  /** recorded without token ids (served by the normal upstream): judged and exportable, not trainable */
  text_only: number;
  /** OPD: samples waiting for the teacher, with its logprobs, and refused (they train without the KL term) */
  teacher: { queued: number; done: number; failed: number };
  /** samples with a reward, over all samples */
  judged_share: number | null;
  mean_reward: number | null;
  by_day: Array<{ day: string; samples: number; scored: number; mean_reward: number | null }>;
  by_generation: Array<{ generation: number; samples: number; scored: number; mean_reward: number | null; dropped: number }>;
}

interface Counts {
  samples: number;
  waiting: number;
  queued: number;
  scored: number;
  tie: number;
  failed: number;
  dropped: number;
  trained: number;
  set_aside: number;
  trainable: number;
  text_only: number;
  teacher_queued: number;
  teacher_done: number;
  teacher_failed: number;
  rewarded: number;
  mean_reward: number | null;
}

/**
 * The buffer as `metaclaw rl status` and /status show it. Read only: a sample of an older skill
 * generation counts as dropped whether or not a generation change has marked it yet.
 */
export function bufferStatus(db: Db, currentGeneration: number, days = 14): BufferStatus {
  const stale = '(trained_step IS NULL AND (dropped_at IS NOT NULL OR skill_generation < @generation))';
  // A sample set aside (its batch kept being refused) is neither waiting for the judge nor trainable.
  const live = `trained_step IS NULL AND NOT ${stale} AND set_aside_at IS NULL`;
  const counts = db
    .prepare<{ generation: number }, Counts>(
      `SELECT COUNT(*) AS samples,
              COALESCE(SUM(${live} AND judge_state = 'waiting'), 0) AS waiting,
              COALESCE(SUM(${live} AND judge_state = 'queued'), 0) AS queued,
              COALESCE(SUM(${live} AND judge_state = 'scored'), 0) AS scored,
              COALESCE(SUM(${live} AND judge_state = 'tie'), 0) AS tie,
              COALESCE(SUM(${live} AND judge_state = 'failed'), 0) AS failed,
              COALESCE(SUM(${stale}), 0) AS dropped,
              COALESCE(SUM(trained_step IS NOT NULL), 0) AS trained,
              COALESCE(SUM(trained_step IS NULL AND NOT ${stale} AND set_aside_at IS NOT NULL), 0) AS set_aside,
              COALESCE(SUM(${live} AND judge_state = 'scored' AND prompt_tokens IS NOT NULL), 0) AS trainable,
              COALESCE(SUM(prompt_tokens IS NULL), 0) AS text_only,
              COALESCE(SUM(teacher_state = 'queued'), 0) AS teacher_queued,
              COALESCE(SUM(teacher_state = 'done'), 0) AS teacher_done,
              COALESCE(SUM(teacher_state = 'failed'), 0) AS teacher_failed,
              COUNT(reward) AS rewarded,
              AVG(reward) AS mean_reward
         FROM rl_samples`,
    )
    .get({ generation: currentGeneration })!;
  const setAsideReason =
    db
      .prepare<[], { reason: string | null }>(
        'SELECT set_aside_reason AS reason FROM rl_samples WHERE set_aside_at IS NOT NULL AND trained_step IS NULL ORDER BY set_aside_at DESC LIMIT 1',
      )
      .get()?.reason ?? null;
  const since = Date.now() - days * 86_400_000;
  const byDay = db
    .prepare<[number], { day: string; samples: number; scored: number; mean_reward: number | null }>(
      `SELECT date(created_at / 1000, 'unixepoch', 'localtime') AS day, COUNT(*) AS samples, COUNT(reward) AS scored, AVG(reward) AS mean_reward
         FROM rl_samples WHERE created_at >= ? GROUP BY day ORDER BY day`,
    )
    .all(since);
  const byGeneration = db
    .prepare<{ generation: number }, { generation: number; samples: number; scored: number; mean_reward: number | null; dropped: number }>(
      `SELECT skill_generation AS generation, COUNT(*) AS samples, COUNT(reward) AS scored, AVG(reward) AS mean_reward, COALESCE(SUM(${stale}), 0) AS dropped
         FROM rl_samples GROUP BY skill_generation ORDER BY skill_generation`,
    )
    .all({ generation: currentGeneration });
  return {
    samples: counts.samples,
    current_generation: currentGeneration,
    by_state: {
      waiting: counts.waiting,
      queued: counts.queued,
      scored: counts.scored,
      tie: counts.tie,
      failed: counts.failed,
      dropped: counts.dropped,
      trained: counts.trained,
      set_aside: counts.set_aside,
    },
    set_aside_reason: setAsideReason,
    trainable: counts.trainable,
    text_only: counts.text_only,
    teacher: { queued: counts.teacher_queued, done: counts.teacher_done, failed: counts.teacher_failed },
    judged_share: counts.samples === 0 ? null : round(counts.rewarded / counts.samples),
    mean_reward: counts.mean_reward === null ? null : round(counts.mean_reward),
    by_day: byDay.map((row) => ({ ...row, mean_reward: row.mean_reward === null ? null : round(row.mean_reward) })),
    by_generation: byGeneration.map((row) => ({ ...row, mean_reward: row.mean_reward === null ? null : round(row.mean_reward) })),
  };
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}
