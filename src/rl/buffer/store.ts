import type { Db } from '../../store/index.js';
import type { JudgeScore, PolicyTurn, RlSample } from '../types.js';
import { decodeLogprobs, decodeTokens, encodeLogprobs, encodeTokens } from './codec.js';
import type { RlSampleStore, ScoredSampleSource } from './port.js';

/** What a training step may take: judged, with token ids, untrained, of the live generation, and (OPD) past the teacher. */
const TRAINABLE = `judge_state = 'scored' AND prompt_tokens IS NOT NULL AND trained_step IS NULL AND dropped_at IS NULL AND set_aside_at IS NULL
  AND skill_generation >= @generation AND (@teacher = 0 OR teacher_state IN ('done', 'failed'))`;

/** A set-aside sample's reason as stored (either store): a backend's error may be long. */
export function setAsideReason(reason: string): string {
  return reason.slice(0, 1000);
}

/**
 * The samples an export reads (both engines' `scored`), in each engine's parameter syntax: with a
 * reward, and of the live generation (or trained) unless `all`. Both read them oldest first, ties by
 * turn id in byte order, so an export writes the same lines in the same order from either.
 */
export function scoredSamplesWhere(generation: string, all: string): string {
  return `reward IS NOT NULL AND (${all} OR (trained_step IS NULL AND dropped_at IS NULL AND skill_generation >= ${generation}) OR trained_step IS NOT NULL)`;
}

/**
 * The samples a new training run must not train on (SQLite's and PostgreSQL's, with their own
 * placeholders): served by the earlier run's policy, so their token ids and logprobs are another
 * base model's (or rank's), and not trained, dropped or set aside yet.
 */
export function earlierRunSamplesWhere(before: string): string {
  return `policy_version IS NOT NULL AND created_at < ${before} AND trained_step IS NULL AND dropped_at IS NULL AND set_aside_at IS NULL`;
}

/**
 * Where a sample is with the judge: waiting for the next user turn of its session (or the session's
 * end), queued for the judge, scored (a majority of the votes agreed), tie (the votes came back
 * but no majority), failed (no usable votes: the judge was down or answered nonsense).
 */
export type JudgeState = 'waiting' | 'queued' | 'scored' | 'tie' | 'failed';

export interface SampleRow {
  turn_id: string;
  session_id: string;
  seq: number;
  skill_generation: number;
  policy_version: string | null;
  prompt_tokens: Buffer | null;
  response_tokens: Buffer | null;
  response_logprobs: Buffer | null;
  next_turn_id: string | null;
  judge_state: JudgeState;
  reward: number | null;
  votes: string | null;
  judge_model: string | null;
  judge_error: string | null;
  judged_at: number | null;
  dropped_at: number | null;
  dropped_for_generation: number | null;
  trained_step: number | null;
  created_at: number;
  teacher_state: TeacherState | null;
  teacher_logprobs: Buffer | null;
  teacher_error: string | null;
  /** set when the training backend kept refusing the sample's batch: it never trains, and the reason says why */
  set_aside_at: number | null;
  set_aside_reason: string | null;
}

/** Where a sample is with the OPD teacher: null when it is not asked (OPD off, or no token ids). */
export type TeacherState = 'queued' | 'done' | 'failed';

export interface NewSample {
  turnId: string;
  sessionId: string;
  seq: number;
  skillGeneration: number;
  /** present when the turn was served from the policy (token ids kept only when it is trainable) */
  policy?: PolicyTurn | undefined;
  createdAt: number;
}

export interface Verdict {
  state: 'scored' | 'tie' | 'failed';
  reward: JudgeScore | null;
  votes: Array<JudgeScore | null>;
  model: string;
  error: string | null;
}

/**
 * The RL sample buffer: one row per recorded main turn. Texts stay in the turn record (the row
 * references it); the row adds the skill generation, the exact token ids and logprobs when the
 * turn was served from the policy, and the judge's verdict. Support/query separation: a sample of
 * an older skill generation never reaches training (`trainable` reads the live generation), and is
 * marked dropped — kept as history and counted — when the generation moves on.
 */
export class RlBuffer implements RlSampleStore, ScoredSampleSource {
  private readonly statements;

  constructor(private readonly db: Db) {
    this.statements = {
      insert: db.prepare<[string, string, number, number, string | null, Buffer | null, Buffer | null, Buffer | null, number]>(
        `INSERT OR IGNORE INTO rl_samples (turn_id, session_id, seq, skill_generation, policy_version, prompt_tokens, response_tokens, response_logprobs, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      waitingOfSession: db.prepare<[string], { turn_id: string }>(
        "SELECT turn_id FROM rl_samples WHERE session_id = ? AND judge_state = 'waiting' ORDER BY seq",
      ),
      queue: db.prepare<[string | null, string]>(
        "UPDATE rl_samples SET judge_state = 'queued', next_turn_id = ? WHERE turn_id = ? AND judge_state = 'waiting'",
      ),
      get: db.prepare<[string], SampleRow>('SELECT * FROM rl_samples WHERE turn_id = ?'),
      verdict: db.prepare<[string, number | null, string, string, string | null, number, string]>(
        'UPDATE rl_samples SET judge_state = ?, reward = ?, votes = ?, judge_model = ?, judge_error = ?, judged_at = ? WHERE turn_id = ?',
      ),
      drop: db.prepare<[number, number, number]>(
        'UPDATE rl_samples SET dropped_at = ?, dropped_for_generation = ? WHERE skill_generation < ? AND dropped_at IS NULL AND trained_step IS NULL',
      ),
      // @teacher = 1 (OPD on): a sample waits until the teacher has answered or given up.
      trainable: db.prepare<{ generation: number; limit: number; teacher: number }, SampleRow>(
        `SELECT * FROM rl_samples WHERE ${TRAINABLE} ORDER BY created_at LIMIT @limit`,
      ),
      trainableCount: db.prepare<{ generation: number; teacher: number }, { count: number }>(`SELECT COUNT(*) AS count FROM rl_samples WHERE ${TRAINABLE}`),
      forTeacher: db.prepare<[number], { turn_id: string }>(
        `SELECT turn_id FROM rl_samples
          WHERE teacher_state IS NULL AND prompt_tokens IS NOT NULL AND trained_step IS NULL AND dropped_at IS NULL
          ORDER BY created_at LIMIT ?`,
      ),
      queueTeacher: db.prepare<[string]>("UPDATE rl_samples SET teacher_state = 'queued' WHERE turn_id = ? AND teacher_state IS NULL"),
      teacher: db.prepare<[TeacherState, Buffer | null, string | null, string]>(
        'UPDATE rl_samples SET teacher_state = ?, teacher_logprobs = ?, teacher_error = ? WHERE turn_id = ?',
      ),
      scored: db.prepare<{ generation: number; all: number }, SampleRow>(
        `SELECT * FROM rl_samples WHERE ${scoredSamplesWhere('@generation', '@all = 1')} ORDER BY created_at, turn_id`,
      ),
      trained: db.prepare<[number, string]>('UPDATE rl_samples SET trained_step = ? WHERE turn_id = ?'),
      setAside: db.prepare<[number, string, string]>(
        'UPDATE rl_samples SET set_aside_at = ?, set_aside_reason = ? WHERE turn_id = ? AND trained_step IS NULL AND set_aside_at IS NULL',
      ),
      setAsideEarlierRun: db.prepare<{ now: number; reason: string; before: number }>(
        `UPDATE rl_samples SET set_aside_at = @now, set_aside_reason = @reason WHERE ${earlierRunSamplesWhere('@before')}`,
      ),
    };
  }

  /** Records a main turn as a sample (once: a turn recorded again is ignored). */
  record(sample: NewSample): void {
    this.statements.insert.run(...sampleValues(sample));
  }

  /** Samples of a session still waiting for the next user turn, oldest first. */
  waitingOfSession(sessionId: string): string[] {
    return this.statements.waitingOfSession.all(sessionId).map((row) => row.turn_id);
  }

  /** The judge may score `turnId` now, seeing `nextTurnId` (null at session end). False when it was not waiting. */
  queueForJudge(turnId: string, nextTurnId: string | null): boolean {
    return this.statements.queue.run(nextTurnId, turnId).changes > 0;
  }

  get(turnId: string): SampleRow | undefined {
    return this.statements.get.get(turnId);
  }

  saveVerdict(turnId: string, verdict: Verdict, now = Date.now()): void {
    this.statements.verdict.run(verdict.state, verdict.reward, JSON.stringify(verdict.votes), verdict.model, verdict.error, now, turnId);
  }

  /** The skill generation is now `generation`: untrained samples of older ones leave the trainable buffer. Returns how many. */
  dropOlderThan(generation: number, now = Date.now()): number {
    return this.statements.drop.run(now, generation, generation).changes;
  }

  /**
   * Up to `limit` samples a training step may use: scored, with the sampled token ids, not trained
   * yet, of the current skill generation (older ones are dropped first, so the filter cannot lag
   * behind the library).
   */
  trainable(currentGeneration: number, limit: number, options: { teacher?: boolean } = {}): RlSample[] {
    return this.db.transaction(() => {
      this.dropOlderThan(currentGeneration);
      return this.statements.trainable.all({ generation: currentGeneration, limit, teacher: options.teacher ? 1 : 0 }).map(toSample);
    })();
  }

  /** How many samples `trainable` would offer with no limit (the engine's batch check). */
  trainableCount(currentGeneration: number, options: { teacher?: boolean } = {}): number {
    return this.statements.trainableCount.get({ generation: currentGeneration, teacher: options.teacher ? 1 : 0 })?.count ?? 0;
  }

  /**
   * OPD: marks up to `limit` samples with token ids, not yet asked, as queued for the teacher and
   * returns them (the caller queues one teacher job each).
   */
  queueForTeacher(limit: number): string[] {
    return this.db.transaction(() =>
      this.statements.forTeacher
        .all(limit)
        .map((row) => row.turn_id)
        .filter((turnId) => this.statements.queueTeacher.run(turnId).changes > 0),
    )();
  }

  /** The teacher's logprobs for the sample's response tokens, or why it gave none (the sample then trains without the KL term). */
  saveTeacher(turnId: string, answer: { logprobs: readonly number[] } | { error: string }): void {
    if ('logprobs' in answer) this.statements.teacher.run('done', encodeLogprobs(answer.logprobs), null, turnId);
    else this.statements.teacher.run('failed', null, answer.error.slice(0, 500), turnId);
  }

  /** Every sample with a reward, oldest first: of the current generation (and trained ones), or with `includeDropped` all (scoredSamplesWhere). */
  scored(currentGeneration: number, includeDropped: boolean): IterableIterator<SampleRow> {
    return this.statements.scored.iterate({ generation: currentGeneration, all: includeDropped ? 1 : 0 });
  }

  /** Samples the backend keeps refusing: kept (and exported) with the reason, never offered to a step again. */
  setAside(turnIds: readonly string[], reason: string, now = Date.now()): void {
    this.db.transaction(() => {
      for (const turnId of turnIds) this.statements.setAside.run(now, setAsideReason(reason), turnId);
    })();
  }

  /** A new training run began at `before`: the earlier run's untrained samples are kept with the reason, never trained. */
  setAsideEarlierRun(before: number, reason: string, now = Date.now()): number {
    return this.statements.setAsideEarlierRun.run({ now, reason: setAsideReason(reason), before }).changes;
  }

  markTrained(turnIds: readonly string[], step: number): void {
    this.db.transaction(() => {
      for (const turnId of turnIds) this.statements.trained.run(step, turnId);
    })();
  }
}

/**
 * A new sample's column values in the order of both engines' INSERT (turn_id, session_id, seq,
 * skill_generation, policy_version, prompt_tokens, response_tokens, response_logprobs, created_at):
 * token ids only when the turn was served from the policy and is trainable.
 */
export function sampleValues(sample: NewSample): [string, string, number, number, string | null, Buffer | null, Buffer | null, Buffer | null, number] {
  const policy = sample.policy;
  const tokens = policy?.trainable === true && policy.response.tokens.length > 0 ? policy : undefined;
  return [
    sample.turnId,
    sample.sessionId,
    sample.seq,
    sample.skillGeneration,
    policy?.policyVersion ?? null,
    tokens ? encodeTokens(tokens.promptTokens) : null,
    tokens ? encodeTokens(tokens.response.tokens) : null,
    tokens ? encodeLogprobs(tokens.response.logprobs) : null,
    sample.createdAt,
  ];
}

/** A stored row as the training path sees it (only rows with token ids). */
export function toSample(row: SampleRow): RlSample {
  return {
    turnId: row.turn_id,
    sessionId: row.session_id,
    skillGeneration: row.skill_generation,
    policyVersion: row.policy_version ?? '',
    promptTokens: row.prompt_tokens ? decodeTokens(row.prompt_tokens) : [],
    responseTokens: row.response_tokens ? decodeTokens(row.response_tokens) : [],
    responseLogprobs: row.response_logprobs ? decodeLogprobs(row.response_logprobs) : [],
    reward: row.reward === null ? null : (row.reward as JudgeScore),
    createdAt: row.created_at,
    ...(row.teacher_logprobs ? { teacherLogprobs: decodeLogprobs(row.teacher_logprobs) } : {}),
  };
}
