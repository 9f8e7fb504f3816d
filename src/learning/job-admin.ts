import { z } from 'zod';
import type { JobQueueStore } from '../store/ports.js';
import type { DismissOutcome, JobRow, JobStatus, ReviveOutcome } from './job-model.js';

/**
 * What an operator does with the learning queue by hand: see the jobs (above all the dead ones,
 * with why they failed), send dead ones back once the cause is fixed, or dismiss them. The CLI
 * (`metaclaw jobs`) and the HTTP routes (`/v1/learning/jobs`, which the dashboard uses) both go
 * through here, on either engine.
 */

export const JOB_LIST_STATUSES = ['dead', 'queued', 'leased', 'done', 'all'] as const;
export type JobListStatus = (typeof JOB_LIST_STATUSES)[number];

/** At most this many jobs in one listing, and in one "retry every dead job". */
export const JOB_LIST_MAX = 1000;

/** What a view of a job reads from its row (the dashboard reads these columns only). */
export type JobRowCore<S extends string = JobStatus> = Pick<
  JobRow,
  'id' | 'kind' | 'attempts' | 'max_attempts' | 'last_error' | 'tokens_used' | 'created_at' | 'finished_at'
> & {
  status: S;
};

/** The fields every view of a job shows (`metaclaw jobs`, /v1/learning/jobs, the dashboard's session page): times as ISO strings. */
export function jobCore<S extends string>(row: JobRowCore<S>) {
  return {
    id: row.id,
    kind: row.kind,
    status: row.status,
    attempts: row.attempts,
    max_attempts: row.max_attempts,
    tokens_used: row.tokens_used,
    /** the last failure, kept after a retry until the job succeeds */
    error: row.last_error,
    created_at: new Date(row.created_at).toISOString(),
    finished_at: row.finished_at === null ? null : new Date(row.finished_at).toISOString(),
  };
}

/** A job as the CLI, the HTTP API and the dashboard show it: its payload parsed, and what it was about in words. */
export type JobView = ReturnType<typeof jobCore<JobStatus>> & { payload: unknown; subject: string; updated_at: string };

export function presentJob(row: JobRow): JobView {
  const payload = parsePayload(row.payload);
  return { ...jobCore(row), payload, subject: subjectOf(payload), updated_at: new Date(row.updated_at).toISOString() };
}

/** The ids and words a job's payload holds (session, turn, scope, reason…), so a reader knows what it was about. */
function subjectOf(payload: unknown): string {
  if (typeof payload !== 'object' || payload === null) return '';
  return Object.entries(payload)
    .filter(([, value]) => typeof value === 'string' || typeof value === 'number')
    .map(([key, value]) => `${key} ${String(value)}`)
    .join(', ');
}

function parsePayload(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // A hand-edited row: shown as it is (the runner dead-letters it with the reason).
    return text;
  }
}

export async function listJobs(queue: Pick<JobQueueStore, 'list'>, query: { status: JobListStatus; kind?: string; limit: number }): Promise<JobView[]> {
  const rows = await queue.list(query.status, Math.min(Math.max(query.limit, 1), JOB_LIST_MAX), query.kind);
  return rows.map(presentJob);
}

/** Which dead jobs to act on: these ids, or every dead job (of one kind). */
export type JobSelection = { ids: number[] } | { allDead: true; kind?: string };

export const jobSelectionSchema = z.union(
  [
    z.object({ ids: z.array(z.number().int().positive()).min(1).max(JOB_LIST_MAX) }).strict(),
    z.object({ all_dead: z.literal(true), kind: z.string().min(1).optional() }).strict(),
  ],
  { error: `expected {"ids": [job ids]} (1 to ${JOB_LIST_MAX}) or {"all_dead": true} with an optional "kind"` },
);

export function selectionOf(body: z.infer<typeof jobSelectionSchema>): JobSelection {
  return 'ids' in body ? { ids: body.ids } : { allDead: true, ...(body.kind ? { kind: body.kind } : {}) };
}

export type RetryResult = { id: number } & ReviveOutcome;
export type DismissResult = { id: number } & DismissOutcome;

/** The ids a selection names, oldest first for "every dead job", each once. */
async function selectedIds(queue: Pick<JobQueueStore, 'list'>, selection: JobSelection): Promise<number[]> {
  if ('ids' in selection) return [...new Set(selection.ids)];
  return (await queue.list('dead', JOB_LIST_MAX, selection.kind)).map((row) => row.id).reverse();
}

/** Sends dead jobs back to the queue with fresh attempts; one result per job, in the order asked. */
export async function retryJobs(queue: Pick<JobQueueStore, 'list' | 'revive'>, selection: JobSelection): Promise<RetryResult[]> {
  const results: RetryResult[] = [];
  for (const id of await selectedIds(queue, selection)) results.push({ id, ...(await queue.revive(id)) });
  return results;
}

/** Deletes dead jobs the operator gave up on; one result per job, in the order asked. */
export async function dismissJobs(queue: Pick<JobQueueStore, 'list' | 'dismiss'>, selection: JobSelection): Promise<DismissResult[]> {
  const results: DismissResult[] = [];
  for (const id of await selectedIds(queue, selection)) results.push({ id, ...(await queue.dismiss(id)) });
  return results;
}

/** A job's status in words: a leased job is running. */
export const statusWord = (status: JobStatus): string => (status === 'leased' ? 'running' : status);

/** One line per result, for the CLI. */
export function describeResult(result: RetryResult | DismissResult): string {
  switch (result.outcome) {
    case 'queued':
      return `job ${result.id}: queued again`;
    case 'dismissed':
      return `job ${result.id}: dismissed (deleted)`;
    case 'covered':
      return `job ${result.id}: not queued, job ${result.by} (queued or running) already does the same work`;
    case 'not_dead':
      return `job ${result.id}: left as it is, it is ${statusWord(result.status)}, not dead`;
    case 'missing':
      return `job ${result.id}: no such job`;
  }
}
