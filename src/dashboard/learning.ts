import { schedulerWindows } from '../scheduler/index.js';
import type { Db } from '../store/index.js';

const DAY_MS = 86_400_000;

/** A day's start (UTC midnight, ms): the charts' x values. */
function dayOf(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

/**
 * The learning curves page: skills and memories over time, judge reward per day and per skill
 * generation, training steps and loss, and the scheduler's windows, for the last `days` days.
 * Bounded: whole-history series are folded into days; steps and windows are capped.
 */
export function learningData(db: Db, days: number, now = Date.now()) {
  const from = dayOf(now) - (days - 1) * DAY_MS;
  const axis = Array.from({ length: days }, (_, index) => from + index * DAY_MS);
  return {
    generated_at: new Date(now).toISOString(),
    days: axis,
    skills: librarySize(db, axis),
    memories: memoriesLearned(db, axis),
    judge: judgeRewards(db, from),
    training: trainingSteps(db),
    windows: schedulerWindows(db, from, now, 500),
  };
}

/** Skills in the library at the end of each day, replayed from the version history. */
function librarySize(db: Db, axis: number[]): number[] {
  const rows = db.prepare(`SELECT name, action, created_at FROM skill_versions ORDER BY id`).iterate() as IterableIterator<{
    name: string;
    action: string;
    created_at: number;
  }>;
  const live = new Set<string>();
  const sizes: number[] = [];
  let day = 0;
  for (const row of rows) {
    while (day < axis.length && row.created_at >= axis[day]! + DAY_MS) {
      sizes.push(live.size);
      day++;
    }
    if (row.action === 'remove') live.delete(row.name);
    else live.add(row.name);
  }
  while (sizes.length < axis.length) sizes.push(live.size);
  return sizes;
}

/** Memories learned (everything but raw turns) and standing instructions, counted at the end of each day. */
function memoriesLearned(db: Db, axis: number[]): { learned: number[]; standing: number[] } {
  const end = axis[axis.length - 1]! + DAY_MS;
  const cumulative = (where: string) => {
    const before = db.prepare(`SELECT count(*) FROM memory_units WHERE origin <> 'raw_turn' ${where} AND created_at < ?`).pluck().get(axis[0]) as number;
    const perDay = new Map(
      (
        db
          .prepare(
            `SELECT (created_at / ${DAY_MS}) * ${DAY_MS} AS day, count(*) AS n FROM memory_units
             WHERE origin <> 'raw_turn' ${where} AND created_at >= ? AND created_at < ? GROUP BY day`,
          )
          .all(axis[0], end) as Array<{ day: number; n: number }>
      ).map((row) => [row.day, row.n]),
    );
    let total = before;
    return axis.map((day) => (total += perDay.get(day) ?? 0));
  };
  return { learned: cumulative(''), standing: cumulative('AND core = 1') };
}

/** The judge's mean reward (−1…1) per day it scored, and per skill generation. */
function judgeRewards(db: Db, from: number) {
  const perDay = db
    .prepare(
      `SELECT (judged_at / ${DAY_MS}) * ${DAY_MS} AS day, avg(reward) AS mean, count(*) AS scored FROM rl_samples
       WHERE judge_state = 'scored' AND judged_at >= ? GROUP BY day ORDER BY day`,
    )
    .all(from) as Array<{ day: number; mean: number; scored: number }>;
  const perGeneration = db
    .prepare(
      `SELECT skill_generation AS generation, avg(reward) AS mean, count(*) AS scored FROM rl_samples
       WHERE judge_state = 'scored' GROUP BY skill_generation ORDER BY skill_generation DESC LIMIT 50`,
    )
    .all() as Array<{ generation: number; mean: number; scored: number }>;
  return { per_day: perDay, per_generation: perGeneration.reverse() };
}

/** The latest training steps with their loss (RL modes). */
function trainingSteps(db: Db) {
  const rows = db
    .prepare(`SELECT step, status, trigger, skill_generation, samples, loss, started_at, finished_at FROM rl_steps ORDER BY step DESC LIMIT 500`)
    .all() as Array<{
    step: number;
    status: string;
    trigger: string;
    skill_generation: number;
    samples: number;
    loss: number | null;
    started_at: number;
    finished_at: number | null;
  }>;
  return rows.reverse();
}

export type LearningView = ReturnType<typeof learningData>;
