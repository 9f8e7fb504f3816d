import { z } from 'zod';
import type { SessionEndedEvent, TurnRecordedEvent } from '../conversation/index.js';
import type { Enqueue } from '../learning/runner.js';

/**
 * What a recorded turn or an ended session means for memory, as decisions with no storage: the
 * SQLite recording (recording.ts) and the team store's (store/postgres/recording.ts) share them.
 */

export const RECORD_TURN_JOB = 'memory.record_turn';
export const EXTRACT_JOB = 'memory.extract';
export const SEARCH_KEYS_JOB = 'memory.search_keys';
export const recordTurnPayload = z.object({ turnId: z.string(), sessionId: z.string(), scope: z.string() });
export const extractPayload = z.object({ sessionId: z.string(), scope: z.string(), final: z.boolean() });
/** State key: the languages (JSON array) the search keys job last wrote keys for; a main turn in another one queues it. */
export const SEARCH_KEYS_LANGUAGES = 'memory.search_keys.languages';

/** The settings that decide what a recorded turn means for memory (plain data: it crosses to the turn writer's thread). */
export interface MemoryRecordingSettings {
  enabled: boolean;
  defaultScope: string;
  autoExtract: boolean;
  /** memory.search_keys: a request in a language the keys do not cover yet asks the keys job to look */
  searchKeys: boolean;
  manualTrigger: boolean;
  ignoreTurnType: boolean;
}

/** The memory units a turn's injection record says were recalled. */
export function memoryShown(injected: unknown): string[] {
  const sections = (injected as { sections?: Array<{ provider?: string; details?: { recalled?: Array<{ id: string }> } }> } | null)?.sections;
  const recalled = sections?.find((section) => section.provider === 'memory')?.details?.recalled;
  return Array.isArray(recalled) ? recalled.map((item) => item.id) : [];
}

/** An ok turn's words become raw units (main turns only, unless turn types are ignored). */
export function recordTurnJob(event: TurnRecordedEvent, settings: MemoryRecordingSettings, enqueue: Enqueue): void {
  if (!settings.enabled || event.outcome !== 'ok') return;
  if (event.turnType !== 'main' && !settings.ignoreTurnType) return;
  enqueue(RECORD_TURN_JOB, { turnId: event.turnId, sessionId: event.sessionId, scope: event.scope });
}

/** A finished session with turns is extracted once (unless extraction waits for a manual trigger). */
export function extractSessionJob(event: SessionEndedEvent, settings: MemoryRecordingSettings, enqueue: Enqueue): void {
  if (!settings.enabled || !settings.autoExtract || settings.manualTrigger || event.turnCount === 0) return;
  enqueue(
    EXTRACT_JOB,
    { sessionId: event.sessionId, scope: event.scope ?? settings.defaultScope, final: true },
    { dedupeKey: `${EXTRACT_JOB}:${event.sessionId}:final` },
  );
}
