import { RlBackendError } from '../../errors.js';
import type { AdamParams, LossFunction, PolicySampler, RlBackend, StepMetrics, TrainingDatum } from '../types.js';
import { TinkerSampler } from './sampler.js';
import { TinkerSession, type SessionOptions } from './session.js';
import { TinkerTransport, type TransportOptions } from './transport.js';
import {
  createModelResponseSchema,
  forwardBackwardOutputSchema,
  loadWeightsResponseSchema,
  optimStepResponseSchema,
  saveWeightsForSamplerResponseSchema,
  saveWeightsResponseSchema,
  wireAdamParams,
  wireCrossEntropyDatum,
  wireDatum,
} from './wire.js';

export type TinkerBackendOptions = TransportOptions & SessionOptions & { loraSeed?: number };

/**
 * How long opening keeps trying to reach the service before it fails: its callers (the proxy's
 * engine, a team node) try again later by themselves, with a growing wait, and show why meanwhile,
 * rather than spend the transport's five minutes saying only that the backend is opening.
 */
const OPEN_PATIENCE_MS = 10_000;

/**
 * `RlBackend` over the Tinker JSON wire (Tinker itself, or MinT at its own URL with its own key).
 * Training requests take turns: each gets the next `seq_id` (from 1) and is submitted only after the
 * one before it resolved, so the service sees them in order and every result (loss, metrics, errors)
 * is read back, unlike MetaClaw's unawaited futures.
 */
export class TinkerBackend implements RlBackend {
  readonly kind: 'tinker' | 'mint';
  private readonly transport: TinkerTransport;
  private session: TinkerSession | undefined;
  private modelId: string | undefined;
  private seqId = 0;
  private turn: Promise<unknown> = Promise.resolve();
  /** aborted when the proxy stops: every request to the service in flight (or waiting its turn) fails at once */
  private readonly stopping = new AbortController();

  constructor(private readonly options: TinkerBackendOptions) {
    this.transport = new TinkerTransport(options);
    this.kind = options.kind;
  }

  async open(options: { baseModel: string; loraRank: number; resumeFrom?: string }): Promise<void> {
    if (this.session) throw new RlBackendError(`${this.transport.label} backend is already open.`, { code: 'rl_already_open' });
    const session = await TinkerSession.create(this.transport, this.options, this.stopping.signal, OPEN_PATIENCE_MS);
    this.session = session;
    try {
      const loraConfig = { rank: options.loraRank, ...(this.options.loraSeed === undefined ? {} : { seed: this.options.loraSeed }) };
      const body = { session_id: session.id, model_seq_id: session.nextModelSeqId(), base_model: options.baseModel, lora_config: loraConfig };
      const created = createModelResponseSchema.parse(await this.transport.submit('/api/v1/create_model', () => body, { signal: this.stopping.signal }));
      this.modelId = created.model_id;
      this.seqId = 0;
      if (options.resumeFrom) await this.loadState(options.resumeFrom);
    } catch (error) {
      await this.close();
      throw error;
    }
  }

  /** A session that samples saved weights only, with no model of its own: a node that serves the policy another node trains. */
  async openForSampling(): Promise<void> {
    if (this.session) throw new RlBackendError(`${this.transport.label} backend is already open.`, { code: 'rl_already_open' });
    this.session = await TinkerSession.create(this.transport, this.options, this.stopping.signal, OPEN_PATIENCE_MS);
  }

  async forwardBackward(data: TrainingDatum[], lossFn: LossFunction): Promise<StepMetrics> {
    if (data.length === 0) throw new RlBackendError('forward_backward needs at least one datum.', { code: 'rl_empty_batch', category: 'user' });
    const toWire = lossFn === 'cross_entropy' ? wireCrossEntropyDatum : wireDatum;
    const answer = await this.training('/api/v1/forward_backward', (modelId, seqId) => ({
      forward_backward_input: { data: data.map(toWire), loss_fn: lossFn },
      model_id: modelId,
      seq_id: seqId,
    }));
    const output = forwardBackwardOutputSchema.parse(answer);
    const loss = output.metrics['loss:sum'] ?? output.metrics.loss;
    if (loss === undefined)
      throw new RlBackendError(
        `${this.transport.label} reported no loss for forward_backward (metrics: ${Object.keys(output.metrics).join(', ') || 'none'}).`,
        { code: 'rl_bad_response' },
      );
    return { loss, metrics: output.metrics };
  }

  async optimStep(adam: AdamParams): Promise<void> {
    const answer = await this.training('/api/v1/optim_step', (modelId, seqId) => ({ adam_params: wireAdamParams(adam), model_id: modelId, seq_id: seqId }));
    optimStepResponseSchema.parse(answer);
  }

  async saveForSampler(name: string): Promise<PolicySampler> {
    const answer = await this.training('/api/v1/save_weights_for_sampler', (modelId, seqId) => ({ model_id: modelId, path: name, seq_id: seqId }));
    const saved = saveWeightsForSamplerResponseSchema.parse(answer);
    if (!saved.path)
      throw new RlBackendError(`${this.transport.label} saved sampler weights "${name}" without returning their path.`, { code: 'rl_bad_response' });
    const sampler = new TinkerSampler(this.transport, () => this.openSession(), saved.path);
    await sampler.ready(this.stopping.signal);
    return sampler;
  }

  samplerFor(path: string): PolicySampler {
    return new TinkerSampler(this.transport, () => this.openSession(), path);
  }

  async saveState(name: string): Promise<string> {
    const answer = await this.training('/api/v1/save_weights', (modelId, seqId) => ({ model_id: modelId, path: name, seq_id: seqId }));
    return saveWeightsResponseSchema.parse(answer).path;
  }

  /** Restores weights and optimizer state (a resume continues where training stopped). */
  async loadState(path: string): Promise<void> {
    const answer = await this.training('/api/v1/load_weights', (modelId, seqId) => ({ model_id: modelId, path, optimizer: true, seq_id: seqId }));
    loadWeightsResponseSchema.parse(answer);
  }

  /**
   * The proxy is stopping: the requests in flight (a step on a service that hangs or cannot be
   * reached, an opening) fail now with `reason` instead of holding the shutdown. A backend aborted
   * takes no more requests; a restart opens a new model from the last saved state, so nothing the
   * service held unsaved is needed.
   */
  abort(reason: string): void {
    this.stopping.abort(new RlBackendError(reason, { code: 'rl_stopping' }));
  }

  /** Lets the training request in flight finish (or fail, after `abort`), then stops the heartbeat. */
  async close(): Promise<void> {
    await this.turn.catch(() => undefined);
    this.session?.stop();
    this.session = undefined;
    this.modelId = undefined;
  }

  private openSession(): TinkerSession {
    if (!this.session) throw new RlBackendError(`${this.transport.label} backend is not open.`, { code: 'rl_not_open' });
    return this.session;
  }

  /** One training request in its turn: the next seq_id, kept on a resubmission after 410 (it was never run). */
  private training(route: string, makeBody: (modelId: string, seqId: number) => unknown): Promise<unknown> {
    const run = async (): Promise<unknown> => {
      this.stopping.signal.throwIfAborted();
      const modelId = this.modelId;
      if (!modelId) throw new RlBackendError(`${this.transport.label} backend is not open.`, { code: 'rl_not_open' });
      const seqId = ++this.seqId;
      const body = makeBody(modelId, seqId);
      let accepted = false;
      try {
        return await this.transport.submit(route, () => body, { signal: this.stopping.signal, onAccepted: () => (accepted = true) });
      } catch (error) {
        // a request the service never accepted did not use up its sequence id
        if (!accepted) this.seqId = seqId - 1;
        throw error;
      }
    };
    const result = this.turn.then(run, run);
    this.turn = result.catch(() => undefined);
    return result;
  }
}
