import { schedulerWindows, type SchedulerWindow } from '../scheduler/index.js';
import type { Db } from '../store/index.js';

const DAY_MS = 86_400_000;

/** A day's start (UTC midnight, ms): the charts' x values. */
function dayOf(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

/** The days a learning page of `days` days shows (UTC midnights, oldest first). */
export function learningAxis(days: number, now: number): number[] {
  const from = dayOf(now) - (days - 1) * DAY_MS;
  return Array.from({ length: days }, (_, index) => from + index * DAY_MS);
}

/** The learning page's queries, with `?` parameters (the same tables in both stores). */
export const LEARNING_SQL = {
  skillVersions: `SELECT name, action, created_at FROM skill_versions ORDER BY id`,
  /** learned memories (everything but raw turns), with `core = 1` or not, before a time; then per day in a range */
  memoriesBefore: (standing: boolean) => `SELECT count(*) FROM memory_units WHERE origin <> 'raw_turn' ${standing ? 'AND core = 1' : ''} AND created_at < ?`,
  memoriesPerDay: (standing: boolean) =>
    `SELECT (created_at / ${DAY_MS}) * ${DAY_MS} AS day, count(*) AS n FROM memory_units
     WHERE origin <> 'raw_turn' ${standing ? 'AND core = 1' : ''} AND created_at >= ? AND created_at < ? GROUP BY day`,
  judgePerDay: `SELECT (judged_at / ${DAY_MS}) * ${DAY_MS} AS day, avg(reward) AS mean, count(*) AS scored FROM rl_samples
       WHERE judge_state = 'scored' AND judged_at >= ? GROUP BY day ORDER BY day`,
  judgePerGeneration: `SELECT skill_generation AS generation, avg(reward) AS mean, count(*) AS scored FROM rl_samples
       WHERE judge_state = 'scored' GROUP BY skill_generation ORDER BY skill_generation DESC LIMIT 50`,
  trainingSteps: `SELECT step, status, trigger, skill_generation, samples, loss, started_at, finished_at FROM rl_steps ORDER BY step DESC LIMIT 500`,
};

export interface SkillVersionEvent {
  name: string;
  action: string;
  created_at: number;
}
export interface DayCount {
  day: number;
  n: number;
}
export interface JudgeRows {
  per_day: Array<{ day: number; mean: number; scored: number }>;
  /** newest generation first, as LEARNING_SQL reads them */
  per_generation: Array<{ generation: number; mean: number; scored: number }>;
}
export interface TrainingStep {
  step: number;
  status: string;
  trigger: string;
  skill_generation: number;
  samples: number;
  loss: number | null;
  started_at: number;
  finished_at: number | null;
}

/** What the learning page is made of, as read from a store. */
export interface LearningRows {
  skillVersions: Iterable<SkillVersionEvent>;
  learned: { before: number; perDay: DayCount[] };
  standing: { before: number; perDay: DayCount[] };
  judge: JudgeRows;
  /** newest first */
  training: TrainingStep[];
  windows: SchedulerWindow[];
}

/**
 * The learning curves page: skills and memories over time, judge reward per day and per skill
 * generation, training steps and loss, and the scheduler's windows, for the last `days` days.
 * Bounded: whole-history series are folded into days; steps and windows are capped.
 */
export function learningData(db: Db, days: number, now = Date.now()) {
  const axis = learningAxis(days, now);
  const from = axis[0]!;
  const end = axis[axis.length - 1]! + DAY_MS;
  const counted = (standing: boolean) => ({
    before: db.prepare(LEARNING_SQL.memoriesBefore(standing)).pluck().get(from) as number,
    perDay: db.prepare(LEARNING_SQL.memoriesPerDay(standing)).all(from, end) as DayCount[],
  });
  return learningView(axis, now, {
    skillVersions: db.prepare(LEARNING_SQL.skillVersions).iterate() as IterableIterator<SkillVersionEvent>,
    learned: counted(false),
    standing: counted(true),
    judge: {
      per_day: db.prepare(LEARNING_SQL.judgePerDay).all(from) as JudgeRows['per_day'],
      per_generation: db.prepare(LEARNING_SQL.judgePerGeneration).all() as JudgeRows['per_generation'],
    },
    training: db.prepare(LEARNING_SQL.trainingSteps).all() as TrainingStep[],
    windows: schedulerWindows(db, from, now, 500),
  });
}

/** The learning page from what was read, whichever store it was read from. */
export function learningView(axis: number[], now: number, rows: LearningRows) {
  return {
    generated_at: new Date(now).toISOString(),
    days: axis,
    skills: librarySize(rows.skillVersions, axis),
    memories: { learned: cumulative(axis, rows.learned), standing: cumulative(axis, rows.standing) },
    judge: { per_day: rows.judge.per_day, per_generation: [...rows.judge.per_generation].reverse() },
    training: [...rows.training].reverse(),
    windows: rows.windows,
  };
}

/** Skills in the library at the end of each day, replayed from the version history. */
function librarySize(rows: Iterable<SkillVersionEvent>, axis: number[]): number[] {
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

/** A count at the end of each day, from the count before the first day and the days' additions. */
function cumulative(axis: number[], counts: { before: number; perDay: DayCount[] }): number[] {
  const perDay = new Map(counts.perDay.map((row) => [row.day, row.n]));
  let total = counts.before;
  return axis.map((day) => (total += perDay.get(day) ?? 0));
}

export type LearningView = ReturnType<typeof learningView>;
