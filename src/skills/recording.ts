import type { ConversationListener, SessionEndedEvent, TurnRecordedEvent } from '../conversation/index.js';
import type { Enqueue, LearningTrigger } from '../learning/index.js';
import { StateStore, type Db } from '../store/index.js';
import { languageOf } from '../text/languages.js';
import { SkillCreditStore } from './credit.js';

export const EVOLVE_JOB = 'skills.evolve';
export const SEARCH_KEYS_JOB = 'skills.search_keys';
/** State key: the languages (JSON array) the search keys job last wrote keys for. */
export const SEARCH_KEYS_LANGUAGES = 'skills.search_keys.languages';

/** The settings that decide what a recorded turn means for skills (plain data: it crosses to the turn writer's thread). */
export interface SkillsRecordingSettings {
  autoEvolve: boolean;
  evolveEveryNTurns: number;
}

/**
 * What a recorded turn means for skills: credit rows for the skills it showed, the verdict on the
 * previous turn, and when the library should evolve. Runs inside the recording transaction, on
 * whichever thread writes turns, so it holds nothing but its statements and settings.
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
    if (event.turnType === 'main' && event.outcome === 'ok' && event.query) this.credit.recordFollowUp(event.sessionId, event.seq, event.query);
  }

  onTurnRecorded(event: TurnRecordedEvent, enqueue: Enqueue): void {
    this.maybeWriteSearchKeys(event, enqueue);
    const every = this.settings.evolveEveryNTurns;
    if (!this.settings.autoEvolve || event.turnType !== 'main' || event.outcome !== 'ok' || every <= 0) return;
    if (event.mainTurnCount % every === 0)
      enqueue(EVOLVE_JOB, { sessionId: event.sessionId, reason: `every ${every} main turns` }, { dedupeKey: `${EVOLVE_JOB}:${event.sessionId}` });
  }

  /** A request in a language the skills have no search keys for yet: the search keys job looks again. */
  private maybeWriteSearchKeys(event: TurnRecordedEvent, enqueue: Enqueue): void {
    if (event.turnType !== 'main' || !event.query) return;
    const language = languageOf(event.query);
    // English keys matter only for skills written in another language: the job looks for those at start and when the library changes.
    if (!language || language === 'en') return;
    const covered = this.state.get(SEARCH_KEYS_LANGUAGES);
    if (covered !== undefined && (JSON.parse(covered) as string[]).includes(language)) return;
    enqueue(SEARCH_KEYS_JOB, {}, { dedupeKey: SEARCH_KEYS_JOB, delayMs: 2_000 });
  }

  onSessionEnded(event: SessionEndedEvent, enqueue: Enqueue): void {
    if (!this.settings.autoEvolve || event.mainTurnCount === 0) return;
    enqueue(EVOLVE_JOB, { sessionId: event.sessionId, reason: `session ended (${event.reason})` }, { dedupeKey: `${EVOLVE_JOB}:${event.sessionId}` });
  }
}

/** The skills a turn's injection record says were shown. */
function skillsShown(injected: unknown): Array<{ name: string; relevance: number; full: boolean }> {
  const sections = (injected as { sections?: Array<{ provider?: string; details?: { skills?: unknown } }> } | null)?.sections;
  const skills = sections?.find((section) => section.provider === 'skills')?.details?.skills;
  return Array.isArray(skills) ? (skills as Array<{ name: string; relevance: number; full: boolean }>) : [];
}
