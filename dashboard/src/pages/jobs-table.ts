import { when } from '../format.js';
import { html } from '../html.js';
import type { Job } from './session-types.js';

/** Learning jobs with their state and, when they failed, why. */
export function JobsTable(props: { jobs: Job[] }) {
  return html`<div class="table-wrap">
    <table class="jobs">
      <thead>
        <tr>
          <th>Job</th>
          <th>Status</th>
          <th class="num">Attempts</th>
          <th class="num">Tokens</th>
          <th>Queued</th>
          <th>Error</th>
        </tr>
      </thead>
      <tbody>
        ${props.jobs.map(
          (job) =>
            html`<tr data-job=${job.kind} class=${job.status === 'dead' ? 'bad' : ''}>
              <td><code>${job.kind}</code></td>
              <td><span class="tag">${job.status}</span></td>
              <td class="num">${job.attempts}/${job.max_attempts}</td>
              <td class="num">${job.tokens_used}</td>
              <td>${when(job.created_at)}</td>
              <td class=${job.error ? 'error' : 'muted'}>${job.error ?? '—'}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}
