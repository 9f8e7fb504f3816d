import type { ConversationListener, SessionEndedEvent, TurnRecordedEvent } from '../conversation/index.js';
import type { Enqueue, LearningTrigger } from '../learning/index.js';
import { StateStore, type Db } from '../store/index.js';
import { SkillCreditStore } from './credit.js';
import {
  evolveAfterSession,
  evolveAfterTurn,
  judgesPreviousTurn,
  requestSearchKeysIfUncovered,
  SEARCH_KEYS_LANGUAGES,
  searchKeysLanguage,
  skillsShown,
  type SkillsRecordingSettings,
} from './recording-rules.js';

export { EVOLVE_JOB, SEARCH_KEYS_JOB, SEARCH_KEYS_LANGUAGES, type SkillsRecordingSettings } from './recording-rules.js';

/**
 * What a recorded turn means for skills: credit rows for the skills it showed, the verdict on the
 * previous turn, and when the library should evolve (the decisions: recording-rules.ts). Runs inside
 * the recording transaction, on whichever thread writes turns, so it holds nothing but its
 * statements and settings.
 */
export class SkillsRecording implements ConversationListener, LearningTrigger {
  readonly name = 'skills';
  private readonly credit: SkillCreditStore;
  private readonly state: StateStore;

  constructor(
    db: Db,
    private readonly settings: SkillsRecordingSettings,
  ) {
    this.credit = new SkillCreditStore(db);
    this.state = new StateStore(db);
  }

  turnRecorded(event: TurnRecordedEvent): void {
    const shown = skillsShown(event.injected);
    if (shown.length > 0) this.credit.recordUsage(event.turnId, event.sessionId, shown);
    if (judgesPreviousTurn(event)) this.credit.recordFollowUp(event.sessionId, event.seq, event.query);
  }

  onTurnRecorded(event: TurnRecordedEvent, enqueue: Enqueue): void {
    const language = searchKeysLanguage(event);
    if (language && this.settings.searchKeys) requestSearchKeysIfUncovered(language, this.state.get(SEARCH_KEYS_LANGUAGES), enqueue);
    evolveAfterTurn(event, this.settings, enqueue);
  }

  onSessionEnded(event: SessionEndedEvent, enqueue: Enqueue): void {
    evolveAfterSession(event, this.settings, enqueue);
  }
}
