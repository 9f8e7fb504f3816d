import { z } from 'zod';
import { ConflictError, NotFoundError } from '../errors.js';
import {
  dismissJobs,
  JOB_LIST_MAX,
  JOB_LIST_STATUSES,
  jobSelectionSchema,
  listJobs,
  retryJobs,
  selectionOf,
  statusWord,
  type DismissResult,
  type RetryResult,
} from '../learning/job-admin.js';
import type { JobQueueStore } from '../store/ports.js';
import { parse, readJson, wholeNumberParam } from './route-body.js';
import type { ProxyApp } from './types.js';

const listQuery = z
  .object({
    status: z.enum(JOB_LIST_STATUSES, { error: `must be one of ${JOB_LIST_STATUSES.join(', ')}` }).default('dead'),
    kind: z.string().min(1, 'must name a job kind').optional(),
    limit: wholeNumberParam(1, JOB_LIST_MAX).default(50),
  })
  .strict();

/**
 * The learning queue by hand: `GET /v1/learning/jobs` lists jobs (the dead ones by default, with
 * why they failed), `POST /v1/learning/jobs/retry` and `POST /v1/learning/jobs/:id/retry` send dead
 * jobs back, `POST /v1/learning/jobs/dismiss` and `DELETE /v1/learning/jobs/:id` delete them. Like
 * the dashboard (whose learning page uses them), they read and change what the whole install
 * holds, so a member key does not open them (member-access.ts); `metaclaw jobs` reads the store itself.
 */
export function learningJobRoutes(queue: Pick<JobQueueStore, 'list' | 'revive' | 'dismiss'>, wake: () => void): (app: ProxyApp) => void {
  return (app) => {
    const retried = (results: RetryResult[]) => {
      if (results.some((result) => result.outcome === 'queued')) wake();
      return { object: 'list', data: results, queued: results.filter((result) => result.outcome === 'queued').length };
    };
    const dismissed = (results: DismissResult[]) => ({
      object: 'list',
      data: results,
      dismissed: results.filter((result) => result.outcome === 'dismissed').length,
    });

    app.get('/v1/learning/jobs', async (c) => {
      const query = parse(listQuery, c.req.query());
      return c.json({ object: 'list', data: await listJobs(queue, query) });
    });

    const selection = async (request: Request) => selectionOf(parse(jobSelectionSchema, await readJson(request)));
    app.post('/v1/learning/jobs/retry', async (c) => c.json(retried(await retryJobs(queue, await selection(c.req.raw)))));
    app.post('/v1/learning/jobs/dismiss', async (c) => c.json(dismissed(await dismissJobs(queue, await selection(c.req.raw)))));

    app.post('/v1/learning/jobs/:id/retry', async (c) => {
      const [result] = await retryJobs(queue, { ids: [jobId(c.req.param('id'))] });
      return c.json(retried([deadJobResult(result!)]));
    });

    app.delete('/v1/learning/jobs/:id', async (c) => {
      const [result] = await dismissJobs(queue, { ids: [jobId(c.req.param('id'))] });
      return c.json(dismissed([deadJobResult(result!)]));
    });
  };
}

function jobId(text: string): number {
  const id = Number(text);
  if (!/^[0-9]+$/.test(text) || !Number.isSafeInteger(id) || id < 1)
    throw new NotFoundError(`No learning job ${text}: job ids are positive whole numbers.`, 'job_not_found');
  return id;
}

/** The one job a route names: 404 when it does not exist, 409 when it is not dead. */
function deadJobResult<R extends RetryResult | DismissResult>(result: R): R {
  if (result.outcome === 'missing') throw new NotFoundError(`No learning job ${result.id}.`, 'job_not_found');
  if (result.outcome === 'not_dead')
    throw new ConflictError(`Learning job ${result.id} is ${statusWord(result.status)}: only a dead job can be retried or dismissed.`, 'job_not_dead');
  return result;
}
