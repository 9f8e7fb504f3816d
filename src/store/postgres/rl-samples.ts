import type pg from 'pg';
import { z } from 'zod';
// Direct module imports, as the recording listeners load this on every node.
import { sampleValues, scoredSamplesWhere, setAsideReason, toSample, type NewSample, type SampleRow, type Verdict } from '../../rl/buffer/store.js';
import type { RlSampleStore, ScoredSampleSource } from '../../rl/buffer/port.js';
import type { BufferStatus } from '../../rl/buffer/status.js';
import type { RlSample } from '../../rl/types.js';
import { encodeLogprobs } from '../../rl/buffer/codec.js';
import type { TeacherOutcome } from '../../rl/teacher/handler.js';
import type { Queryable } from './job-queue.js';
import { inTransaction } from './transaction.js';

/** SQLite's TRAINABLE (rl/buffer/store.ts) with positional parameters: $1 the live generation, $2 whether OPD's teacher is waited for. */
const TRAINABLE = `judge_state = 'scored' AND prompt_tokens IS NOT NULL AND trained_step IS NULL AND dropped_at IS NULL AND set_aside_at IS NULL
  AND skill_generation >= $1 AND (NOT $2::boolean OR teacher_state IN ('done', 'failed'))`;

const int = z.coerce.number();
const nullableInt = z.coerce.number().nullable();
const blob = z.instanceof(Buffer).nullable();

/** A row as PostgreSQL returns it (BIGINT as text, BYTEA as Buffer), read into SQLite's row shape. */
const rowSchema = z.object({
  turn_id: z.string(),
  session_id: z.string(),
  seq: int,
  skill_generation: int,
  policy_version: z.string().nullable(),
  prompt_tokens: blob,
  response_tokens: blob,
  response_logprobs: blob,
  next_turn_id: z.string().nullable(),
  judge_state: z.enum(['waiting', 'queued', 'scored', 'tie', 'failed']),
  reward: nullableInt,
  votes: z.string().nullable(),
  judge_model: z.string().nullable(),
  judge_error: z.string().nullable(),
  judged_at: nullableInt,
  dropped_at: nullableInt,
  dropped_for_generation: nullableInt,
  trained_step: nullableInt,
  created_at: int,
  teacher_state: z.enum(['queued', 'done', 'failed']).nullable(),
  teacher_logprobs: blob,
  teacher_error: z.string().nullable(),
  set_aside_at: nullableInt,
  set_aside_reason: z.string().nullable(),
}) satisfies z.ZodType<SampleRow>;

/**
 * The recording side of the buffer, on the recording transaction's client: a sample commits with
 * its turn, and a judge job with the turn that queued it.
 */
export const sampleRecording = {
  /** Records a main turn as a sample (once: a turn recorded again, say replayed from the spool, is ignored). */
  async record(db: Queryable, sample: NewSample): Promise<void> {
    await db.query(
      `INSERT INTO rl_samples (turn_id, session_id, seq, skill_generation, policy_version, prompt_tokens, response_tokens, response_logprobs, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (turn_id) DO NOTHING`,
      sampleValues(sample),
    );
  },

  /** Samples of a session still waiting for the next user turn, oldest first. */
  async waitingOfSession(db: Queryable, sessionId: string): Promise<string[]> {
    const result = await db.query("SELECT turn_id FROM rl_samples WHERE session_id = $1 AND judge_state = 'waiting' ORDER BY seq", [sessionId]);
    return z
      .array(z.object({ turn_id: z.string() }))
      .parse(result.rows)
      .map((row) => row.turn_id);
  },

  /** The judge may score `turnId` now, seeing `nextTurnId` (null at session end). False when it was not waiting. */
  async queueForJudge(db: Queryable, turnId: string, nextTurnId: string | null): Promise<boolean> {
    const result = await db.query("UPDATE rl_samples SET judge_state = 'queued', next_turn_id = $1 WHERE turn_id = $2 AND judge_state = 'waiting'", [
      nextTurnId,
      turnId,
    ]);
    return (result.rowCount ?? 0) > 0;
  },
};

/**
 * The RL sample buffer on the team store (table rl_samples, the same columns as SQLite's): one row
 * per recorded main turn of any node. A verdict is written on the judge job's completing
 * client (`db`), so it is written once per job.
 */
export class PgRlSamples implements RlSampleStore, ScoredSampleSource {
  constructor(private readonly pool: pg.Pool) {}

  async get(turnId: string): Promise<SampleRow | undefined> {
    const result = await this.pool.query('SELECT * FROM rl_samples WHERE turn_id = $1', [turnId]);
    const row = result.rows[0] as unknown;
    return row === undefined ? undefined : rowSchema.parse(row);
  }

  async saveVerdict(turnId: string, verdict: Verdict, db: Queryable = this.pool, now = Date.now()): Promise<void> {
    await db.query('UPDATE rl_samples SET judge_state = $1, reward = $2, votes = $3, judge_model = $4, judge_error = $5, judged_at = $6 WHERE turn_id = $7', [
      verdict.state,
      verdict.reward,
      JSON.stringify(verdict.votes),
      verdict.model,
      verdict.error,
      now,
      turnId,
    ]);
  }

  async dropOlderThan(generation: number, db: Queryable = this.pool, now = Date.now()): Promise<number> {
    const result = await db.query(
      'UPDATE rl_samples SET dropped_at = $1, dropped_for_generation = $2 WHERE skill_generation < $2 AND dropped_at IS NULL AND trained_step IS NULL',
      [now, generation],
    );
    return result.rowCount ?? 0;
  }

  /** As RlBuffer.trainable: older generations are dropped first, in the same transaction as the read. */
  async trainable(currentGeneration: number, limit: number, options: { teacher?: boolean } = {}): Promise<RlSample[]> {
    return inTransaction(this.pool, async (client) => {
      await this.dropOlderThan(currentGeneration, client);
      const result = await client.query(`SELECT * FROM rl_samples WHERE ${TRAINABLE} ORDER BY created_at, turn_id LIMIT $3`, [
        currentGeneration,
        options.teacher === true,
        limit,
      ]);
      return z.array(rowSchema).parse(result.rows).map(toSample);
    });
  }

  async trainableCount(currentGeneration: number, options: { teacher?: boolean } = {}): Promise<number> {
    const result = await this.pool.query(`SELECT COUNT(*) AS count FROM rl_samples WHERE ${TRAINABLE}`, [currentGeneration, options.teacher === true]);
    return z.array(z.object({ count: int })).parse(result.rows)[0]?.count ?? 0;
  }

  /**
   * A team training step takes its batch when it starts (TrainingBuffer's `claim`): all of them, or
   * none when another step took any first. A claimed sample is out of the trainable buffer;
   * PgTrainingSteps gives it back when the step is abandoned or fails.
   */
  async claim(turnIds: readonly string[], step: number): Promise<boolean> {
    return inTransaction(
      this.pool,
      async (client) => {
        const claimed = await client.query(
          'UPDATE rl_samples SET trained_step = $1 WHERE turn_id = ANY($2::text[]) AND trained_step IS NULL AND dropped_at IS NULL',
          [step, [...turnIds]],
        );
        return (claimed.rowCount ?? 0) === turnIds.length;
      },
      // Some were taken: the others are left as they were.
      (all) => Promise.resolve(all),
    );
  }

  /**
   * OPD, as RlBuffer.queueForTeacher: marks up to `limit` samples with token ids, not yet asked, as
   * queued for the teacher and returns them, on the caller's transaction (which queues their jobs).
   * Rows another node is marking are skipped, so each sample is queued once.
   */
  async queueForTeacher(limit: number, db: Queryable): Promise<string[]> {
    const result = await db.query(
      `UPDATE rl_samples SET teacher_state = 'queued'
        WHERE turn_id IN (SELECT turn_id FROM rl_samples
                           WHERE teacher_state IS NULL AND prompt_tokens IS NOT NULL AND trained_step IS NULL AND dropped_at IS NULL
                           ORDER BY created_at, turn_id LIMIT $1 FOR UPDATE SKIP LOCKED)
          AND teacher_state IS NULL
        RETURNING turn_id`,
      [limit],
    );
    return z
      .array(z.object({ turn_id: z.string() }))
      .parse(result.rows)
      .map((row) => row.turn_id);
  }

  /** As RlBuffer.saveTeacher, on the teacher job's completing client (`db`); only a sample still waiting for the teacher is written. */
  async saveTeacher(turnId: string, outcome: TeacherOutcome, db: Queryable = this.pool): Promise<void> {
    const [state, logprobs, error] = 'logprobs' in outcome ? ['done', encodeLogprobs(outcome.logprobs), null] : ['failed', null, outcome.error.slice(0, 500)];
    await db.query("UPDATE rl_samples SET teacher_state = $1, teacher_logprobs = $2, teacher_error = $3 WHERE turn_id = $4 AND teacher_state = 'queued'", [
      state,
      logprobs,
      error,
      turnId,
    ]);
  }

  /**
   * As RlBuffer.scored, for `metaclaw rl export`: every sample with a reward, of the current
   * generation (and trained ones) or with `includeDropped` all, oldest first and ties by turn id in
   * byte order (COLLATE "C": SQLite's order), read a page at a time (a sample with token ids can be
   * large). Read only.
   */
  async *scored(currentGeneration: number, includeDropped: boolean, pageSize = 200): AsyncGenerator<SampleRow> {
    let after: { createdAt: number; turnId: string } | undefined;
    for (;;) {
      const result = await this.pool.query(
        `SELECT * FROM rl_samples
          WHERE ${scoredSamplesWhere('$1', '$2::boolean')}
            AND ($3::bigint IS NULL OR (created_at, turn_id COLLATE "C") > ($3::bigint, $4::text COLLATE "C"))
          ORDER BY created_at, turn_id COLLATE "C" LIMIT $5`,
        [currentGeneration, includeDropped, after?.createdAt ?? null, after?.turnId ?? null, pageSize],
      );
      const rows = z.array(rowSchema).parse(result.rows);
      yield* rows;
      const last = rows.at(-1);
      if (!last || rows.length < pageSize) return;
      after = { createdAt: last.created_at, turnId: last.turn_id };
    }
  }

  /**
   * As RlBuffer.setAside: samples whose batch the backend kept refusing leave the trainable buffer
   * with the reason (kept, exported, counted by `status`). Called once the failed step gave them
   * back; a sample another step claimed meanwhile is left to it.
   */
  async setAside(turnIds: readonly string[], reason: string, now = Date.now()): Promise<void> {
    await this.pool.query(
      'UPDATE rl_samples SET set_aside_at = $1, set_aside_reason = $2 WHERE turn_id = ANY($3::text[]) AND trained_step IS NULL AND set_aside_at IS NULL',
      [now, setAsideReason(reason), [...turnIds]],
    );
  }

  async markTrained(turnIds: readonly string[], step: number, db: Queryable = this.pool): Promise<void> {
    await db.query('UPDATE rl_samples SET trained_step = $1 WHERE turn_id = ANY($2::text[])', [step, [...turnIds]]);
  }

  /** The buffer as /status and /v1/rl show it: rl/buffer/status.ts's figures, counted by PostgreSQL (read only). */
  async status(currentGeneration: number, days = 14): Promise<BufferStatus> {
    const stale = '(trained_step IS NULL AND (dropped_at IS NOT NULL OR skill_generation < $1))';
    const live = `trained_step IS NULL AND NOT ${stale} AND set_aside_at IS NULL`;
    const counts = await this.pool.query(
      `SELECT COUNT(*) AS samples,
              COUNT(*) FILTER (WHERE ${live} AND judge_state = 'waiting') AS waiting,
              COUNT(*) FILTER (WHERE ${live} AND judge_state = 'queued') AS queued,
              COUNT(*) FILTER (WHERE ${live} AND judge_state = 'scored') AS scored,
              COUNT(*) FILTER (WHERE ${live} AND judge_state = 'tie') AS tie,
              COUNT(*) FILTER (WHERE ${live} AND judge_state = 'failed') AS failed,
              COUNT(*) FILTER (WHERE ${stale}) AS dropped,
              COUNT(*) FILTER (WHERE trained_step IS NOT NULL) AS trained,
              COUNT(*) FILTER (WHERE trained_step IS NULL AND NOT ${stale} AND set_aside_at IS NOT NULL) AS set_aside,
              COUNT(*) FILTER (WHERE ${live} AND judge_state = 'scored' AND prompt_tokens IS NOT NULL) AS trainable,
              COUNT(*) FILTER (WHERE prompt_tokens IS NULL) AS text_only,
              COUNT(*) FILTER (WHERE teacher_state = 'queued') AS teacher_queued,
              COUNT(*) FILTER (WHERE teacher_state = 'done') AS teacher_done,
              COUNT(*) FILTER (WHERE teacher_state = 'failed') AS teacher_failed,
              COUNT(reward) AS rewarded,
              AVG(reward) AS mean_reward
         FROM rl_samples`,
      [currentGeneration],
    );
    const c = countsSchema.parse(counts.rows[0]);
    const setAside = await this.pool.query(
      'SELECT set_aside_reason AS reason FROM rl_samples WHERE set_aside_at IS NOT NULL AND trained_step IS NULL ORDER BY set_aside_at DESC LIMIT 1',
    );
    const byDay = await this.pool.query(
      `SELECT to_char(to_timestamp(created_at / 1000.0), 'YYYY-MM-DD') AS day, COUNT(*) AS samples, COUNT(reward) AS scored, AVG(reward) AS mean_reward
         FROM rl_samples WHERE created_at >= $1 GROUP BY day ORDER BY day`,
      [Date.now() - days * 86_400_000],
    );
    const byGeneration = await this.pool.query(
      `SELECT skill_generation AS generation, COUNT(*) AS samples, COUNT(reward) AS scored, AVG(reward) AS mean_reward, COUNT(*) FILTER (WHERE ${stale}) AS dropped
         FROM rl_samples GROUP BY skill_generation ORDER BY skill_generation`,
      [currentGeneration],
    );
    return {
      samples: c.samples,
      current_generation: currentGeneration,
      by_state: {
        waiting: c.waiting,
        queued: c.queued,
        scored: c.scored,
        tie: c.tie,
        failed: c.failed,
        dropped: c.dropped,
        trained: c.trained,
        set_aside: c.set_aside,
      },
      set_aside_reason:
        z
          .object({ reason: z.string().nullable() })
          .nullable()
          .catch(null)
          .parse(setAside.rows[0] ?? null)?.reason ?? null,
      trainable: c.trainable,
      text_only: c.text_only,
      teacher: { queued: c.teacher_queued, done: c.teacher_done, failed: c.teacher_failed },
      judged_share: c.samples === 0 ? null : round(c.rewarded / c.samples),
      mean_reward: c.mean_reward === null ? null : round(c.mean_reward),
      by_day: z
        .array(z.object({ day: z.string(), samples: int, scored: int, mean_reward: nullableInt }))
        .parse(byDay.rows)
        .map((row) => ({ ...row, mean_reward: row.mean_reward === null ? null : round(row.mean_reward) })),
      by_generation: z
        .array(z.object({ generation: int, samples: int, scored: int, mean_reward: nullableInt, dropped: int }))
        .parse(byGeneration.rows)
        .map((row) => ({ ...row, mean_reward: row.mean_reward === null ? null : round(row.mean_reward) })),
    };
  }
}

const countsSchema = z.object({
  samples: int,
  waiting: int,
  queued: int,
  scored: int,
  tie: int,
  failed: int,
  dropped: int,
  trained: int,
  set_aside: int,
  trainable: int,
  text_only: int,
  teacher_queued: int,
  teacher_done: int,
  teacher_failed: int,
  rewarded: int,
  mean_reward: nullableInt,
});

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}
