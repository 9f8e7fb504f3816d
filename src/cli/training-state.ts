import type { EngineReport, OpeningFailure } from '../rl/index.js';
import { counted } from './plural.js';

/** The training report as /status carries it: what a team node adds (team/rl-training.ts) is absent on one proxy and on older nodes. */
export type TrainingView = EngineReport & { trainer?: string; waiting?: string | null; trainer_opening_failed?: OpeningFailure | null };

/** The training engine's state in words (`metaclaw status`, `rl status`): why it failed and when it tries again. */
export function trainingState(training: TrainingView, ready: string): string {
  if (training.state === 'ready') return ready;
  // A team node configured for another run than the team's says so (team/rl-training.ts).
  if (training.state === 'starting') {
    if (training.waiting) return `WAITING: ${training.waiting}`;
    // Only a node whose own session is open asks for the trainer's lock: it waits for a policy to serve.
    return training.trainer_opening_failed ? 'no policy to serve yet (the team’s run is not open)' : 'opening the backend';
  }
  if (training.state === 'failed') {
    const retry = training.retry_at ? `; trying again at ${clock(training.retry_at)}` : '';
    // A proxy older than `opening_failed` has the reason and the retry time only.
    const tries = training.opening_failed ? ` (${failedTries(training.opening_failed)})` : '';
    // Errors end in a full stop; the retry time follows as its own sentence.
    const error = (training.error ?? 'could not be opened').replace(/\.\s*$/, '');
    return `FAILED: ${error}${retry}${tries}`;
  }
  return training.state;
}

/**
 * A team node that took the trainer's lock but could not open the team's run, in words, or
 * undefined: it gave the lock back and asks for it again at `retry_at`; past that time, whenever
 * the lock is free (another node holds it, or this node is trying now).
 */
export function trainerOpeningFailed(training: TrainingView, now = Date.now()): string | undefined {
  const failure = training.trainer_opening_failed;
  if (!failure) return undefined;
  const next =
    Date.parse(failure.retry_at) > now
      ? `asks for the trainer’s lock again at ${clock(failure.retry_at)}`
      : 'asks for the trainer’s lock again once it is free';
  return `this node could not open the team’s run as its trainer: ${failure.error.replace(/\.\s*$/, '')}; ${next} (${failedTries(failure)})`;
}

/** Automatic steps that failed in a row, and when the next may run, in words; undefined when the last one trained. */
export function stepRetryText(training: TrainingView): string | undefined {
  const retry = training.step_retry;
  if (!retry) return undefined;
  return `the last ${retry.failures === 1 ? 'automatic step' : `${retry.failures} automatic steps`} failed; the next try at ${clock(retry.at)}`;
}

/** "3 failed tries since 14:02:11". */
function failedTries(failure: OpeningFailure): string {
  return `${counted(failure.attempts, 'failed try', 'failed tries')} since ${clock(failure.since)}`;
}

function clock(iso: string): string {
  return new Date(iso).toLocaleTimeString();
}

/** Where untrained samples are with the judge, in the words `metaclaw status` and `rl status` both use. */
export function judgeProgress(byState: { waiting: number; queued: number }): string {
  return `${byState.waiting} waiting for the next turn, ${byState.queued} queued for the judge`;
}
