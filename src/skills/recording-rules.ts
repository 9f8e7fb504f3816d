import { z } from 'zod';
import type { SessionEndedEvent, TurnRecordedEvent } from '../conversation/index.js';
import type { Enqueue } from '../learning/runner.js';
import { languageOf } from '../text/languages.js';

/**
 * What a recorded turn or an ended session means for skills, as decisions with no storage: the
 * SQLite recording (recording.ts) and the team store's (store/postgres/recording.ts) both decide
 * here and differ only in where they read and write.
 */

export const EVOLVE_JOB = 'skills.evolve';
export const SEARCH_KEYS_JOB = 'skills.search_keys';
export const evolvePayload = z.object({ sessionId: z.string().min(1), reason: z.string().default('') });
/** State key: the languages (JSON array) the search keys job last wrote keys for. */
export const SEARCH_KEYS_LANGUAGES = 'skills.search_keys.languages';

/** The settings that decide what a recorded turn means for skills (plain data: it crosses to the turn writer's thread). */
export interface SkillsRecordingSettings {
  autoEvolve: boolean;
  /** skills.search_keys: a request in a language the keys do not cover yet asks the job to look */
  searchKeys: boolean;
  evolveEveryNTurns: number;
}

/** A shown skill, as the turn's injection record lists it. */
export interface ShownSkill {
  name: string;
  relevance: number;
  full: boolean;
}

/** The skills a turn's injection record says were shown. */
export function skillsShown(injected: unknown): ShownSkill[] {
  const sections = (injected as { sections?: Array<{ provider?: string; details?: { skills?: unknown } }> } | null)?.sections;
  const skills = sections?.find((section) => section.provider === 'skills')?.details?.skills;
  return Array.isArray(skills) ? (skills as ShownSkill[]) : [];
}

/** Whether a turn's answer gets a verdict from this (next) turn: a main turn that went through with a request. */
export function judgesPreviousTurn(event: TurnRecordedEvent): boolean {
  return event.turnType === 'main' && event.outcome === 'ok' && Boolean(event.query);
}

/**
 * The language of a main turn's request that may have no search keys yet, or undefined. Every
 * language counts, English too: keys in a skill's own language are the other words people ask with.
 */
export function searchKeysLanguage(event: TurnRecordedEvent): string | undefined {
  if (event.turnType !== 'main' || !event.query) return undefined;
  return languageOf(event.query);
}

/**
 * The turn's language is not among those the search keys job (`job`: skills', or on the team store
 * memory's) last covered (`covered`: the state value, a JSON array): it looks again.
 */
export function requestSearchKeysIfUncovered(language: string, covered: string | undefined, enqueue: Enqueue, job = SEARCH_KEYS_JOB): void {
  if (covered !== undefined && (JSON.parse(covered) as string[]).includes(language)) return;
  enqueue(job, {}, { dedupeKey: job, delayMs: 2_000, rerunIfRunning: true });
}

/** Every N ok main turns the library evolves from the session. */
export function evolveAfterTurn(event: TurnRecordedEvent, settings: SkillsRecordingSettings, enqueue: Enqueue): void {
  const every = settings.evolveEveryNTurns;
  if (!settings.autoEvolve || event.turnType !== 'main' || event.outcome !== 'ok' || every <= 0) return;
  if (event.mainTurnCount % every === 0)
    enqueue(
      EVOLVE_JOB,
      { sessionId: event.sessionId, reason: `every ${every} main turns` },
      { dedupeKey: `${EVOLVE_JOB}:${event.sessionId}`, rerunIfRunning: true },
    );
}

/** A session with main turns that ended: the library evolves from it. */
export function evolveAfterSession(event: SessionEndedEvent, settings: SkillsRecordingSettings, enqueue: Enqueue): void {
  if (!settings.autoEvolve || event.mainTurnCount === 0) return;
  enqueue(
    EVOLVE_JOB,
    { sessionId: event.sessionId, reason: `session ended (${event.reason})` },
    { dedupeKey: `${EVOLVE_JOB}:${event.sessionId}`, rerunIfRunning: true },
  );
}
