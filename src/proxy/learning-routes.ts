import { z } from 'zod';
import { ConflictError, NotFoundError, PermissionError } from '../errors.js';
import { JOB_LIST_MAX, JOB_LIST_STATUSES, listJobs, retryBodySchema, retryJobs, type RetryResult } from '../learning/job-admin.js';
import type { JobQueueStore } from '../store/ports.js';
import type { AdminToken } from './admin-token.js';
import { parse, readJson } from './route-body.js';
import type { ProxyApp } from './types.js';

const LIMIT = `must be a whole number from 1 to ${JOB_LIST_MAX}`;
const listQuery = z
  .object({
    status: z.enum(JOB_LIST_STATUSES, { error: `must be one of ${JOB_LIST_STATUSES.join(', ')}` }).default('dead'),
    kind: z.string().min(1, 'must name a job kind').optional(),
    limit: z.coerce.number({ error: LIMIT }).int(LIMIT).min(1, LIMIT).max(JOB_LIST_MAX, LIMIT).default(50),
  })
  .strict();

/**
 * The learning queue by hand: `GET /v1/learning/jobs` lists jobs (the dead ones by default, with
 * why they failed), `POST /v1/learning/jobs/retry` and `POST /v1/learning/jobs/:id/retry` send dead
 * jobs back. Jobs name sessions and scopes of every user of the store, and a retry spends learning
 * tokens, so both need the admin token (`metaclaw jobs …` reads the store itself).
 */
export function learningJobRoutes(queue: Pick<JobQueueStore, 'list' | 'revive'>, adminToken: AdminToken, wake: () => void): (app: ProxyApp) => void {
  return (app) => {
    const requireAdmin = (headers: Parameters<AdminToken['grants']>[0]) => {
      if (!adminToken.grants(headers))
        throw new PermissionError(
          'admin_token_required',
          'The learning queue needs the admin token (X-MetaClaw-Admin: the content of $METACLAW_HOME/admin-token).',
        );
    };
    const retried = (results: RetryResult[]) => {
      if (results.some((result) => result.outcome === 'queued')) wake();
      return { object: 'list', data: results, queued: results.filter((result) => result.outcome === 'queued').length };
    };

    app.get('/v1/learning/jobs', async (c) => {
      requireAdmin(c.env.incoming.headers);
      const query = parse(listQuery, c.req.query());
      return c.json({ object: 'list', data: await listJobs(queue, query) });
    });

    app.post('/v1/learning/jobs/retry', async (c) => {
      requireAdmin(c.env.incoming.headers);
      const body = parse(retryBodySchema, await readJson(c.req.raw));
      return c.json(retried(await retryJobs(queue, 'ids' in body ? { ids: body.ids } : { allDead: true, ...(body.kind ? { kind: body.kind } : {}) })));
    });

    app.post('/v1/learning/jobs/:id/retry', async (c) => {
      requireAdmin(c.env.incoming.headers);
      const id = Number(c.req.param('id'));
      if (!Number.isSafeInteger(id) || id < 1)
        throw new NotFoundError(`No learning job ${c.req.param('id')}: job ids are positive whole numbers.`, 'job_not_found');
      const [result] = await retryJobs(queue, { ids: [id] });
      if (result!.outcome === 'missing') throw new NotFoundError(`No learning job ${id}.`, 'job_not_found');
      if (result!.outcome === 'not_dead')
        throw new ConflictError(
          `Learning job ${id} is ${result!.status === 'leased' ? 'running' : result!.status}: only a dead job can be retried.`,
          'job_not_dead',
        );
      return c.json(retried([result!]));
    });
  };
}
