import type { LoadedConfig } from '../config/index.js';
import type { ConversationListener } from '../conversation/index.js';
// The turn writer's thread loads this module: the parts' recording modules are imported directly,
// not through their index files, so that thread does not load retrieval, evolution and the rest.
import { LearningDispatch, type DispatchHooks } from '../learning/dispatch.js';
import type { JobQueue } from '../learning/queue.js';
import { MemoryRecording, type MemoryRecordingSettings } from '../memory/recording.js';
import { recordsSamples, RlRecording } from '../rl/buffer/recording.js';
import { SkillsRecording, type SkillsRecordingSettings } from '../skills/recording.js';
import type { Db } from '../store/index.js';
import { memorySettings, skillsSettings } from './settings.js';

/** What the recording listeners need to know (plain data: the turn writer's thread gets a copy). */
export interface RecordingSettings {
  skills: SkillsRecordingSettings;
  memory: MemoryRecordingSettings;
  /** store.redact_turns: the turn writer redacts secrets before a turn is stored. */
  redactTurns: boolean;
  /** Main turns become RL samples, judged once the next turn shows how they went (modes rl/auto, or rl.enabled). */
  rlSamples: boolean;
}

export function recordingSettings(config: LoadedConfig): RecordingSettings {
  const skills = skillsSettings(config);
  const memory = memorySettings(config);
  return {
    skills: { autoEvolve: skills.autoEvolve, searchKeys: skills.searchKeys, evolveEveryNTurns: skills.evolveEveryNTurns },
    memory: {
      enabled: memory.enabled,
      defaultScope: memory.defaultScope,
      autoExtract: memory.autoExtract,
      searchKeys: memory.searchKeys,
      manualTrigger: memory.manualTrigger,
      ignoreTurnType: memory.ignoreTurnType,
    },
    redactTurns: config.values['store.redact_turns'],
    rlSamples: recordsSamples(config.values),
  };
}

/**
 * The listeners that run inside every recording transaction, in this order: the learning triggers
 * (which jobs a turn or a session end causes; RL samples and their judge jobs), skill credit, memory use. The proxy's thread and
 * the turn writer's thread each build their own, on their own connection.
 */
export function recordingListeners(db: Db, queue: JobQueue, settings: RecordingSettings, hooks: DispatchHooks): ConversationListener[] {
  const skills = new SkillsRecording(db, settings.skills);
  const memory = new MemoryRecording(db, settings.memory);
  const triggers = settings.rlSamples ? [skills, memory, new RlRecording(db)] : [skills, memory];
  return [new LearningDispatch(queue, triggers, hooks), skills, memory];
}
