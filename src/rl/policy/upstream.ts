import type { UpstreamTarget } from '../../config/index.js';
import type { Logger } from '../../logging/index.js';
import type { ClientSink, ForwardInput, ForwardResult } from '../../upstream/index.js';
import type { PolicySampler, PolicyTurn } from '../types.js';
import type { ChatTokenizer } from './chat-tokenizer.js';
import type { SamplingDefaults } from './sampling.js';
import { sendPolicyAnswer } from './respond.js';
import { servePolicyTurn } from './serve.js';

/**
 * The RL policy as one more kind of upstream (modes `rl` and `auto`): a main turn is answered by
 * the policy's sampler; a side request, a turn while no policy is ready, or a turn the policy
 * cannot answer in time goes to the user's normal upstream through the forwarder, unchanged. Every
 * main turn the policy tried carries its PolicyTurn on the result (`policyTurn`), trainable only when
 * the policy answered it: the turn record takes it to the sample buffer.
 */

/** What serves right now. Read once per turn: after a training step new turns get the new sampler, turns in flight keep theirs. */
export interface PolicyState {
  tokenizer: ChatTokenizer;
  sampler: PolicySampler;
}

export interface PolicyUpstreamOptions {
  current(): PolicyState | undefined;
  /** Render plus sampling; past it the turn goes to the normal upstream. */
  budgetMs: number;
  sampling?: SamplingDefaults;
  defaultMaxTokens: number;
  logger: Logger;
}

/** A forward's result, with what the policy sampled when it tried the turn. */
export type PolicyForwardResult = ForwardResult & { policyTurn?: PolicyTurn };

/** What the proxy knows of the turn beyond the forwarder's input. */
export interface PolicyTurnContext {
  sessionId: string;
  /** Only main turns are the agent's answers worth learning from; side requests (titles, summaries) never go to the policy. */
  main: boolean;
  /** Called with the sampled turn just before its answer goes to the client, so the turn journal can keep its token ids. */
  onSampled?: (turn: PolicyTurn) => void;
}

/** The normal upstream: the proxy's UpstreamForwarder. */
export interface Forwarding {
  forward(input: ForwardInput, sink: ClientSink): Promise<ForwardResult>;
}

export class PolicyUpstream {
  constructor(
    private readonly fallback: Forwarding,
    private readonly options: PolicyUpstreamOptions,
  ) {}

  async forward(input: ForwardInput, turn: PolicyTurnContext, sink: ClientSink): Promise<PolicyForwardResult> {
    const state = turn.main ? this.options.current() : undefined;
    if (state === undefined) return this.fallback.forward(input, sink);
    const client = new AbortController();
    sink.onClose(() => client.abort());
    const started = performance.now();
    const result = await servePolicyTurn(
      {
        turnId: input.requestId,
        sessionId: turn.sessionId,
        clientFormat: input.clientFormat,
        body: input.body,
        stream: input.stream,
        ...(input.history ? { history: input.history } : {}),
      },
      {
        tokenizer: state.tokenizer,
        sampler: state.sampler,
        budgetMs: this.options.budgetMs,
        defaultMaxTokens: this.options.defaultMaxTokens,
        signal: client.signal,
        ...(this.options.sampling ? { sampling: this.options.sampling } : {}),
      },
    );
    const sampled = result.turn ? { policyTurn: result.turn } : {};
    if (result.kind === 'fallback') {
      if (result.reason === 'client_aborted') {
        return {
          status: null,
          outcome: 'client_aborted',
          error: 'client disconnected',
          upstream: null,
          attempts: 0,
          forwardedBody: null,
          response: null,
          firstByteMs: null,
          ...sampled,
        };
      }
      this.options.logger.warn(
        { request_id: input.requestId, reason: result.reason, ms: result.elapsedMs, policy: state.sampler.version },
        `the RL policy did not answer (${result.message}); the normal upstream serves this turn, not trainable`,
      );
      return { ...(await this.fallback.forward(input, sink)), ...sampled };
    }
    if (result.turn) turn.onSampled?.(result.turn);
    sendPolicyAnswer(sink, result.answer);
    return {
      status: result.answer.status,
      outcome: sink.closed ? 'client_aborted' : 'ok',
      error: null,
      upstream: policyTarget(state.sampler.version),
      attempts: 1,
      forwardedBody: null,
      // The record names the weights that answered (the client saw the model it asked for).
      response: { ...result.answer.assembled, model: state.sampler.version },
      firstByteMs: Math.round(performance.now() - started),
      ...sampled,
    };
  }
}

/** How a policy-served turn names its upstream in the turn record (`upstream_name` = `rl-policy`). */
function policyTarget(version: string): UpstreamTarget {
  return { name: 'rl-policy', baseUrl: `policy:${version}`, format: 'openai', apiKey: undefined, keySource: 'config', model: undefined };
}
