import type { LoadedConfig, UpstreamTarget } from '../config/index.js';
import { errorMessage } from '../errors.js';
import type { TeamJobHandler } from '../learning/index.js';
import type { Logger } from '../logging/index.js';
import { recordsSamples } from '../rl/buffer/recording.js';
import type { BufferStatus } from '../rl/buffer/status.js';
import { describeJudge } from '../rl/judge/index.js';
import { decideMode } from '../rl/mode.js';
import type { Forwarding } from '../rl/policy/index.js';
import type { RlReport } from '../rl/service.js';
import type { TeacherEndpoint } from '../rl/teacher/index.js';
import { judgeSettings, rlEngineSettings } from '../runtime/settings.js';
import {
  MemorySchedulerState,
  Scheduler,
  schedulerEnabled,
  schedulerOffReason,
  schedulerSettings,
  type SchedulerStatus,
  type SchedulerWindow,
} from '../scheduler/index.js';
// Loaded by team-app.ts only (not through team/index.ts, which the personal path loads): it pulls in `pg`.
import { PgRlSamples, pgRlJudgeHandler, pgRlTeacherHandler, queueTeacherJobs, type PgConversationReads, type PgJobQueue } from '../store/postgres/index.js';
import type { CredentialMemory } from '../upstream/index.js';
import type pg from 'pg';
import { TeamRlTraining, type TeamTrainingReport } from './rl-training.js';

export interface TeamRlOptions {
  pool: pg.Pool;
  /** the team store's URL (the trainer's lock has a connection of its own) */
  url: string;
  reads: PgConversationReads;
  config: LoadedConfig;
  mainUpstream: UpstreamTarget;
  credentials: CredentialMemory;
  logger: Logger;
  /** the generation of the team's skill library this node has caught up to */
  generation: () => number;
  /** the node's normal upstream (the forwarder), which answers what the policy does not */
  fallback: Forwarding;
  env: NodeJS.ProcessEnv;
  /** the team's job queue (OPD's teacher jobs are queued on it) */
  queue: PgJobQueue;
  /** the node's learning runner looks for jobs now */
  wake: () => void;
}

type TeamRlReport = RlReport & { training: TeamTrainingReport | null; training_reason: string | null };

/**
 * RL on a node of a team store: main turns become samples in the team store (recorded with the
 * turn by the PostgreSQL recording listeners), the judge scores each once on whichever node leases
 * its job, and a generation change of the team's skills drops older untrained samples, as on one
 * proxy (rl/service.ts). In modes rl and auto with a training backend, the node also serves main
 * turns from the team's policy and one node of the team trains it (TeamRlTraining).
 */
export class TeamRl {
  readonly recording: boolean;
  /** modes rl and auto with a training backend */
  readonly training: TeamRlTraining | undefined;
  /**
   * Where the node trains and the personal install would run the scheduler (mode auto, or
   * scheduler.enabled): the same windows from the same keys. Every node runs it, so the one that
   * holds the trainer's lock, whichever it is, steps only in them and every /status says why.
   */
  private readonly scheduler: Scheduler | undefined;
  private readonly mode: ReturnType<typeof decideMode>;
  private readonly samples: PgRlSamples | undefined;
  /** OPD's teacher, when the node trains with it */
  private readonly teacher: TeacherEndpoint | undefined;
  private lastGeneration = Number.NaN;
  private buffer: BufferStatus | null = null;

  constructor(private readonly options: TeamRlOptions) {
    this.recording = recordsSamples(options.config.values);
    this.samples = this.recording ? new PgRlSamples(options.pool) : undefined;
    this.mode = decideMode(options.config.values, options.env);
    const settings = this.mode.backend && this.samples ? rlEngineSettings(options.config, options.env) : undefined;
    this.teacher = settings?.opd?.teacher;
    const samples = this.samples;
    this.scheduler =
      settings && samples && schedulerEnabled(options.config)
        ? new Scheduler({ state: new MemorySchedulerState(), settings: schedulerSettings(options.config), activity: null, logger: options.logger })
        : undefined;
    this.training =
      settings && samples
        ? new TeamRlTraining({
            pool: options.pool,
            url: options.url,
            settings,
            samples,
            generation: options.generation,
            fallback: options.fallback,
            logger: options.logger,
            window: this.scheduler,
            ...(this.teacher ? { queueTeacher: () => this.queueTeacher(samples) } : {}),
          })
        : undefined;
  }

  start(): void {
    this.scheduler?.start();
    this.training?.start();
  }

  async stop(): Promise<void> {
    // As on the personal install: a step in flight is told to stop (abandoned unless past its point of no return).
    this.scheduler?.stop();
    await this.training?.stop();
  }

  /** /status's `scheduler` section, as the personal install's. */
  schedulerStatus(): SchedulerStatus | { enabled: false; reason: string } {
    if (this.scheduler) return this.scheduler.status();
    if (!this.training) return { enabled: false, reason: `off: this node does not train (${this.describeMode().reason})` };
    return { enabled: false, reason: schedulerOffReason(this.options.config) };
  }

  /** The windows this node's scheduler saw since it started (the dashboard's timeline). */
  schedulerWindows(from: number, to: number, limit?: number): SchedulerWindow[] {
    return this.scheduler?.windowHistory(from, to, limit) ?? [];
  }

  /** The judge, where samples are recorded; OPD's teacher, where it is set. */
  handlers(): TeamJobHandler[] {
    if (!this.samples) return [];
    const { reads, config, mainUpstream, credentials } = this.options;
    return [
      pgRlJudgeHandler({ samples: this.samples, reads, settings: judgeSettings(config), mainUpstream, credentials }),
      ...(this.teacher ? [pgRlTeacherHandler(this.samples, this.teacher)] : []),
    ];
  }

  /** OPD: every sample with token ids gets one teacher job, run by whichever node leases it. */
  private async queueTeacher(samples: PgRlSamples): Promise<void> {
    try {
      if ((await queueTeacherJobs(this.options.pool, samples, this.options.queue)) > 0) this.options.wake();
    } catch (error) {
      this.options.logger.warn({ err: errorMessage(error) }, 'rl: could not queue samples for the OPD teacher; trying again next tick');
    }
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
  cachedReport(): TeamRlReport | null {
    return this.buffer ? this.reportOf(this.buffer) : null;
  }

  /** Reads the buffer again (off the request path: the status timer, or /v1/rl). */
  async refresh(): Promise<void> {
    if (this.samples) this.buffer = await this.samples.status(this.options.generation());
  }

  /** The report read now (/v1/rl). */
  async report(): Promise<TeamRlReport> {
    await this.refresh();
    return this.reportOf(this.buffer ?? emptyBuffer(this.options.generation()));
  }

  /** What the node does of RL, in /status's `mode` words. */
  describeMode(): { configured: string; effective: string; reason: string } {
    const { configured, effective, reason } = this.mode;
    if (this.training)
      return {
        configured,
        effective,
        reason: `main turns are served from the team's policy, recorded as RL samples in the team store and judged; one node trains it with the ${this.mode.backend} backend${this.scheduler ? ', in the scheduler’s windows (sleep hours, calendar)' : ''}`,
      };
    if (configured !== 'skills_only') return { configured, effective, reason };
    return {
      configured,
      effective,
      reason: this.recording
        ? 'main turns are recorded as RL samples in the team store and judged; nothing is trained (mode skills_only)'
        : 'a node of a team store serves skills and memory (mode skills_only)',
    };
  }

  private reportOf(buffer: BufferStatus): TeamRlReport {
    const mode = this.describeMode();
    return {
      mode: { configured: mode.configured, effective: mode.effective, backend: this.training ? this.mode.backend : null, reason: mode.reason },
      recording: this.recording,
      judge: this.recording ? describeJudge(judgeSettings(this.options.config)) : null,
      buffer,
      training: this.training?.report() ?? null,
      training_reason: this.training ? null : mode.reason,
    };
  }
}

function emptyBuffer(generation: number): BufferStatus {
  return {
    samples: 0,
    current_generation: generation,
    by_state: { waiting: 0, queued: 0, scored: 0, tie: 0, failed: 0, dropped: 0, trained: 0, set_aside: 0 },
    set_aside_reason: null,
    trainable: 0,
    text_only: 0,
    teacher: { queued: 0, done: 0, failed: 0 },
    judged_share: null,
    mean_reward: null,
    by_day: [],
    by_generation: [],
  };
}
