import { z } from 'zod';
import { errorMessage } from '../../errors.js';
import { LearningError, type JobContext, type JobHandler } from '../../learning/index.js';
import { decodeTokens } from '../buffer/codec.js';
import type { RlBuffer } from '../buffer/store.js';
import { teacherLogprobs, type TeacherEndpoint } from './client.js';

/** The learning job that asks the OPD teacher about one sample. */
export const TEACHER_JOB = 'rl.teacher';

const payloadSchema = z.object({ turnId: z.string().min(1) });

/**
 * OPD's teacher as a learning job: the teacher's logprobs for a sample's exact response tokens,
 * stored beside the student's. A teacher that cannot give them (it refuses, or does not share the
 * tokenizer) marks the sample `failed`, and it trains without the KL term; an outage is retried
 * with the queue's backoff, and the last attempt gives up the same way, so no sample waits forever.
 */
export class TeacherHandler implements JobHandler {
  readonly kind = TEACHER_JOB;
  readonly usesLlm = true;

  constructor(
    private readonly buffer: RlBuffer,
    private readonly endpoint: TeacherEndpoint,
  ) {}

  async run(payload: unknown, context: JobContext): Promise<void> {
    const parsed = payloadSchema.safeParse(payload);
    if (!parsed.success) return;
    const sample = this.buffer.get(parsed.data.turnId);
    if (!sample || sample.teacher_state !== 'queued' || !sample.prompt_tokens || !sample.response_tokens) return;
    try {
      const answer = await teacherLogprobs(this.endpoint, decodeTokens(sample.prompt_tokens), decodeTokens(sample.response_tokens), context.signal);
      context.spend(answer.tokens);
      this.buffer.saveTeacher(sample.turn_id, { logprobs: answer.logprobs });
    } catch (error) {
      const retryable = !(error instanceof LearningError) || error.retryable;
      if (retryable && context.job.attempts < context.job.maxAttempts) throw error;
      this.buffer.saveTeacher(sample.turn_id, { error: errorMessage(error) });
      context.logger.warn({ turn: sample.turn_id, err: errorMessage(error) }, 'OPD teacher gave no logprobs; the sample trains without the KL term');
    }
  }
}
