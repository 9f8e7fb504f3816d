import type { ConversationListener, SessionEndedEvent, TurnRecordedEvent } from '../conversation/index.js';
import type { JobQueue } from './queue.js';
import type { Enqueue, LearningTrigger } from './runner.js';

/** Where the dispatch reports: a job was queued (wake the runner), a trigger threw (count and log it). */
export interface DispatchHooks {
  enqueued(kind: string): void;
  failed(trigger: string, error: unknown): void;
}

/**
 * Runs the learning triggers for each conversation event, inside the recording transaction, so a
 * turn and the jobs it causes are committed together. A trigger that throws costs its own jobs
 * only: the turn is still recorded.
 */
export class LearningDispatch implements ConversationListener {
  constructor(
    private readonly queue: JobQueue,
    private readonly triggers: readonly LearningTrigger[],
    private readonly hooks: DispatchHooks,
  ) {}

  private readonly enqueue: Enqueue = (kind, payload, options) => {
    const id = this.queue.enqueue(kind, payload, options);
    if (id !== undefined) this.hooks.enqueued(kind);
    return id;
  };

  turnRecorded(event: TurnRecordedEvent): void {
    for (const trigger of this.triggers) this.safely(trigger, () => trigger.onTurnRecorded?.(event, this.enqueue));
  }

  sessionEnded(event: SessionEndedEvent): void {
    for (const trigger of this.triggers) this.safely(trigger, () => trigger.onSessionEnded?.(event, this.enqueue));
  }

  private safely(trigger: LearningTrigger, action: () => void): void {
    try {
      action();
    } catch (error) {
      this.hooks.failed(trigger.name, error);
    }
  }
}
