import { z } from 'zod';
import { errorMessage, RequestError } from '../errors.js';
import { lastLogLines, LOG_LEVELS, logFilter, parseSince, SINCE_FORMS, type LogLine } from '../logging/log-reader.js';
import { parse, wholeNumberParam } from './route-body.js';
import type { ProxyApp } from './types.js';

/** The most lines one answer holds (the CLI, reading the files itself, may print more). */
const LOG_ROUTE_MAX = 1_000;

const JOB = 'must be a learning job id (a positive whole number)';
const logQuery = z
  .object({
    level: z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(', ')}` }).optional(),
    request: z.string().min(1, 'must name a request id').optional(),
    job: wholeNumberParam(1, Number.MAX_SAFE_INTEGER, JOB).optional(),
    since: z
      .string()
      .transform((text, context) => {
        const since = parseSince(text);
        if (since === undefined) context.addIssue({ code: 'custom', message: SINCE_FORMS });
        return since ?? 0;
      })
      .optional(),
    limit: wholeNumberParam(1, LOG_ROUTE_MAX).default(200),
  })
  .strict();

/** A file's error with the file it is about (a read's message names none). */
function fileError(error: unknown): string {
  const path = (error as NodeJS.ErrnoException)?.path;
  const message = errorMessage(error);
  return path && !message.includes(path) ? `${path}: ${message}` : message;
}

/**
 * `GET /v1/logs?level=&request=&job=&since=&limit=`: this proxy's log lines (metaclaw.log and its
 * rotated files), newest first, each as the object it was logged as (a line that is not one of the
 * logger's is `{"text": …}`). The log names every session and request of the install, so like the
 * dashboard (whose log page uses it) a member key does not open it (member-access.ts).
 */
export function logRoutes(logFile: string): (app: ProxyApp) => void {
  return (app) => {
    app.get('/v1/logs', async (c) => {
      const query = parse(logQuery, c.req.query());
      let lines: LogLine[];
      try {
        lines = await lastLogLines(logFile, query.limit, logFilter(query));
      } catch (error) {
        // Answered as what it is: a log file's problem, not a store fault (an EIO counted as one paused recording).
        throw new RequestError(500, 'api_error', 'log_unreadable', `The log cannot be read: ${fileError(error)}`, { cause: error });
      }
      return c.json({ object: 'list', data: lines.reverse().map((line) => line.entry ?? { text: line.raw }) });
    });
  };
}
