import type { EngineReport } from '../rl/index.js';

/** The training engine's state in words (`metaclaw status`, `rl status`): why it failed and when it tries again. */
export function trainingState(training: EngineReport & { waiting?: string | null }, ready: string): string {
  if (training.state === 'ready') return ready;
  // A team node configured for another run than the team's says so (team/rl-training.ts).
  if (training.state === 'starting') return training.waiting ? `WAITING: ${training.waiting}` : 'opening the backend';
  if (training.state === 'failed') {
    const retry = training.retry_at ? `; trying again at ${new Date(training.retry_at).toLocaleTimeString()}` : '';
    // Errors end in a full stop; the retry time follows as its own sentence.
    const error = (training.error ?? 'could not be opened').replace(/\.\s*$/, '');
    return `FAILED: ${error}${retry}`;
  }
  return training.state;
}

/** Where untrained samples are with the judge, in the words `metaclaw status` and `rl status` both use. */
export function judgeProgress(byState: { waiting: number; queued: number }): string {
  return `${byState.waiting} waiting for the next turn, ${byState.queued} queued for the judge`;
}
