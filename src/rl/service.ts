import type { UpstreamTarget } from '../config/index.js';
import type { ConversationStore } from '../conversation/index.js';
import type { JobHandler } from '../learning/index.js';
import type { Logger } from '../logging/index.js';
import type { SkillCreditStore } from '../skills/index.js';
import type { Db } from '../store/index.js';
import type { CredentialMemory } from '../upstream/index.js';
import { bufferStatus, type BufferStatus } from './buffer/status.js';
import { RlBuffer } from './buffer/store.js';
import { describeJudge, JudgeHandler, type JudgeSettings } from './judge/handler.js';
import type { TrainingBuffer } from './loop/index.js';
import type { ModeDecision } from './mode.js';
import { TeacherHandler, type TeacherEndpoint } from './teacher/index.js';

export interface RlDependencies {
  db: Db;
  logger: Logger;
  mode: ModeDecision;
  judge: JudgeSettings;
  /** the skill library's live generation */
  generation: () => number;
  conversation: ConversationStore;
  credit: SkillCreditStore;
  mainUpstream: UpstreamTarget;
  credentials: CredentialMemory;
  /** on-policy distillation: the teacher, whose answer (or refusal) a sample waits for before training */
  teacher?: TeacherEndpoint | undefined;
}

/** What /status and `metaclaw rl status` show of RL. */
export interface RlReport {
  mode: { configured: string; effective: string; backend: string | null; reason: string };
  recording: boolean;
  judge: ReturnType<typeof describeJudge> | null;
  buffer: BufferStatus;
}

export function rlReport(db: Db, mode: ModeDecision, judge: JudgeSettings, generation: number): RlReport {
  return {
    mode: { configured: mode.configured, effective: mode.effective, backend: mode.backend, reason: mode.reason },
    recording: mode.recording,
    judge: mode.recording ? describeJudge(judge) : null,
    buffer: bufferStatus(db, generation),
  };
}

/**
 * The RL part in the running proxy: the sample buffer (samples are written by the recording
 * trigger on the turn writer's thread, `buffer/recording.ts`), the judge's job handler, and the
 * support/query separation when the skill library's generation moves on.
 */
export class RlService {
  readonly buffer: RlBuffer;
  private lastGeneration: number;

  constructor(private readonly deps: RlDependencies) {
    this.buffer = new RlBuffer(deps.db);
    // The library may have changed while the proxy was down (`metaclaw skills` commands).
    this.lastGeneration = Number.NaN;
    this.skillsChanged();
  }

  /** The buffer as the training loop (`rl/loop`) takes it: ready samples of the live skill generation, marked by the step that used them. */
  readonly training: TrainingBuffer = {
    ready: (limit) => this.buffer.trainable(this.deps.generation(), limit, { teacher: this.deps.teacher !== undefined }),
    markTrained: (turnIds, step) => this.buffer.markTrained(turnIds, step),
    setAside: (turnIds, reason) => this.buffer.setAside(turnIds, reason),
    setAsideEarlierRun: (before, reason) => this.buffer.setAsideEarlierRun(before, reason),
  };

  /** Judged samples of the live skill generation waiting for a step. */
  readyCount(): number {
    return this.buffer.trainableCount(this.deps.generation(), { teacher: this.deps.teacher !== undefined });
  }

  get mode(): ModeDecision {
    return this.deps.mode;
  }

  /** The judge runs wherever samples are recorded. */
  handlers(): JobHandler[] {
    if (!this.deps.mode.recording) return [];
    const { conversation, credit, mainUpstream, credentials, judge, teacher } = this.deps;
    return [
      new JudgeHandler({ buffer: this.buffer, credit, conversation, mainUpstream, credentials, settings: judge }),
      ...(teacher ? [new TeacherHandler(this.buffer, teacher)] : []),
    ];
  }

  /** The skill library changed: if its generation moved on, older untrained samples leave the trainable buffer (kept, counted). */
  skillsChanged(): void {
    const generation = this.deps.generation();
    if (generation === this.lastGeneration) return;
    this.lastGeneration = generation;
    try {
      const dropped = this.buffer.dropOlderThan(generation);
      if (dropped > 0) this.deps.logger.info({ generation, dropped }, 'skill generation moved on: older RL samples leave the trainable buffer');
    } catch (error) {
      // Training drops them anyway when it takes samples (`RlBuffer.trainable` reads the live generation).
      this.deps.logger.warn({ err: error, generation }, 'could not mark older RL samples as dropped');
    }
  }

  report(): RlReport {
    return rlReport(this.deps.db, this.deps.mode, this.deps.judge, this.deps.generation());
  }
}
