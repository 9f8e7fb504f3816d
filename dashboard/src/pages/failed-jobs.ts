import type { JobView } from '../../../src/learning/job-admin.js';
import { useState } from 'preact/hooks';
import { send, useJson } from '../api.js';
import { when } from '../format.js';
import { html } from '../html.js';
import { logLink } from './log.js';

/** What POST /v1/learning/jobs/retry and /dismiss answer (src/proxy/learning-routes.ts). */
interface ActionAnswer {
  data: Array<{ id: number; outcome: string; by?: number }>;
  queued?: number;
  dismissed?: number;
}

/**
 * The learning jobs that failed for good, with why, and what to do about them: retry (once the
 * cause is fixed) or dismiss. The same routes as `metaclaw jobs`.
 */
export function FailedJobs() {
  const loaded = useJson<{ data: JobView[] }>('/v1/learning/jobs?status=dead&limit=50');
  const [message, setMessage] = useState<{ text: string; ok: boolean } | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const act = async (action: 'retry' | 'dismiss', body: { ids: number[] } | { all_dead: true }, what: string) => {
    setBusy(true);
    try {
      const answer = await send<ActionAnswer>('POST', `/v1/learning/jobs/${action}`, body);
      const done = action === 'retry' ? (answer.queued ?? 0) : (answer.dismissed ?? 0);
      const covered = answer.data.filter((result) => result.outcome === 'covered').map((result) => `job ${result.id} (job ${result.by} already does its work)`);
      setMessage({
        text: `${action === 'retry' ? 'Queued again' : 'Dismissed'}: ${done} of ${answer.data.length} ${what}.${covered.length > 0 ? ` Not queued: ${covered.join(', ')}.` : ''}`,
        ok: done === answer.data.length,
      });
    } catch (error) {
      setMessage({ text: `Could not ${action} ${what}: ${error instanceof Error ? error.message : String(error)}`, ok: false });
    }
    setBusy(false);
    loaded.reload();
  };
  const jobs = loaded.data?.data ?? [];
  // Nothing to act on: the page stays about the curves.
  if (jobs.length === 0 && !message && !loaded.error) return null;
  return html`<section class="failed-jobs" aria-labelledby="failed-jobs-title">
    <div class="row">
      <h2 id="failed-jobs-title">Failed learning jobs</h2>
      ${
        jobs.length > 1
          ? html`<button type="button" disabled=${busy} onClick=${() => act('retry', { all_dead: true }, 'failed jobs')}>Retry all</button>`
          : null
      }
    </div>
    ${message ? html`<div class=${`banner ${message.ok ? 'ok' : 'warning'}`} role="status">${message.text}</div>` : null}
    ${loaded.error ? html`<p class="banner warning">${loaded.error}</p>` : null}
    ${
      jobs.length === 0
        ? html`<p class="muted">No failed learning job is left.</p>`
        : html`<p class="muted">
              These jobs used up their attempts. Fix the cause (often the learning model's answer or key), then retry them; dismiss the ones not worth another
              try.
            </p>
            <div class="table-wrap">
              <table class="failed-jobs" aria-label="Failed learning jobs">
                <thead>
                  <tr>
                    <th>Job</th>
                    <th>About</th>
                    <th>Failed</th>
                    <th>Why</th>
                    <th></th>
                  </tr>
                </thead>
                <tbody>
                  ${jobs.map(
                    (job) =>
                      html`<tr data-job-id=${job.id}>
                        <td><code>${job.kind}</code> #${job.id}</td>
                        <td>${job.subject}</td>
                        <td>${job.finished_at ? when(job.finished_at) : '—'}</td>
                        <td class="error">${job.error ?? '—'} <a class="job-log" href=${logLink({ job: String(job.id) })}>log</a></td>
                        <td>
                          <span class="actions">
                            <button type="button" disabled=${busy} onClick=${() => act('retry', { ids: [job.id] }, `job #${job.id}`)}>Retry</button>
                            <button type="button" disabled=${busy} onClick=${() => act('dismiss', { ids: [job.id] }, `job #${job.id}`)}>Dismiss</button>
                          </span>
                        </td>
                      </tr>`,
                  )}
                </tbody>
              </table>
            </div>`
    }
  </section>`;
}
