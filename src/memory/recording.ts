import type { ConversationListener, SessionEndedEvent, TurnRecordedEvent } from '../conversation/index.js';
import type { Enqueue, LearningTrigger } from '../learning/index.js';
import { StateStore, type Db } from '../store/index.js';
import { requestSearchKeysIfUncovered, searchKeysLanguage } from '../skills/recording-rules.js';
import { extractSessionJob, memoryShown, recordTurnJob, SEARCH_KEYS_JOB, SEARCH_KEYS_LANGUAGES, type MemoryRecordingSettings } from './recording-rules.js';
import { MemoryStore } from './store.js';

export { RECORD_TURN_JOB, EXTRACT_JOB, type MemoryRecordingSettings } from './recording-rules.js';

/**
 * What a recorded turn means for memory: the units it recalled were used, its words become raw
 * units (a job), a main turn in a language the search keys do not cover yet has the keys job look
 * again (as on the team store), and a finished session is extracted (a job); the decisions are recording-rules.ts.
 * Runs inside the recording transaction, on whichever thread writes turns.
 */
export class MemoryRecording implements ConversationListener, LearningTrigger {
  readonly name = 'memory';
  private readonly store: MemoryStore;
  private readonly state: StateStore;

  constructor(
    db: Db,
    private readonly settings: MemoryRecordingSettings,
  ) {
    this.store = new MemoryStore(db);
    this.state = new StateStore(db);
  }

  turnRecorded(event: TurnRecordedEvent): void {
    const recalled = memoryShown(event.injected);
    if (recalled.length > 0) this.store.touch(recalled);
  }

  onTurnRecorded(event: TurnRecordedEvent, enqueue: Enqueue): void {
    recordTurnJob(event, this.settings, enqueue);
    const language = searchKeysLanguage(event);
    if (language && this.settings.enabled && this.settings.searchKeys)
      requestSearchKeysIfUncovered(language, this.state.get(SEARCH_KEYS_LANGUAGES), enqueue, SEARCH_KEYS_JOB);
  }

  onSessionEnded(event: SessionEndedEvent, enqueue: Enqueue): void {
    extractSessionJob(event, this.settings, enqueue);
  }
}
