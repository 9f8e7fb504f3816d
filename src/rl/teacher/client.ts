import { z } from 'zod';
import { LlmCallError, PermanentJobError } from '../../learning/index.js';
import { AnswerTooLargeError, cappedText } from '../../shared/capped-text.js';
import { urlHost } from '../../shared/url-host.js';
import { isRetryableStatus } from '../../upstream/index.js';
import { withoutKeys } from '../../shared/without-keys.js';
import { deadlineSignal } from '../../shared/deadline-signal.js';

/** Where the OPD teacher is (opd.teacher_url, opd.teacher_model, opd.teacher_api_key). */
export interface TeacherEndpoint {
  /** an OpenAI-compatible `/v1` base URL whose `/completions` takes token ids, `echo` and `logprobs` */
  baseUrl: string;
  model: string;
  apiKey: string;
}

export interface TeacherAnswer {
  /** one per response token, aligned to the student's tokens */
  logprobs: number[];
  /** prompt tokens the teacher read (counted as learning spend) */
  tokens: number;
}

/** An echo of a long session's token logprobs is a few MB; far more is a server gone wrong. */
export const TEACHER_ANSWER_MAX_BYTES = 64 * 1024 * 1024;

const answerSchema = z.object({
  choices: z.array(z.object({ logprobs: z.object({ token_logprobs: z.array(z.number().nullable()) }).nullable() })).min(1),
  usage: z.object({ prompt_tokens: z.number().optional() }).partial().optional(),
});

/**
 * The teacher's logprob of every token of a sampled answer, given its prompt: one `/completions`
 * call with the exact token ids (prompt then response), `echo` and `logprobs`, nothing generated.
 * Sending ids rather than text is what keeps the teacher's positions aligned to the student's
 * (MetaClaw sent text and sliced by the student's count, right only by luck); an answer whose
 * length does not match the ids means the teacher does not share the base model's tokenizer, and
 * is refused rather than misaligned.
 */
export async function teacherLogprobs(
  endpoint: TeacherEndpoint,
  promptTokens: readonly number[],
  responseTokens: readonly number[],
  signal?: AbortSignal,
): Promise<TeacherAnswer> {
  const ids = [...promptTokens, ...responseTokens];
  let answer = await complete(endpoint, ids, 0, signal);
  // Some servers refuse max_tokens 0; one generated token is then read past and ignored.
  if (answer.refusedZero) answer = await complete(endpoint, ids, 1, signal);
  const parsed = answerSchema.safeParse(answer.json);
  const logprobs = parsed.success ? parsed.data.choices[0]!.logprobs?.token_logprobs : undefined;
  if (!logprobs) throw new PermanentJobError(`the OPD teacher (${host(endpoint)}) answered without echoed token logprobs`);
  if (logprobs.length < ids.length || logprobs.length > ids.length + 1) {
    throw new PermanentJobError(
      `the OPD teacher (${host(endpoint)}) read ${logprobs.length} tokens where the student has ${ids.length}: it must share the base model's tokenizer`,
    );
  }
  return {
    logprobs: logprobs.slice(promptTokens.length, ids.length).map((value) => (value !== null && Number.isFinite(value) ? value : 0)),
    tokens: (parsed.success ? parsed.data.usage?.prompt_tokens : undefined) ?? ids.length,
  };
}

async function complete(
  endpoint: TeacherEndpoint,
  ids: number[],
  maxTokens: number,
  signal: AbortSignal | undefined,
): Promise<{ json: unknown; refusedZero: boolean }> {
  const deadline = deadlineSignal(signal, 120_000);
  let response: Response;
  try {
    response = await fetch(`${endpoint.baseUrl.replace(/\/+$/, '')}/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        ...(endpoint.apiKey ? { authorization: `Bearer ${endpoint.apiKey}` } : {}),
      },
      body: JSON.stringify({ model: endpoint.model, prompt: ids, echo: true, logprobs: 1, max_tokens: maxTokens, temperature: 0 }),
      signal: deadline.signal,
    });
  } catch (error) {
    deadline.done();
    throw new LlmCallError(`the OPD teacher (${host(endpoint)}) is unreachable: ${(error as Error).message}`, undefined);
  }
  let text: string;
  try {
    text = await cappedText(response, TEACHER_ANSWER_MAX_BYTES);
  } catch (error) {
    throw error instanceof AnswerTooLargeError ? new LlmCallError(`the OPD teacher (${host(endpoint)}) ${error.message}`, response.status) : error;
  } finally {
    deadline.done();
  }
  if (response.ok) {
    try {
      return { json: JSON.parse(text) as unknown, refusedZero: false };
    } catch {
      throw new PermanentJobError(`the OPD teacher (${host(endpoint)}) answered with something that is not JSON`);
    }
  }
  if (response.status === 400 && maxTokens === 0 && /max_tokens/i.test(text)) return { json: undefined, refusedZero: true };
  // Logged and stored with the job: without the key, which some servers echo.
  const message = `the OPD teacher (${host(endpoint)}) answered ${response.status}: ${withoutKeys(text, [endpoint.apiKey]).slice(0, 300)}`;
  if (isRetryableStatus(response.status)) throw new LlmCallError(message, response.status);
  throw new PermanentJobError(message);
}

function host(endpoint: TeacherEndpoint): string {
  return urlHost(endpoint.baseUrl) ?? 'its URL';
}
