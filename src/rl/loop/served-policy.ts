import { z } from 'zod';
import type { StateStore } from '../../store/index.js';
import type { PolicySampler } from '../types.js';

/** The state key of the served-policy record (SQLite's state table, and the team store's). */
export const SERVED_POLICY_KEY = 'rl.served_policy';

/** Which saved weights serve the agent: the step they came from and the backend's sampler path. */
export interface ServedPolicyRecord {
  step: number;
  samplerPath: string;
  /** true when chosen by `rl rollback`: later steps still train, but do not replace it until `rl rollback --latest` */
  pinned: boolean;
}

/**
 * The hot-swap point. A request takes `current()` once, when it starts, and samples from that
 * sampler to the end; installing a new one after a training step changes what the next request
 * gets and never what a running one gets. The choice is persisted, so a restart serves the same
 * weights.
 */
export class ServedPolicy {
  private sampler: PolicySampler | undefined;
  private record: ServedPolicyRecord | undefined;

  constructor(
    private readonly state: StateStore,
    private readonly samplerFor: (path: string) => PolicySampler,
  ) {
    this.record = parseServedPolicy(state.get(SERVED_POLICY_KEY));
    if (this.record) this.sampler = samplerFor(this.record.samplerPath);
  }

  current(): PolicySampler | undefined {
    return this.sampler;
  }

  describe(): ServedPolicyRecord | undefined {
    return this.record ? { ...this.record } : undefined;
  }

  /** After a training step: serve its weights, unless an earlier policy was pinned by a rollback. */
  installFromStep(step: number, sampler: PolicySampler, samplerPath: string): boolean {
    if (this.record?.pinned) return false;
    this.set({ step, samplerPath, pinned: false }, sampler);
    return true;
  }

  /** A new training run: its fresh LoRA serves as its step 0, whatever served (or was pinned) before. */
  startOver(sampler: PolicySampler, samplerPath: string): void {
    this.set({ step: 0, samplerPath, pinned: false }, sampler);
  }

  /** `rl rollback`: serve an earlier step's weights, or the run's step 0 (pinned), or the latest again (`pinned: false`). */
  serve(step: number, samplerPath: string, pinned: boolean): void {
    this.set({ step, samplerPath, pinned }, this.samplerFor(samplerPath));
  }

  private set(record: ServedPolicyRecord, sampler: PolicySampler): void {
    this.state.set(SERVED_POLICY_KEY, JSON.stringify(record));
    this.record = record;
    this.sampler = sampler;
  }
}

const recordSchema = z.object({ step: z.number().int().nonnegative(), samplerPath: z.string().min(1), pinned: z.boolean().default(false) });

/** The stored record, or undefined when there is none or it is damaged. */
export function parseServedPolicy(raw: string | undefined): ServedPolicyRecord | undefined {
  if (!raw) return undefined;
  try {
    const parsed = recordSchema.safeParse(JSON.parse(raw));
    // a damaged record serves nothing from the policy until the next step installs one
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
