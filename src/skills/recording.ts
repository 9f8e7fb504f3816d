import type { ConversationListener, SessionEndedEvent, TurnRecordedEvent } from '../conversation/index.js';
import type { Enqueue, LearningTrigger } from '../learning/index.js';
import type { Db } from '../store/index.js';
import { SkillCreditStore } from './credit.js';

export const EVOLVE_JOB = 'skills.evolve';

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

  constructor(
    db: Db,
    private readonly settings: SkillsRecordingSettings,
  ) {
    this.credit = new SkillCreditStore(db);
  }

  turnRecorded(event: TurnRecordedEvent): void {
    const shown = skillsShown(event.injected);
    if (shown.length > 0) this.credit.recordUsage(event.turnId, event.sessionId, shown);
    if (event.turnType === 'main' && event.outcome === 'ok' && event.query) this.credit.recordFollowUp(event.sessionId, event.seq, event.query);
  }

  onTurnRecorded(event: TurnRecordedEvent, enqueue: Enqueue): void {
    const every = this.settings.evolveEveryNTurns;
    if (!this.settings.autoEvolve || event.turnType !== 'main' || event.outcome !== 'ok' || every <= 0) return;
    if (event.mainTurnCount % every === 0)
      enqueue(EVOLVE_JOB, { sessionId: event.sessionId, reason: `every ${every} main turns` }, { dedupeKey: `${EVOLVE_JOB}:${event.sessionId}` });
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
