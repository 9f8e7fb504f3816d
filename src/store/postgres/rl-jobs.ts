import type pg from 'pg';
import { z } from 'zod';
import type { UpstreamTarget } from '../../config/index.js';
import { LearningMisconfiguredError, PermanentJobError, resolveLearningTarget, type TeamJobHandler } from '../../learning/index.js';
import { JUDGE_JOB } from '../../rl/buffer/recording.js';
import type { Verdict } from '../../rl/buffer/store.js';
import { judgeTurn, type JudgeSettings } from '../../rl/judge/index.js';
import { askTeacher, TEACHER_JOB, teacherPayloadSchema, type TeacherEndpoint } from '../../rl/teacher/index.js';
import type { CredentialMemory } from '../../upstream/credential-memory.js';
import type { PgConversationReads } from './conversation-reads.js';
import type { PgJobQueue } from './job-queue.js';
import type { PgRlSamples } from './rl-samples.js';
import { inTransaction } from './transaction.js';

export interface PgRlJudgeDeps {
  samples: PgRlSamples;
  reads: PgConversationReads;
  settings: JudgeSettings;
  mainUpstream: UpstreamTarget;
  credentials: CredentialMemory;
}

const payloadSchema = z.object({ turnId: z.string().min(1) });

/**
 * rl.judge on the team store: the personal judge's votes (rl/judge/handler.ts's judgeTurn) over the
 * turn the team store recorded, with its verdict and the turn's judge score (skill credit) written as
 * the job's effect — once per job, and by no node that lost its lease meanwhile. When calls failed
 * and no majority came back, nothing is written and the job runs again, as on one proxy; its last
 * attempt writes the `failed` verdict, so the sample does not wait for the judge for ever.
 */
export function pgRlJudgeHandler(deps: PgRlJudgeDeps): TeamJobHandler {
  return {
    kind: JUDGE_JOB,
    usesLlm: true,
    async run(raw, context) {
      const parsed = payloadSchema.safeParse(raw);
      if (!parsed.success) throw new PermanentJobError(`bad judge job payload: ${parsed.error.issues[0]?.message}`);
      const sample = await deps.samples.get(parsed.data.turnId);
      if (!sample || sample.judge_state === 'scored' || sample.judge_state === 'tie') return undefined;
      const turn = await deps.reads.getTurnSummary(sample.turn_id);
      if (!turn)
        return writeVerdict(deps, sample.turn_id, sample.session_id, { state: 'failed', reward: null, votes: [], model: '', error: 'the turn record is gone' });
      const next = sample.next_turn_id ? await deps.reads.getTurnSummary(sample.next_turn_id) : undefined;
      const target = resolveLearningTarget(deps.settings.endpoint, deps.mainUpstream, deps.credentials, turn.model ?? undefined);
      if (!target) throw new LearningMisconfiguredError('no model for the RL judge: set rl.prm_model (or llm.model_id)');
      const { verdict, failure } = await judgeTurn(context, target, turn, next, deps.settings.votes);
      // Calls failed: the job runs again, and only its last attempt writes the failure (as the sample's verdict).
      if (failure !== undefined && context.job.attempts < context.job.maxAttempts) throw failure;
      return writeVerdict(deps, sample.turn_id, sample.session_id, verdict);
    },
  };
}

function writeVerdict(deps: PgRlJudgeDeps, turnId: string, sessionId: string, verdict: Verdict) {
  return async (client: pg.PoolClient): Promise<void> => {
    await deps.samples.saveVerdict(turnId, verdict, client);
    if (verdict.reward === null) return;
    // skills/credit.ts's recordJudgeScore: the score is also the turn's credit for the skills it showed.
    await client.query(
      `INSERT INTO turn_outcomes (turn_id, session_id, judge_score, updated_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (turn_id) DO UPDATE SET judge_score = excluded.judge_score, updated_at = excluded.updated_at`,
      [turnId, sessionId, verdict.reward, Date.now()],
    );
  };
}

/**
 * rl.teacher on the team store (OPD): the personal job's work (rl/teacher's askTeacher) on the team's
 * sample, its logprobs (or why there are none) written as the job's effect, so once per sample,
 * whichever node runs it; its tokens count against the team's budget.
 */
export function pgRlTeacherHandler(samples: PgRlSamples, endpoint: TeacherEndpoint): TeamJobHandler {
  return {
    kind: TEACHER_JOB,
    usesLlm: true,
    async run(raw, context) {
      const parsed = teacherPayloadSchema.safeParse(raw);
      if (!parsed.success) throw new PermanentJobError(`bad teacher job payload: ${parsed.error.issues[0]?.message}`);
      const outcome = await askTeacher(endpoint, await samples.get(parsed.data.turnId), context);
      return outcome && ((client) => samples.saveTeacher(parsed.data.turnId, outcome, client));
    },
  };
}

/**
 * OPD on the team store: marks samples not yet asked as queued for the teacher and queues a job for
 * each, in one transaction (a sample marked is a sample with its job). Returns how many were queued.
 */
export async function queueTeacherJobs(pool: pg.Pool, samples: PgRlSamples, queue: PgJobQueue, limit = 100): Promise<number> {
  return inTransaction(pool, async (client) => {
    const turnIds = await samples.queueForTeacher(limit, client);
    for (const turnId of turnIds)
      await queue.enqueue(TEACHER_JOB, { turnId }, { dedupeKey: `${TEACHER_JOB}:${turnId}`, idempotencyKey: `${TEACHER_JOB}:${turnId}` }, client);
    return turnIds.length;
  });
}
