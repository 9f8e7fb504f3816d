import type { PolicySampler } from '../types.js';
import type { PolicyInstaller, ServedPolicyState } from './ports.js';
import type { ServedPolicyRecord } from './served-policy.js';

/**
 * The served policy when several proxies serve one policy (the nodes of a team store): the record
 * lives in the shared store, and each node keeps its own sampler for it. `refresh` reads the record
 * again and swaps the sampler when the trainer (or a rollback on any node) moved it; as with
 * `ServedPolicy`, a request takes `current()` once, so a swap never changes a turn in flight.
 */
export class SharedServedPolicy implements PolicyInstaller {
  private sampler: PolicySampler | undefined;
  private record: ServedPolicyRecord | undefined;

  constructor(
    private readonly state: ServedPolicyState,
    private readonly samplerFor: (path: string) => PolicySampler,
  ) {}

  current(): PolicySampler | undefined {
    return this.sampler;
  }

  describe(): ServedPolicyRecord | undefined {
    return this.record ? { ...this.record } : undefined;
  }

  /** Reads the shared record; true when this node now serves other weights than before. */
  async refresh(): Promise<boolean> {
    const record = await this.state.read();
    if (!record) return false;
    const moved = record.samplerPath !== this.record?.samplerPath;
    this.record = record;
    if (moved) this.sampler = this.samplerFor(record.samplerPath);
    return moved;
  }

  /**
   * After a training step: serve its weights, unless an earlier policy was pinned by a rollback (on
   * any node). The node samples them through its own session (`samplerFor`), not the trainer's, so
   * it keeps serving when it stops training.
   */
  async installFromStep(step: number, _sampler: PolicySampler, samplerPath: string): Promise<boolean> {
    const stored = await this.state.read();
    if (stored?.pinned) {
      this.record = stored;
      return false;
    }
    await this.set({ step, samplerPath, pinned: false }, this.samplerFor(samplerPath));
    return true;
  }

  /** A rollback: serve an earlier step's weights (pinned), or the latest again (`pinned: false`). */
  async serve(step: number, samplerPath: string, pinned: boolean): Promise<void> {
    await this.set({ step, samplerPath, pinned }, this.samplerFor(samplerPath));
  }

  private async set(record: ServedPolicyRecord, sampler: PolicySampler): Promise<void> {
    await this.state.write(record);
    this.record = record;
    this.sampler = sampler;
  }
}
