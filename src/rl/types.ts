/**
 * The shared vocabulary of the RL path (issue 14). Data flows:
 *   serving (`rl/policy/`)   renders the chat, samples from a `PolicySampler`, records a `PolicyTurn`
 *   buffer  (`rl/buffer/`)   keeps one `RlSample` per recorded main turn, with its skill generation
 *   judge   (`rl/judge/`)    scores a sample in {-1, 0, 1} once the next user turn (or session end) shows how it went
 *   training (`rl/train/`)   turns scored samples into advantages and `TrainingDatum`s, steps an `RlBackend`
 *   backends (`rl/tinker/`)  the Tinker JSON wire (also MinT), and a sampler per saved policy version
 *   scheduler (`scheduler/`) says when a training step may run
 * Every stage reads and writes through these types, so each can be built and tested on its own.
 */

/** Token ids and their logprobs exactly as the sampler returned them: never re-tokenized text. */
export interface SampledSequence {
  tokens: number[];
  /** one per token, natural log */
  logprobs: number[];
  stopReason: 'stop' | 'length';
}

export interface SamplingParams {
  maxTokens: number;
  temperature: number;
  topP?: number;
  /** token-id sequences that end the sample (the chat template's end-of-turn tokens) */
  stopTokens?: number[];
  seed?: number;
}

/** One saved policy version that can be sampled from; a new version does not disturb samples in flight. */
export interface PolicySampler {
  /** e.g. the backend's sampler path or `step-12`; recorded with every sample */
  readonly version: string;
  sample(promptTokens: number[], params: SamplingParams, signal?: AbortSignal): Promise<SampledSequence>;
}

/** What serving from the policy hands to the buffer for one main turn. */
export interface PolicyTurn {
  turnId: string;
  sessionId: string;
  promptTokens: number[];
  response: SampledSequence;
  policyVersion: string;
  /** false when the turn was served by the normal upstream (sampler down or too slow) */
  trainable: boolean;
}

/** A judge's verdict on one main turn: the majority of `votes`, or no reward at all. */
export type JudgeScore = -1 | 0 | 1;

/** One main turn in the training buffer. */
export interface RlSample {
  turnId: string;
  sessionId: string;
  /** the skill library's generation when the turn was served (support/query separation) */
  skillGeneration: number;
  policyVersion: string;
  promptTokens: number[];
  responseTokens: number[];
  responseLogprobs: number[];
  /** null until judged; stays null when the votes tie or the judge fails (no fake score) */
  reward: JudgeScore | null;
  /** teacher logprobs aligned to responseTokens (OPD), when computed */
  teacherLogprobs?: number[];
  createdAt: number;
}

/**
 * One datum in Tinker's shape: the model input is prompt + response without its last token, and
 * targets, logprobs and advantages are aligned to it (prompt positions carry zero advantage).
 */
export interface TrainingDatum {
  modelInput: number[];
  targetTokens: number[];
  logprobs: number[];
  advantages: number[];
}

export type LossFunction = 'importance_sampling' | 'ppo' | 'cispo' | 'cross_entropy';

/** Loss and metrics of one forward-backward pass, as the backend reported them (always awaited). */
export interface StepMetrics {
  loss: number;
  metrics: Record<string, number>;
}

export interface AdamParams {
  learningRate: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
}

/** A LoRA training run on a Tinker-compatible service. Every call resolves once the backend's future has. */
export interface RlBackend {
  readonly kind: 'tinker' | 'mint';
  /** creates (or resumes) the session and the LoRA model */
  open(options: { baseModel: string; loraRank: number; resumeFrom?: string }): Promise<void>;
  forwardBackward(data: TrainingDatum[], lossFn: LossFunction): Promise<StepMetrics>;
  optimStep(adam: AdamParams): Promise<void>;
  /** saves the current weights for sampling and returns a sampler for them (the hot swap) */
  saveForSampler(name: string): Promise<PolicySampler>;
  /** a sampler for weights saved earlier (rollback, restart) */
  samplerFor(path: string): PolicySampler;
  /** full training state (weights + optimizer), for resume; returns the backend's path */
  saveState(name: string): Promise<string>;
  loadState(path: string): Promise<void>;
  close(): Promise<void>;
}

/** When training may run: the scheduler's answer, read before each step and while it runs. */
export interface TrainingWindow {
  /** true while a window is open now */
  isOpen(): boolean;
  /** why (or why not), for status output */
  describe(): string;
}
