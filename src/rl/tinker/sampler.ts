import { RlBackendError } from '../../errors.js';
import type { PolicySampler, SampledSequence, SamplingParams } from '../types.js';
import type { TinkerSession } from './session.js';
import type { TinkerTransport } from './transport.js';
import { createSamplingSessionResponseSchema, modelInput, sampleResponseSchema, wireSamplingParams } from './wire.js';

/**
 * A sampler bound to one saved policy (`tinker://…/sampler_weights/…`): its own sampling session,
 * created on first use, with its own `seq_id` counter from 0. Saving newer weights makes a new
 * sampler and never touches this one, so a sample in flight finishes on the weights it began with.
 */
export class TinkerSampler implements PolicySampler {
  private samplingSession: Promise<string> | undefined;
  private nextSeqId = 0;

  constructor(
    private readonly transport: TinkerTransport,
    private readonly session: () => TinkerSession,
    readonly version: string,
  ) {}

  /** Opens the sampling session now (saveForSampler does, so the new sampler is ready when returned). */
  ready(signal?: AbortSignal): Promise<string> {
    if (this.samplingSession) return this.samplingSession;
    const opening = this.openSamplingSession(signal);
    this.samplingSession = opening;
    // a failed open is retried by the next call rather than remembered
    opening.catch(() => {
      if (this.samplingSession === opening) this.samplingSession = undefined;
    });
    return opening;
  }

  async sample(promptTokens: number[], params: SamplingParams, signal?: AbortSignal): Promise<SampledSequence> {
    if (promptTokens.length === 0) throw new RlBackendError('Cannot sample from an empty prompt.', { code: 'rl_empty_prompt', category: 'user' });
    const samplingSessionId = await this.ready(signal);
    const answer = await this.transport.submit(
      '/api/v1/asample',
      // a resubmission after 410 is a new request, with the next sequence id (as the SDK does)
      () => ({
        sampling_session_id: samplingSessionId,
        seq_id: this.nextSeqId++,
        num_samples: 1,
        prompt: modelInput(promptTokens),
        sampling_params: wireSamplingParams(params),
        prompt_logprobs: false,
        topk_prompt_logprobs: 0,
      }),
      { ...(signal ? { signal } : {}), headers: { 'X-Tinker-Sampling-Backpressure': '1' } },
    );
    const parsed = sampleResponseSchema.safeParse(answer);
    if (!parsed.success)
      throw new RlBackendError(`${this.transport.label} answered asample with an unexpected shape: ${parsed.error.message}`, { code: 'rl_bad_response' });
    const sequence = parsed.data.sequences[0]!;
    if (!sequence.logprobs || sequence.logprobs.length !== sequence.tokens.length) {
      throw new RlBackendError(
        `${this.transport.label} returned ${sequence.logprobs?.length ?? 'no'} logprobs for ${sequence.tokens.length} sampled tokens; training needs one per token.`,
        {
          code: 'rl_bad_response',
        },
      );
    }
    return { tokens: sequence.tokens, logprobs: sequence.logprobs, stopReason: sequence.stop_reason };
  }

  private async openSamplingSession(signal?: AbortSignal): Promise<string> {
    const session = this.session();
    const body = { session_id: session.id, sampling_session_seq_id: session.nextSamplingSessionSeqId(), model_path: this.version };
    const answer = createSamplingSessionResponseSchema.parse(await this.transport.post('/api/v1/create_sampling_session', body, signal ? { signal } : {}));
    return answer.sampling_session_id;
  }
}
