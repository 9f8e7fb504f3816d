import { z } from 'zod';
import { errorMessage } from '../../errors.js';
import type { OpenAIChatRequest, RequestFormat } from '../../types/index.js';
import { readString, translateRequest, type EarlierConversation } from '../../upstream/index.js';
import type { PolicySampler, PolicyTurn, SampledSequence } from '../types.js';
import type { ChatTokenizer, RenderedPrompt } from './chat-tokenizer.js';
import { parseAnswer } from './parse-answer.js';
import { policyAnswer, type PolicyAnswer } from './respond.js';
import { decodeSample, DEFAULT_SAMPLING, requestSampling, type DecodedSample, type SamplingDefaults } from './sampling.js';

/**
 * One main turn served from the RL policy: render the chat with the base model's template, sample
 * from the policy within a latency budget, decode and parse the answer into the client's API, and
 * hand back the exact sampled ids with it. Anything that keeps the policy from answering in time
 * is a fallback: the caller serves the turn from the user's normal upstream (never an error to the
 * agent) and records it as not trainable. Nothing reaches the client from here.
 */

export interface PolicyTurnRequest {
  turnId: string;
  sessionId: string;
  clientFormat: RequestFormat;
  /** The client-format body, as the forwarder would send it. */
  body: Record<string, unknown>;
  /** A Responses request's conversation before its `previous_response_id`. */
  history?: EarlierConversation;
  stream: boolean;
}

export interface PolicyServing {
  tokenizer: ChatTokenizer;
  sampler: PolicySampler;
  /** Render plus sampling; past it the turn falls back. */
  budgetMs: number;
  sampling?: SamplingDefaults;
  /** Max tokens for an Anthropic request translated without one (the forwarder's default). */
  defaultMaxTokens?: number;
  /** The client went away: stop sampling. */
  signal?: AbortSignal;
}

export type FallbackReason = 'render_failed' | 'sampler_failed' | 'over_budget' | 'answer_failed' | 'client_aborted';

export type PolicyTurnResult =
  | {
      kind: 'served';
      answer: PolicyAnswer;
      /** Trainable, with the prompt ids of the very render that was sampled from. */
      turn: PolicyTurn;
      elapsedMs: number;
    }
  | {
      kind: 'fallback';
      reason: FallbackReason;
      message: string;
      /** Not trainable; null when the chat could not even be rendered. */
      turn: PolicyTurn | null;
      elapsedMs: number;
    };

/** A sampler's answer is untrusted output: one logprob per token, token ids that exist. */
const sampledSequenceSchema = z
  .object({
    tokens: z.array(z.number().int().nonnegative()),
    logprobs: z.array(z.number()),
    stopReason: z.enum(['stop', 'length']),
  })
  .refine((sequence) => sequence.tokens.length === sequence.logprobs.length, { message: 'tokens and logprobs differ in length' });

export async function servePolicyTurn(request: PolicyTurnRequest, serving: PolicyServing): Promise<PolicyTurnResult> {
  const started = performance.now();
  const elapsed = (): number => Math.round(performance.now() - started);
  const version = serving.sampler.version;
  const untrainable = (promptTokens: number[]): PolicyTurn => ({
    turnId: request.turnId,
    sessionId: request.sessionId,
    promptTokens,
    response: { tokens: [], logprobs: [], stopReason: 'stop' },
    policyVersion: version,
    trainable: false,
  });

  let chat: OpenAIChatRequest;
  let prompt: RenderedPrompt;
  try {
    chat = translateRequest(request.clientFormat, 'openai', request.body, {
      defaultMaxTokens: serving.defaultMaxTokens ?? DEFAULT_SAMPLING.maxTokens,
      ...(request.history ? { history: request.history } : {}),
    }) as OpenAIChatRequest;
    prompt = serving.tokenizer.renderPrompt(chat);
  } catch (error) {
    return { kind: 'fallback', reason: 'render_failed', message: `cannot render the chat: ${errorMessage(error)}`, turn: null, elapsedMs: elapsed() };
  }

  const sampling = requestSampling(chat, serving.tokenizer.stopTokens, serving.sampling ?? DEFAULT_SAMPLING);
  const remaining = serving.budgetMs - (performance.now() - started);
  const outcome = await sampleWithin(serving.sampler, prompt.tokens, sampling.params, remaining, serving.signal);
  if (outcome.kind !== 'sampled') {
    return { kind: 'fallback', reason: outcome.kind, message: outcome.message, turn: untrainable(prompt.tokens), elapsedMs: elapsed() };
  }

  const unknown = outcome.sequence.tokens.find((id) => !serving.tokenizer.hasId(id));
  if (unknown !== undefined) {
    const message = `the policy sampler answered token id ${unknown}, which is not in the tokenizer's vocabulary (is rl.tokenizer_path the base model's?)`;
    return { kind: 'fallback', reason: 'sampler_failed', message, turn: untrainable(prompt.tokens), elapsedMs: elapsed() };
  }
  let decoded: DecodedSample;
  let answer: PolicyAnswer;
  try {
    decoded = decodeSample(serving.tokenizer, outcome.sequence, sampling.stopStrings);
    const parts = parseAnswer(decoded.text);
    const finishReason = decoded.sequence.stopReason === 'length' ? 'length' : parts.toolCalls.length > 0 ? 'tool_calls' : 'stop';
    answer = policyAnswer({
      clientFormat: request.clientFormat,
      context: { requestId: request.turnId, body: request.body, ...(request.history ? { history: request.history } : {}) },
      stream: request.stream,
      id: `chatcmpl-${request.turnId}`,
      model: readString(request.body['model']) ?? version,
      parts,
      finishReason,
      promptTokens: prompt.tokens.length,
      completionTokens: decoded.sequence.tokens.length,
    });
  } catch (error) {
    return {
      kind: 'fallback',
      reason: 'answer_failed',
      message: `cannot build the answer: ${errorMessage(error)}`,
      turn: untrainable(prompt.tokens),
      elapsedMs: elapsed(),
    };
  }
  const turn: PolicyTurn = {
    turnId: request.turnId,
    sessionId: request.sessionId,
    promptTokens: prompt.tokens,
    response: decoded.sequence,
    policyVersion: version,
    trainable: true,
  };
  return { kind: 'served', answer, turn, elapsedMs: elapsed() };
}

type SampleOutcome = { kind: 'sampled'; sequence: SampledSequence } | { kind: 'sampler_failed' | 'over_budget' | 'client_aborted'; message: string };

/** The sample, or why not, by the deadline at the latest: a sampler that ignores the abort is not waited for. */
async function sampleWithin(
  sampler: PolicySampler,
  promptTokens: number[],
  params: Parameters<PolicySampler['sample']>[1],
  budgetMs: number,
  clientSignal: AbortSignal | undefined,
): Promise<SampleOutcome> {
  if (clientSignal?.aborted) return { kind: 'client_aborted', message: 'the client went away' };
  if (budgetMs <= 0) return { kind: 'over_budget', message: 'the latency budget was spent before sampling' };
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let onClientAbort: (() => void) | undefined;
  const stopped = new Promise<SampleOutcome>((resolve) => {
    timer = setTimeout(() => {
      controller.abort(new Error('over the latency budget'));
      resolve({ kind: 'over_budget', message: `the policy sampler did not answer within ${Math.round(budgetMs)} ms` });
    }, budgetMs);
    onClientAbort = () => {
      controller.abort(new Error('client aborted'));
      resolve({ kind: 'client_aborted', message: 'the client went away' });
    };
    clientSignal?.addEventListener('abort', onClientAbort, { once: true });
  });
  const sampled = (async (): Promise<SampleOutcome> => {
    try {
      const result = sampledSequenceSchema.safeParse(await sampler.sample(promptTokens, params, controller.signal));
      if (!result.success) return { kind: 'sampler_failed', message: `the policy sampler answered malformed output: ${result.error.issues[0]?.message}` };
      return { kind: 'sampled', sequence: result.data };
    } catch (error) {
      return { kind: 'sampler_failed', message: `the policy sampler failed: ${errorMessage(error)}` };
    }
  })();
  try {
    return await Promise.race([sampled, stopped]);
  } finally {
    clearTimeout(timer);
    if (onClientAbort) clientSignal?.removeEventListener('abort', onClientAbort);
  }
}
