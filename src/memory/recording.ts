import type { ConversationListener, SessionEndedEvent, TurnRecordedEvent } from '../conversation/index.js';
import type { Enqueue, LearningTrigger } from '../learning/index.js';
import type { Db } from '../store/index.js';
import { extractSessionJob, memoryShown, recordTurnJob, type MemoryRecordingSettings } from './recording-rules.js';
import { MemoryStore } from './store.js';

export { RECORD_TURN_JOB, EXTRACT_JOB, type MemoryRecordingSettings } from './recording-rules.js';

/**
 * What a recorded turn means for memory: the units it recalled were used, its words become raw
 * units (a job), and a finished session is extracted (a job); the decisions are recording-rules.ts.
 * Runs inside the recording transaction, on whichever thread writes turns.
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
    recordTurnJob(event, this.settings, enqueue);
  }

  onSessionEnded(event: SessionEndedEvent, enqueue: Enqueue): void {
    extractSessionJob(event, this.settings, enqueue);
  }
}
