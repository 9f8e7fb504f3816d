import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Socket } from 'node:net';
import { z } from 'zod';
import { mulberry32 } from './random.js';

/**
 * A local stand-in for a Tinker-compatible training service, speaking the JSON wire of SDK 0.6.0
 * STRICTLY (request shapes from thinking-machines-lab/tinker `bd639de` `src/tinker/types/*.py`:
 * every request type is a pydantic `StrictBase`, extra="forbid"), and learning for real with a tiny
 * policy of its own: a bigram softmax table over a small vocabulary (the "LoRA" is the whole table),
 * exact gradients of the documented losses (tinker-docs "Loss Functions": cross_entropy,
 * importance_sampling, ppo, cispo) and Adam with bias correction.
 *
 * It refuses: a missing or wrong X-API-Key, unknown fields, unknown `loss_fn_inputs` keys, wrong
 * dtypes, ragged lengths, tokens outside the vocabulary, non-finite floats, training seq ids that are
 * not exactly the next one, duplicate sampling seq ids, and any request on a session whose heartbeat
 * stopped. On cue it answers submissions with 408/429/5xx and retrieve_future with try_again, 408,
 * 410 (the future is dropped and, for training, the request un-run so it may be sent again), 429,
 * 5xx, or a failure with a category.
 */

// ---- the tiny policy -------------------------------------------------------------------------

export class BigramPolicy {
  constructor(
    readonly vocabSize: number,
    readonly weights: Float64Array,
  ) {}

  static seeded(vocabSize: number, seed: number): BigramPolicy {
    const random = mulberry32(seed);
    const weights = new Float64Array(vocabSize * vocabSize);
    for (let index = 0; index < weights.length; index += 1) weights[index] = (random() - 0.5) * 2;
    return new BigramPolicy(vocabSize, weights);
  }

  clone(): BigramPolicy {
    return new BigramPolicy(this.vocabSize, Float64Array.from(this.weights));
  }

  /** log-softmax of the row for context token `previous`, at a temperature */
  logProbabilities(previous: number, temperature = 1): number[] {
    const row = Array.from(this.weights.subarray(previous * this.vocabSize, (previous + 1) * this.vocabSize), (value) => value / temperature);
    const max = Math.max(...row);
    const logSum = max + Math.log(row.reduce((sum, value) => sum + Math.exp(value - max), 0));
    return row.map((value) => value - logSum);
  }

  /** logprob of each target given the input token at the same position (Tinker's next-token alignment) */
  forward(inputTokens: number[], targetTokens: number[]): number[] {
    return inputTokens.map((input, position) => this.logProbabilities(input)[targetTokens[position]!]!);
  }
}

function seedOf(text: string): number {
  let hash = 2166136261;
  for (const character of text) hash = Math.imul(hash ^ character.charCodeAt(0), 16777619);
  return hash >>> 0;
}

// ---- wire schemas (SDK 0.6.0 request types; StrictBase = no extra fields) ----------------------

const KEY_DTYPES: Record<string, 'int64' | 'float32'> = {
  target_tokens: 'int64',
  weights: 'float32',
  advantages: 'float32',
  logprobs: 'float32',
  clip_low_threshold: 'float32',
  clip_high_threshold: 'float32',
};
const LOSS_INPUTS: Record<string, string[]> = {
  cross_entropy: ['target_tokens', 'weights'],
  importance_sampling: ['target_tokens', 'logprobs', 'advantages'],
  ppo: ['target_tokens', 'logprobs', 'advantages'],
  cispo: ['target_tokens', 'logprobs', 'advantages'],
};

const tensorData = z.strictObject({ data: z.array(z.number()), dtype: z.enum(['int64', 'float32']), shape: z.array(z.number().int()).nullish() });
const modelInput = z.strictObject({ chunks: z.array(z.strictObject({ tokens: z.array(z.number().int()), type: z.literal('encoded_text').optional() })) });
const datum = z.strictObject({ loss_fn_inputs: z.record(z.string(), tensorData), model_input: modelInput });

const schemas = {
  '/api/v1/create_session': z.strictObject({
    tags: z.array(z.string()),
    user_metadata: z.record(z.string(), z.unknown()).nullable(),
    sdk_version: z.string(),
    type: z.literal('create_session').optional(),
  }),
  '/api/v1/session_heartbeat': z.strictObject({ session_id: z.string(), type: z.literal('session_heartbeat').optional() }),
  '/api/v1/create_model': z.strictObject({
    session_id: z.string(),
    model_seq_id: z.number().int(),
    base_model: z.string(),
    user_metadata: z.record(z.string(), z.unknown()).nullish(),
    lora_config: z
      .strictObject({
        rank: z.number().int().positive(),
        seed: z.number().int().nullish(),
        train_unembed: z.boolean().optional(),
        train_mlp: z.boolean().optional(),
        train_attn: z.boolean().optional(),
      })
      .nullish(),
    type: z.literal('create_model').optional(),
  }),
  '/api/v1/forward_backward': z.strictObject({
    forward_backward_input: z.strictObject({
      data: z.array(datum),
      loss_fn: z.enum(['cross_entropy', 'importance_sampling', 'ppo', 'cispo', 'dro']),
      loss_fn_config: z.record(z.string(), z.number()).nullish(),
    }),
    model_id: z.string(),
    seq_id: z.number().int().nullish(),
  }),
  '/api/v1/optim_step': z.strictObject({
    adam_params: z.strictObject({
      learning_rate: z.number().optional(),
      beta1: z.number().optional(),
      beta2: z.number().optional(),
      eps: z.number().optional(),
    }),
    model_id: z.string(),
    seq_id: z.number().int().nullish(),
    type: z.literal('optim_step').optional(),
  }),
  '/api/v1/save_weights_for_sampler': z.strictObject({
    model_id: z.string(),
    path: z.string().nullish(),
    sampling_session_seq_id: z.number().int().nullish(),
    seq_id: z.number().int().nullish(),
    type: z.literal('save_weights_for_sampler').optional(),
  }),
  '/api/v1/save_weights': z.strictObject({
    model_id: z.string(),
    path: z.string().nullish(),
    seq_id: z.number().int().nullish(),
    type: z.literal('save_weights').optional(),
  }),
  '/api/v1/load_weights': z.strictObject({
    model_id: z.string(),
    path: z.string(),
    optimizer: z.boolean(),
    seq_id: z.number().int().nullish(),
    type: z.literal('load_weights').optional(),
  }),
  '/api/v1/create_sampling_session': z.strictObject({
    session_id: z.string(),
    sampling_session_seq_id: z.number().int(),
    base_model: z.string().nullish(),
    model_path: z.string().nullish(),
    type: z.literal('create_sampling_session').optional(),
  }),
  '/api/v1/asample': z.strictObject({
    num_samples: z.number().int().positive().optional(),
    prompt: modelInput,
    sampling_params: z.strictObject({
      max_tokens: z.number().int().positive().nullish(),
      seed: z.number().int().nullish(),
      stop: z.union([z.string(), z.array(z.string()), z.array(z.number().int())]).nullish(),
      temperature: z.number().positive().optional(),
      top_k: z.number().int().optional(),
      top_p: z.number().positive().max(1).optional(),
    }),
    base_model: z.string().nullish(),
    model_path: z.string().nullish(),
    sampling_session_id: z.string().nullish(),
    seq_id: z.number().int().nullish(),
    prompt_logprobs: z.boolean().nullish(),
    topk_prompt_logprobs: z.number().int().optional(),
    type: z.literal('sample').optional(),
  }),
  '/api/v1/retrieve_future': z.strictObject({ request_id: z.string() }),
} as const;

type Route = keyof typeof schemas;

// ---- state ------------------------------------------------------------------------------------

interface Session {
  id: string;
  lastBeat: number;
  nextModelSeqId: number;
  samplingSeqIds: Set<number>;
}

interface Model {
  id: string;
  session: Session;
  baseModel: string;
  policy: BigramPolicy;
  gradient: Float64Array;
  adamFirst: Float64Array;
  adamSecond: Float64Array;
  adamStep: number;
  lastSeqId: number;
}

interface SamplingSession {
  id: string;
  session: Session;
  policy: BigramPolicy;
  seqIds: Set<number>;
  source: string;
}

interface SavedWeights {
  policy: BigramPolicy;
  optimizer?: { first: Float64Array; second: Float64Array; step: number };
}

interface Future {
  result: unknown;
  /** un-runs a training request (410: it may be sent again with the same seq id) */
  undo?: () => void;
  /** restores weights after a cued failure; the seq id stays used */
  rollback?: () => void;
}

export type RetrieveCue = 'try_again' | 408 | 410 | 429 | 500 | 503 | { error: string; category: 'user' | 'server' | 'unknown' };

export interface RecordedCall {
  route: string;
  headers: IncomingHttpHeaders;
  body: unknown;
  status: number;
}

class WireError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface TinkerDoubleOptions {
  apiKey?: string;
  vocabSize?: number;
  supportedModels?: string[];
  /** a session whose last heartbeat is older than this is gone */
  heartbeatTimeoutMs?: number;
}

export class TinkerDouble {
  readonly apiKey: string;
  readonly vocabSize: number;
  readonly calls: RecordedCall[] = [];
  private readonly supportedModels: string[];
  private readonly heartbeatTimeoutMs: number;
  private readonly sessions = new Map<string, Session>();
  private readonly models = new Map<string, Model>();
  private readonly samplingSessions = new Map<string, SamplingSession>();
  private readonly saved = new Map<string, SavedWeights>();
  private readonly futures = new Map<string, Future>();
  private readonly submitCues = new Map<string, number[]>();
  private readonly retrieveCues: RetrieveCue[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly hangs = new Map<string, number>();
  /** requests held without an answer (`hangSubmit`), by route, and how many the client gave up on */
  readonly held: Array<{ route: string; closedByClient: boolean }> = [];
  private counter = 0;
  private sampleRandom = mulberry32(7);
  url = '';

  private constructor(
    private readonly server: http.Server,
    options: TinkerDoubleOptions,
  ) {
    this.apiKey = options.apiKey ?? 'tml-double-key';
    this.vocabSize = options.vocabSize ?? 12;
    this.supportedModels = options.supportedModels ?? ['tiny/bigram'];
    this.heartbeatTimeoutMs = options.heartbeatTimeoutMs ?? 30_000;
  }

  static async start(options: TinkerDoubleOptions = {}): Promise<TinkerDouble> {
    const holder: { double?: TinkerDouble } = {};
    const server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const path = (request.url ?? '/').split('?')[0]!;
        if (holder.double!.hold(path, response)) return;
        const { status, body } = holder.double!.handle(
          request.method ?? 'GET',
          (request.url ?? '/').split('?')[0]!,
          request.headers,
          Buffer.concat(chunks).toString('utf8'),
        );
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(body));
      });
    });
    const double = new TinkerDouble(server, options);
    holder.double = double;
    server.on('connection', (socket) => {
      double.sockets.add(socket);
      socket.on('close', () => double.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    double.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return double;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** the next submissions to `route` answer these statuses, unprocessed */
  cueSubmit(route: string, ...statuses: number[]): void {
    this.submitCues.set(route, [...(this.submitCues.get(route) ?? []), ...statuses]);
  }

  /** drops the statuses still cued for `route`: its next submissions are answered as usual */
  uncueSubmit(route: string): void {
    this.submitCues.delete(route);
  }

  /** the next `count` requests to `route` get no answer at all (a service that hangs): held until the client gives up or the double closes */
  hangSubmit(route: string, count = 1): void {
    this.hangs.set(route, (this.hangs.get(route) ?? 0) + count);
  }

  private hold(route: string, response: http.ServerResponse): boolean {
    const left = this.hangs.get(route) ?? 0;
    if (left <= 0) return false;
    this.hangs.set(route, left - 1);
    const held = { route, closedByClient: false };
    this.held.push(held);
    response.on('close', () => {
      if (!response.writableEnded) held.closedByClient = true;
    });
    return true;
  }

  /** the next retrieve_future calls answer these outcomes, in order */
  cueRetrieve(...outcomes: RetrieveCue[]): void {
    this.retrieveCues.push(...outcomes);
  }

  callsTo(route: string): RecordedCall[] {
    return this.calls.filter((call) => call.route === route);
  }

  /** the live weights of a model, or saved weights by path */
  policyOf(modelIdOrPath: string): BigramPolicy {
    const policy = this.models.get(modelIdOrPath)?.policy ?? this.saved.get(modelIdOrPath)?.policy;
    if (!policy) throw new Error(`no model or saved weights ${modelIdOrPath}`);
    return policy;
  }

  /** logprobs of `response` after `prompt` under a policy: the double's own forward pass */
  responseLogprobs(modelIdOrPath: string, prompt: number[], response: number[]): number[] {
    const all = [...prompt, ...response];
    return this.policyOf(modelIdOrPath).forward(all.slice(prompt.length - 1, -1), response);
  }

  modelIds(): string[] {
    return [...this.models.keys()];
  }

  // ---- request handling -----------------------------------------------------------------------

  private handle(method: string, path: string, headers: IncomingHttpHeaders, raw: string): { status: number; body: unknown } {
    let status = 200;
    let body: unknown;
    let parsed: unknown;
    try {
      // Echoing the refused key, as some services do: the client must not log or show it.
      if (headers['x-api-key'] !== this.apiKey)
        throw new WireError(401, headers['x-api-key'] ? `invalid API key: ${String(headers['x-api-key'])}` : 'missing X-API-Key header');
      if (method !== 'POST' || !(path in schemas)) throw new WireError(404, `no route ${method} ${path}`);
      const route = path as Route;
      try {
        parsed = JSON.parse(raw);
      } catch {
        throw new WireError(400, 'body is not JSON');
      }
      const cued = this.submitCues.get(route)?.shift();
      if (cued !== undefined) throw new WireError(cued, `cued ${cued}`);
      const checked = schemas[route].safeParse(parsed);
      if (!checked.success)
        throw new WireError(400, `invalid ${route} body: ${checked.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ')}`);
      body = this.dispatch(route, checked.data);
    } catch (error) {
      if (!(error instanceof WireError)) throw error;
      status = error.status;
      body = error.status === 408 ? { detail: error.message, queue_state: 'active' } : { detail: error.message };
    }
    this.calls.push({ route: path, headers, body: parsed, status });
    return { status, body };
  }

  private dispatch(route: Route, body: any): unknown {
    switch (route) {
      case '/api/v1/create_session':
        return this.createSession();
      case '/api/v1/session_heartbeat':
        this.liveSession(body.session_id).lastBeat = Date.now();
        return { type: 'session_heartbeat' };
      case '/api/v1/create_model':
        return this.createModel(body);
      case '/api/v1/create_sampling_session':
        return this.createSamplingSession(body);
      case '/api/v1/retrieve_future':
        return this.retrieve(body.request_id);
      case '/api/v1/asample':
        return this.future(this.sample(body));
      default:
        return this.training(route, body);
    }
  }

  private nextId(prefix: string): string {
    this.counter += 1;
    return `${prefix}-${this.counter}`;
  }

  private future(result: unknown, extra: Omit<Future, 'result'> = {}): { request_id: string } {
    const requestId = this.nextId('req');
    this.futures.set(requestId, { result, ...extra });
    return { request_id: requestId };
  }

  private failed(error: string, category: 'user' | 'server' | 'unknown' = 'user'): unknown {
    return { error, category };
  }

  private liveSession(sessionId: string): Session {
    const session = this.sessions.get(sessionId);
    if (!session) throw new WireError(404, `unknown session ${sessionId}`);
    if (Date.now() - session.lastBeat > this.heartbeatTimeoutMs)
      throw new WireError(400, `session ${sessionId} expired: no heartbeat for ${this.heartbeatTimeoutMs} ms`);
    return session;
  }

  private createSession(): unknown {
    const session: Session = { id: this.nextId('session'), lastBeat: Date.now(), nextModelSeqId: 0, samplingSeqIds: new Set() };
    this.sessions.set(session.id, session);
    return { type: 'create_session', session_id: session.id };
  }

  private createModel(body: {
    session_id: string;
    model_seq_id: number;
    base_model: string;
    lora_config?: { rank: number; seed?: number | null } | null;
  }): unknown {
    const session = this.liveSession(body.session_id);
    if (body.model_seq_id !== session.nextModelSeqId)
      throw new WireError(400, `model_seq_id ${body.model_seq_id} out of order (expected ${session.nextModelSeqId})`);
    session.nextModelSeqId += 1;
    if (!this.supportedModels.includes(body.base_model)) return this.future(this.failed(`base model ${body.base_model} is not supported`));
    const size = this.vocabSize * this.vocabSize;
    const model: Model = {
      id: this.nextId('model'),
      session,
      baseModel: body.base_model,
      // LoRA starts at zero, so a new model is exactly its base model
      policy: BigramPolicy.seeded(this.vocabSize, seedOf(body.base_model)),
      gradient: new Float64Array(size),
      adamFirst: new Float64Array(size),
      adamSecond: new Float64Array(size),
      adamStep: 0,
      lastSeqId: 0,
    };
    this.models.set(model.id, model);
    return this.future({ type: 'create_model', model_id: model.id });
  }

  private createSamplingSession(body: {
    session_id: string;
    sampling_session_seq_id: number;
    base_model?: string | null;
    model_path?: string | null;
  }): unknown {
    const session = this.liveSession(body.session_id);
    if (session.samplingSeqIds.has(body.sampling_session_seq_id)) throw new WireError(400, `duplicate sampling_session_seq_id ${body.sampling_session_seq_id}`);
    session.samplingSeqIds.add(body.sampling_session_seq_id);
    let policy: BigramPolicy;
    if (body.model_path) {
      const saved = this.saved.get(body.model_path);
      if (!saved || !body.model_path.includes('/sampler_weights/')) throw new WireError(400, `no sampler weights at ${body.model_path}`);
      policy = saved.policy.clone();
    } else if (body.base_model && this.supportedModels.includes(body.base_model)) {
      policy = BigramPolicy.seeded(this.vocabSize, seedOf(body.base_model));
    } else {
      throw new WireError(400, 'create_sampling_session needs model_path or a supported base_model');
    }
    return { type: 'create_sampling_session', sampling_session_id: this.openSampling(session, policy, body.model_path ?? body.base_model ?? '') };
  }

  private openSampling(session: Session, policy: BigramPolicy, source: string): string {
    const id = this.nextId('sampling');
    this.samplingSessions.set(id, { id, session, policy, seqIds: new Set(), source });
    return id;
  }

  private retrieve(requestId: string): unknown {
    const cue = this.retrieveCues.shift();
    const future = this.futures.get(requestId);
    if (!future) throw new WireError(404, `unknown request_id ${requestId}`);
    if (cue === 'try_again') return { type: 'try_again', request_id: requestId, queue_state: 'active' };
    if (cue === 408) throw new WireError(408, 'still running');
    if (cue === 410) {
      this.futures.delete(requestId);
      future.undo?.();
      throw new WireError(410, `future ${requestId} expired`);
    }
    if (typeof cue === 'number') throw new WireError(cue, `cued ${cue}`);
    if (cue) {
      this.futures.delete(requestId);
      future.rollback?.();
      return { error: cue.error, category: cue.category };
    }
    this.futures.delete(requestId);
    return future.result;
  }

  // ---- training -------------------------------------------------------------------------------

  private training(route: Route, body: { model_id: string; seq_id?: number | null } & Record<string, any>): unknown {
    const model = this.models.get(body.model_id);
    if (!model) throw new WireError(404, `unknown model ${body.model_id}`);
    this.liveSession(model.session.id);
    if (typeof body.seq_id !== 'number') throw new WireError(400, 'seq_id is required');
    if (body.seq_id !== model.lastSeqId + 1) {
      throw new WireError(
        400,
        body.seq_id <= model.lastSeqId ? `duplicate seq_id ${body.seq_id}` : `seq_id ${body.seq_id} out of order (expected ${model.lastSeqId + 1})`,
      );
    }
    const before = this.snapshot(model);
    const result = this.runTraining(route, model, body);
    model.lastSeqId = body.seq_id;
    const restore = (): void => {
      model.policy = before.policy;
      model.gradient = before.gradient;
      model.adamFirst = before.adamFirst;
      model.adamSecond = before.adamSecond;
      model.adamStep = before.adamStep;
    };
    const seqId = body.seq_id;
    return this.future(result, {
      rollback: restore,
      undo: () => {
        if (model.lastSeqId !== seqId) throw new WireError(500, 'double: only the latest training request can be un-run');
        restore();
        model.lastSeqId = seqId - 1;
      },
    });
  }

  private snapshot(model: Model): Pick<Model, 'policy' | 'gradient' | 'adamFirst' | 'adamSecond' | 'adamStep'> {
    return {
      policy: model.policy.clone(),
      gradient: Float64Array.from(model.gradient),
      adamFirst: Float64Array.from(model.adamFirst),
      adamSecond: Float64Array.from(model.adamSecond),
      adamStep: model.adamStep,
    };
  }

  private runTraining(route: Route, model: Model, body: Record<string, any>): unknown {
    switch (route) {
      case '/api/v1/forward_backward':
        return this.forwardBackward(model, body.forward_backward_input);
      case '/api/v1/optim_step':
        return this.optimStep(model, body.adam_params);
      case '/api/v1/save_weights_for_sampler': {
        if (body.path) {
          const path = `tinker://${model.id}/sampler_weights/${body.path}`;
          this.saved.set(path, { policy: model.policy.clone() });
          return { type: 'save_weights_for_sampler', path };
        }
        if (typeof body.sampling_session_seq_id !== 'number') throw new WireError(400, 'save_weights_for_sampler needs path or sampling_session_seq_id');
        if (model.session.samplingSeqIds.has(body.sampling_session_seq_id))
          throw new WireError(400, `duplicate sampling_session_seq_id ${body.sampling_session_seq_id}`);
        model.session.samplingSeqIds.add(body.sampling_session_seq_id);
        return { type: 'save_weights_for_sampler', sampling_session_id: this.openSampling(model.session, model.policy.clone(), `${model.id}:ephemeral`) };
      }
      case '/api/v1/save_weights': {
        const path = `tinker://${model.id}/weights/${body.path ?? this.nextId('state')}`;
        this.saved.set(path, {
          policy: model.policy.clone(),
          optimizer: { first: Float64Array.from(model.adamFirst), second: Float64Array.from(model.adamSecond), step: model.adamStep },
        });
        return { type: 'save_weights', path };
      }
      case '/api/v1/load_weights': {
        const saved = this.saved.get(body.path);
        if (!saved?.optimizer) return this.failed(`no training state at ${body.path}`);
        model.policy = saved.policy.clone();
        model.gradient.fill(0);
        const size = model.gradient.length;
        model.adamFirst = body.optimizer ? Float64Array.from(saved.optimizer.first) : new Float64Array(size);
        model.adamSecond = body.optimizer ? Float64Array.from(saved.optimizer.second) : new Float64Array(size);
        model.adamStep = body.optimizer ? saved.optimizer.step : 0;
        return { type: 'load_weights', path: body.path };
      }
      default:
        throw new WireError(404, `no route ${route}`);
    }
  }

  private forwardBackward(model: Model, input: { data: z.infer<typeof datum>[]; loss_fn: string; loss_fn_config?: Record<string, number> | null }): unknown {
    const required = LOSS_INPUTS[input.loss_fn];
    if (!required) return this.failed(`loss_fn ${input.loss_fn} is not supported by this server`);
    if (input.data.length === 0) throw new WireError(400, 'forward_backward needs data');
    const vocab = this.vocabSize;
    const clipLow = input.loss_fn_config?.clip_low_threshold ?? 0.8;
    const clipHigh = input.loss_fn_config?.clip_high_threshold ?? 1.2;
    let lossSum = 0;
    const outputs: unknown[] = [];
    for (const [index, item] of input.data.entries()) {
      const tokens = item.model_input.chunks.flatMap((chunk) => chunk.tokens);
      const length = tokens.length;
      if (length === 0) throw new WireError(400, `data[${index}]: empty model_input`);
      const inputs: Record<string, number[]> = {};
      for (const [key, tensor] of Object.entries(item.loss_fn_inputs)) {
        const dtype = KEY_DTYPES[key];
        if (!dtype) throw new WireError(400, `data[${index}]: unknown loss_fn_inputs key "${key}"`);
        if (tensor.dtype !== dtype) throw new WireError(400, `data[${index}].${key}: dtype ${tensor.dtype}, expected ${dtype}`);
        if (tensor.data.length !== length || (tensor.shape && (tensor.shape.length !== 1 || tensor.shape[0] !== length))) {
          throw new WireError(
            400,
            `data[${index}].${key}: length ${tensor.data.length} shape ${JSON.stringify(tensor.shape)} does not match model_input length ${length}`,
          );
        }
        if (tensor.data.some((value) => !Number.isFinite(value))) throw new WireError(400, `data[${index}].${key}: non-finite value`);
        if (dtype === 'int64' && tensor.data.some((value) => !Number.isInteger(value))) throw new WireError(400, `data[${index}].${key}: non-integer int64`);
        inputs[key] = tensor.data;
      }
      for (const key of required) if (!inputs[key]) throw new WireError(400, `data[${index}]: ${input.loss_fn} needs loss_fn_inputs.${key}`);
      const targets = inputs.target_tokens!;
      for (const token of [...tokens, ...targets])
        if (token < 0 || token >= vocab) throw new WireError(400, `data[${index}]: token ${token} outside the vocabulary of ${vocab}`);

      const logprobs: number[] = [];
      for (let position = 0; position < length; position += 1) {
        const previous = tokens[position]!;
        const target = targets[position]!;
        const row = model.policy.logProbabilities(previous);
        const logprob = row[target]!;
        logprobs.push(logprob);
        // d(loss)/d(logprob of the target) for each documented loss
        let slope: number;
        if (input.loss_fn === 'cross_entropy') {
          const weight = inputs.weights![position]!;
          lossSum += -weight * logprob;
          slope = -weight;
        } else {
          const advantage = inputs.advantages![position]!;
          const ratio = Math.exp(logprob - inputs.logprobs![position]!);
          const clipped = Math.min(Math.max(ratio, clipLow), clipHigh);
          if (input.loss_fn === 'importance_sampling') {
            lossSum += -ratio * advantage;
            slope = -ratio * advantage;
          } else if (input.loss_fn === 'ppo') {
            const unclippedObjective = ratio * advantage;
            const clippedObjective = clipped * advantage;
            lossSum += -Math.min(unclippedObjective, clippedObjective);
            slope = unclippedObjective <= clippedObjective ? -ratio * advantage : 0;
          } else {
            lossSum += -clipped * logprob * advantage;
            slope = -clipped * advantage;
          }
        }
        if (slope === 0) continue;
        // d(logprob of target)/d(logit k) = [k = target] - p_k
        for (let next = 0; next < vocab; next += 1) {
          model.gradient[previous * vocab + next]! += slope * ((next === target ? 1 : 0) - Math.exp(row[next]!));
        }
      }
      outputs.push({ logprobs: { data: logprobs, dtype: 'float32', shape: [length] } });
    }
    return { loss_fn_output_type: 'TensorData', loss_fn_outputs: outputs, metrics: { 'loss:sum': lossSum } };
  }

  private optimStep(model: Model, adam: { learning_rate?: number; beta1?: number; beta2?: number; eps?: number }): unknown {
    const learningRate = adam.learning_rate ?? 1e-4;
    const beta1 = adam.beta1 ?? 0.9;
    const beta2 = adam.beta2 ?? 0.95;
    const eps = adam.eps ?? 1e-12;
    model.adamStep += 1;
    const correction1 = 1 - beta1 ** model.adamStep;
    const correction2 = 1 - beta2 ** model.adamStep;
    let gradientNorm = 0;
    for (let index = 0; index < model.gradient.length; index += 1) {
      const gradient = model.gradient[index]!;
      gradientNorm += gradient * gradient;
      model.adamFirst[index] = beta1 * model.adamFirst[index]! + (1 - beta1) * gradient;
      model.adamSecond[index] = beta2 * model.adamSecond[index]! + (1 - beta2) * gradient * gradient;
      const update = model.adamFirst[index]! / correction1 / (Math.sqrt(model.adamSecond[index]! / correction2) + eps);
      model.policy.weights[index]! -= learningRate * update;
    }
    model.gradient.fill(0);
    return { metrics: { grad_norm: Math.sqrt(gradientNorm) } };
  }

  // ---- sampling -------------------------------------------------------------------------------

  private sample(body: {
    num_samples?: number;
    prompt: z.infer<typeof modelInput>;
    sampling_params: {
      max_tokens?: number | null;
      seed?: number | null;
      stop?: string | string[] | number[] | null;
      temperature?: number;
      top_k?: number;
      top_p?: number;
    };
    sampling_session_id?: string | null;
    seq_id?: number | null;
  }): unknown {
    if (!body.sampling_session_id) throw new WireError(400, 'this server samples only through a sampling session');
    const sampling = this.samplingSessions.get(body.sampling_session_id);
    if (!sampling) throw new WireError(404, `unknown sampling session ${body.sampling_session_id}`);
    this.liveSession(sampling.session.id);
    if (typeof body.seq_id !== 'number') throw new WireError(400, 'seq_id is required with sampling_session_id');
    if (sampling.seqIds.has(body.seq_id)) throw new WireError(400, `duplicate seq_id ${body.seq_id} in sampling session ${sampling.id}`);
    sampling.seqIds.add(body.seq_id);
    const prompt = body.prompt.chunks.flatMap((chunk) => chunk.tokens);
    if (prompt.length === 0) throw new WireError(400, 'empty prompt');
    if (prompt.some((token) => token < 0 || token >= this.vocabSize)) throw new WireError(400, 'prompt token outside the vocabulary');
    const params = body.sampling_params;
    const stop = Array.isArray(params.stop) && params.stop.every((value) => typeof value === 'number') ? new Set(params.stop) : new Set<number>();
    const random = params.seed === undefined || params.seed === null ? this.sampleRandom : mulberry32(params.seed);
    const temperature = params.temperature ?? 1;
    const sequences = [];
    for (let sampleIndex = 0; sampleIndex < (body.num_samples ?? 1); sampleIndex += 1) {
      const tokens: number[] = [];
      const logprobs: number[] = [];
      let previous = prompt.at(-1)!;
      let stopReason: 'stop' | 'length' = 'length';
      for (let step = 0; step < (params.max_tokens ?? 16); step += 1) {
        const row = sampling.policy.logProbabilities(previous, temperature);
        let draw = random();
        let token = row.length - 1;
        for (let candidate = 0; candidate < row.length; candidate += 1) {
          draw -= Math.exp(row[candidate]!);
          if (draw <= 0) {
            token = candidate;
            break;
          }
        }
        tokens.push(token);
        logprobs.push(row[token]!);
        previous = token;
        if (stop.has(token)) {
          stopReason = 'stop';
          break;
        }
      }
      sequences.push({ tokens, logprobs, stop_reason: stopReason });
    }
    return { type: 'sample', sequences };
  }
}
