import type { SessionEndedEvent, TurnRecordedEvent } from '../../conversation/index.js';
import type { Enqueue, LearningTrigger } from '../../learning/index.js';
// The turn writer's thread loads this module: imports go to the modules themselves, not index files.
import { GENERATION_KEY } from '../../skills/history.js';
import { StateStore, type Db } from '../../store/index.js';
import { RlBuffer } from './store.js';

export const JUDGE_JOB = 'rl.judge';

/** Main turns become RL samples (and are judged) in modes rl and auto, and with rl.enabled in skills_only. */
export function recordsSamples(values: { mode: string; 'rl.enabled': boolean }): boolean {
  return values['mode'] !== 'skills_only' || values['rl.enabled'];
}

/** The judge job's payload. */
export interface JudgeJobPayload {
  turnId: string;
}

/**
 * What a recorded turn means for RL: a main turn answered without error becomes a sample, tagged
 * with the skill generation it was served under; the next main turn of its session (the state
 * that shows how it went) or the session's end queues the judge for it. Runs inside the recording
 * transaction on the turn writer's thread, so a sample and its judge job are committed with the turn.
 */
export class RlRecording implements LearningTrigger {
  readonly name = 'rl';
  private readonly buffer: RlBuffer;
  private readonly state: StateStore;

  constructor(db: Db) {
    this.buffer = new RlBuffer(db);
    this.state = new StateStore(db);
  }

  onTurnRecorded(event: TurnRecordedEvent, enqueue: Enqueue): void {
    if (event.turnType !== 'main') return;
    for (const turnId of this.buffer.waitingOfSession(event.sessionId)) this.queueJudge(turnId, event.turnId, enqueue);
    if (event.outcome !== 'ok') return;
    this.buffer.record({
      turnId: event.turnId,
      sessionId: event.sessionId,
      seq: event.seq,
      skillGeneration: generationShown(event.injected) ?? Number(this.state.get(GENERATION_KEY) ?? '0'),
      policy: event.policy,
      createdAt: Date.now(),
    });
  }

  /** The session is over: its last turns have no next state, and are judged on what they are. */
  onSessionEnded(event: SessionEndedEvent, enqueue: Enqueue): void {
    for (const turnId of this.buffer.waitingOfSession(event.sessionId)) this.queueJudge(turnId, null, enqueue);
  }

  private queueJudge(turnId: string, nextTurnId: string | null, enqueue: Enqueue): void {
    if (!this.buffer.queueForJudge(turnId, nextTurnId)) return;
    const payload: JudgeJobPayload = { turnId };
    enqueue(JUDGE_JOB, payload, { dedupeKey: `${JUDGE_JOB}:${turnId}` });
  }
}

/** The generation the skills section of the turn's injection record was rendered under, when skills were shown. */
export function generationShown(injected: unknown): number | undefined {
  const sections = (injected as { sections?: Array<{ provider?: string; details?: { generation?: unknown } }> } | null)?.sections;
  const generation = sections?.find((section) => section.provider === 'skills')?.details?.generation;
  return typeof generation === 'number' ? generation : undefined;
}
