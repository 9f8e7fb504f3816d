import type { LoadedConfig, UpstreamTarget } from '../config/index.js';
import { errorMessage } from '../errors.js';
import type { TeamJobHandler } from '../learning/index.js';
import type { Logger } from '../logging/index.js';
import { recordsSamples } from '../rl/buffer/recording.js';
import type { BufferStatus } from '../rl/buffer/status.js';
import { describeJudge } from '../rl/judge/index.js';
import type { RlReport } from '../rl/service.js';
import { judgeSettings } from '../runtime/settings.js';
// Loaded by team-app.ts only (not through team/index.ts, which the personal path loads): it pulls in `pg`.
import { PgRlSamples, pgRlJudgeHandler, type PgConversationReads } from '../store/postgres/index.js';
import type { CredentialMemory } from '../upstream/index.js';
import type pg from 'pg';

export interface TeamRlOptions {
  pool: pg.Pool;
  reads: PgConversationReads;
  config: LoadedConfig;
  mainUpstream: UpstreamTarget;
  credentials: CredentialMemory;
  logger: Logger;
  /** the generation of the team's skill library this node has caught up to */
  generation: () => number;
}

/** Why a team node trains nothing (yet): what /status and /v1/rl say. */
const NO_TRAINING = 'training does not run on a node of a team store yet';

/**
 * RL on a node of a team store: main turns become samples in the team store (recorded with the
 * turn by the PostgreSQL recording listeners), the judge scores each once on whichever node leases
 * its job, and a generation change of the team's skills drops older untrained samples, as on one
 * proxy (rl/service.ts). Training from the team's samples is not part of this node yet.
 */
export class TeamRl {
  readonly recording: boolean;
  private readonly samples: PgRlSamples | undefined;
  private lastGeneration = Number.NaN;
  private buffer: BufferStatus | null = null;

  constructor(private readonly options: TeamRlOptions) {
    this.recording = recordsSamples(options.config.values);
    this.samples = this.recording ? new PgRlSamples(options.pool) : undefined;
  }

  /** The judge, where samples are recorded. */
  handlers(): TeamJobHandler[] {
    if (!this.samples) return [];
    const { reads, config, mainUpstream, credentials } = this.options;
    return [pgRlJudgeHandler({ samples: this.samples, reads, settings: judgeSettings(config), mainUpstream, credentials })];
  }

  /**
   * The team's skill library moved on: untrained samples of older generations leave the trainable
   * buffer (kept and counted). Every node hears of it; the update is the same whoever runs it.
   */
  async skillsChanged(): Promise<void> {
    const generation = this.options.generation();
    if (!this.samples || generation === this.lastGeneration) return;
    this.lastGeneration = generation;
    try {
      const dropped = await this.samples.dropOlderThan(generation);
      if (dropped > 0) this.options.logger.info({ generation, dropped }, 'skill generation moved on: older RL samples leave the trainable buffer');
    } catch (error) {
      // Reading trainable samples drops them anyway (PgRlSamples.trainable reads the live generation).
      this.lastGeneration = Number.NaN;
      this.options.logger.warn({ err: errorMessage(error), generation }, 'could not mark older RL samples as dropped');
    }
  }

  /** The report as last read (for /status, which never waits on the store); null until read or when nothing is recorded. */
  cachedReport(): (RlReport & { training: null; training_reason: string }) | null {
    return this.buffer ? this.reportOf(this.buffer) : null;
  }

  /** Reads the buffer again (off the request path: the status timer, or /v1/rl). */
  async refresh(): Promise<void> {
    if (this.samples) this.buffer = await this.samples.status(this.options.generation());
  }

  /** The report read now (/v1/rl). */
  async report(): Promise<RlReport & { training: null; training_reason: string }> {
    await this.refresh();
    return this.reportOf(this.buffer ?? emptyBuffer(this.options.generation()));
  }

  /** What the node does of RL, in /status's `mode` words. */
  describeMode(): { configured: string; effective: 'skills_only'; reason: string } {
    const configured = this.options.config.values['mode'];
    return {
      configured,
      effective: 'skills_only',
      reason: this.recording
        ? `main turns are recorded as RL samples in the team store and judged; ${NO_TRAINING}`
        : `a node of a team store serves skills and memory; ${NO_TRAINING}`,
    };
  }

  private reportOf(buffer: BufferStatus): RlReport & { training: null; training_reason: string } {
    const mode = this.describeMode();
    return {
      mode: { configured: mode.configured, effective: mode.effective, backend: null, reason: mode.reason },
      recording: this.recording,
      judge: this.recording ? describeJudge(judgeSettings(this.options.config)) : null,
      buffer,
      training: null,
      training_reason: NO_TRAINING,
    };
  }
}

function emptyBuffer(generation: number): BufferStatus {
  return {
    samples: 0,
    current_generation: generation,
    by_state: { waiting: 0, queued: 0, scored: 0, tie: 0, failed: 0, dropped: 0, trained: 0 },
    trainable: 0,
    text_only: 0,
    teacher: { queued: 0, done: 0, failed: 0 },
    judged_share: null,
    mean_reward: null,
    by_day: [],
    by_generation: [],
  };
}
