import type { ConversationListener, SessionEndedEvent, TurnRecordedEvent } from '../conversation/index.js';
import type { Enqueue, LearningTrigger } from '../learning/index.js';
import type { Db } from '../store/index.js';
import { MemoryStore } from './store.js';

export const RECORD_TURN_JOB = 'memory.record_turn';
export const EXTRACT_JOB = 'memory.extract';

/** The settings that decide what a recorded turn means for memory (plain data: it crosses to the turn writer's thread). */
export interface MemoryRecordingSettings {
  enabled: boolean;
  defaultScope: string;
  autoExtract: boolean;
  manualTrigger: boolean;
  ignoreTurnType: boolean;
}

/**
 * What a recorded turn means for memory: the units it recalled were used, its words become raw
 * units (a job), and a finished session is extracted (a job). Runs inside the recording
 * transaction, on whichever thread writes turns.
 */
export class MemoryRecording implements ConversationListener, LearningTrigger {
  readonly name = 'memory';
  private readonly store: MemoryStore;

  constructor(
    db: Db,
    private readonly settings: MemoryRecordingSettings,
  ) {
    this.store = new MemoryStore(db);
  }

  turnRecorded(event: TurnRecordedEvent): void {
    const recalled = memoryShown(event.injected);
    if (recalled.length > 0) this.store.touch(recalled);
  }

  onTurnRecorded(event: TurnRecordedEvent, enqueue: Enqueue): void {
    if (!this.settings.enabled || event.outcome !== 'ok') return;
    if (event.turnType !== 'main' && !this.settings.ignoreTurnType) return;
    enqueue(RECORD_TURN_JOB, { turnId: event.turnId, sessionId: event.sessionId, scope: event.scope });
  }

  onSessionEnded(event: SessionEndedEvent, enqueue: Enqueue): void {
    if (!this.settings.enabled || !this.settings.autoExtract || this.settings.manualTrigger || event.turnCount === 0) return;
    enqueue(
      EXTRACT_JOB,
      { sessionId: event.sessionId, scope: event.scope ?? this.settings.defaultScope, final: true },
      { dedupeKey: `${EXTRACT_JOB}:${event.sessionId}:final` },
    );
  }
}

/** The memory units a turn's injection record says were recalled. */
function memoryShown(injected: unknown): string[] {
  const sections = (injected as { sections?: Array<{ provider?: string; details?: { recalled?: Array<{ id: string }> } }> } | null)?.sections;
  const recalled = sections?.find((section) => section.provider === 'memory')?.details?.recalled;
  return Array.isArray(recalled) ? recalled.map((item) => item.id) : [];
}
