import { fillPrompt, type Prompt } from '../prompts/index.js';
import { callLlm, callLlmForJson, type LlmReply, type LlmTarget } from './llm-client.js';
import type { JobContext } from './runner.js';
import type { JsonAnswer } from './structured-output.js';

/**
 * A learning job's LLM call: its prompt filled with `values`, a JSON answer checked against
 * `answer`, cancelled with the job, and its tokens charged to the job (the daily budget).
 */
export function callPromptForJson<T>(
  context: JobContext,
  target: LlmTarget,
  prompt: Prompt,
  values: Readonly<Record<string, string>>,
  answer: JsonAnswer<T>,
  sampling: { maxTokens: number; temperature: number },
): Promise<{ value: T; reply: LlmReply }> {
  return callLlmForJson(
    target,
    { system: prompt.system, user: fillPrompt(prompt.user, values), ...sampling, signal: context.signal, logger: context.logger },
    answer,
    (tokens) => context.spend(tokens),
  );
}

/** A learning job's LLM call answered in free text (the judge's "Score: N"): its prompt filled, cancelled with the job, tokens charged to it. */
export async function callPromptForText(
  context: JobContext,
  target: LlmTarget,
  prompt: Prompt,
  values: Readonly<Record<string, string>>,
  sampling: { maxTokens: number; temperature: number },
): Promise<LlmReply> {
  const reply = await callLlm(target, {
    system: prompt.system,
    user: fillPrompt(prompt.user, values),
    ...sampling,
    signal: context.signal,
    logger: context.logger,
  });
  context.spend(reply.inputTokens + reply.outputTokens);
  return reply;
}
