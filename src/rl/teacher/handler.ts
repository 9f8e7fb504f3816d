import { z } from 'zod';
import { errorMessage } from '../../errors.js';
import { LearningError, type JobContext, type JobHandler } from '../../learning/index.js';
import { decodeTokens } from '../buffer/codec.js';
import type { RlBuffer, SampleRow } from '../buffer/store.js';
import { teacherLogprobs, type TeacherEndpoint } from './client.js';

/** The learning job that asks the OPD teacher about one sample. */
export const TEACHER_JOB = 'rl.teacher';

/** The teacher job's payload (both engines). */
export const teacherPayloadSchema = z.object({ turnId: z.string().min(1) });

/** What a teacher job writes for its sample: the logprobs, or why the sample trains without them. */
export type TeacherOutcome = { logprobs: readonly number[] } | { error: string };

/**
 * One teacher job's work on a sample, shared by both engines (the caller writes the outcome): the
 * teacher's logprobs for the sample's exact response tokens. A teacher that cannot give them (it
 * refuses, or does not share the tokenizer) gives the error, and the sample trains without the KL
 * term; an outage is thrown, so the queue retries it with its backoff, and the last attempt gives
 * up the same way, so no sample waits forever. Undefined: the sample is not waiting for the teacher.
 */
export async function askTeacher(endpoint: TeacherEndpoint, sample: SampleRow | undefined, context: JobContext): Promise<TeacherOutcome | undefined> {
  if (!sample || sample.teacher_state !== 'queued' || !sample.prompt_tokens || !sample.response_tokens) return undefined;
  try {
    const answer = await teacherLogprobs(endpoint, decodeTokens(sample.prompt_tokens), decodeTokens(sample.response_tokens), context.signal);
    context.spend(answer.tokens);
    return { logprobs: answer.logprobs };
  } catch (error) {
    const retryable = !(error instanceof LearningError) || error.retryable;
    if (retryable && context.job.attempts < context.job.maxAttempts) throw error;
    context.logger.warn({ turn: sample.turn_id, err: errorMessage(error) }, 'OPD teacher gave no logprobs; the sample trains without the KL term');
    return { error: errorMessage(error) };
  }
}

/** OPD's teacher as a learning job of the personal install: askTeacher's outcome stored beside the student's tokens. */
export class TeacherHandler implements JobHandler {
  readonly kind = TEACHER_JOB;
  readonly usesLlm = true;

  constructor(
    private readonly buffer: RlBuffer,
    private readonly endpoint: TeacherEndpoint,
  ) {}

  async run(payload: unknown, context: JobContext): Promise<void> {
    const parsed = teacherPayloadSchema.safeParse(payload);
    if (!parsed.success) return;
    const sample = this.buffer.get(parsed.data.turnId);
    const outcome = await askTeacher(this.endpoint, sample, context);
    if (outcome) this.buffer.saveTeacher(parsed.data.turnId, outcome);
  }
}
