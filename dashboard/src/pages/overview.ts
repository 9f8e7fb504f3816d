import type { OverviewView } from '../../../src/dashboard/views.js';
import { countsOf, REQUEST_FAILURES, REQUEST_REFUSALS } from '../../../src/proxy/stats.js';
import { useJson } from '../api.js';
import { PageFrame, Stat } from '../components.js';
import { ago, count, duration, ms, when } from '../format.js';
import { html } from '../html.js';
import { link } from '../router.js';

/** What the page's data route answers (src/dashboard/overview.ts). */
type Overview = OverviewView;

export function OverviewPage() {
  const loaded = useJson<Overview>('/v1/dashboard/overview');
  return html`<${PageFrame} title="Overview" loaded=${loaded}
    >${(data: Overview) => html`
      ${data.warnings.map((warning) => html`<div class="banner warning" role="alert" data-warning=${warning.code}>${warning.message}</div>`)}
      <p class="muted">
        MetaClaw ${data.version}, mode <strong>${data.mode}</strong> (${data.mode_reason}); up ${duration(data.uptime_seconds)};
        ${' upstream '}<strong>${data.upstream.name}</strong>${' '}<code>${data.upstream.base_url}</code>${data.upstream.model ? html` model <code>${data.upstream.model}</code>` : null}.
      </p>
      <div class="stats">
        <${Stat}
          label="Requests"
          value=${count(data.requests.total)}
          note=${`${data.requests.active} in flight${data.requests.errors['client_aborted'] ? `, ${data.requests.errors['client_aborted']} dropped by the client` : ''}`}
        />
        <${Stat}
          label="Errors"
          value=${count(data.requests.errors_total)}
          tone=${data.requests.errors_total > 0 ? 'bad' : undefined}
          note=${countsOf(data.requests.errors, REQUEST_FAILURES).parts.join(', ') || 'none from the upstream or the proxy'}
        />
        <${Stat}
          label="Refused"
          value=${count(data.requests.refused_total)}
          note=${countsOf(data.requests.errors, REQUEST_REFUSALS).parts.join(', ') || 'no request refused'}
        />
        <${Stat} label="Tokens in / out" value=${`${count(data.requests.tokens.input)} / ${count(data.requests.tokens.output)}`} />
        <${Stat}
          label="Added latency p50"
          value=${ms(data.requests.added_latency.p50_ms)}
          note=${`p95 ${ms(data.requests.added_latency.p95_ms)} over ${data.requests.added_latency.samples} requests`}
        />
        <${Stat} label="Sessions" value=${count(data.sessions.total)} note=${`${data.sessions.open} open, ${count(data.sessions.turns)} turns`} />
        <${Stat}
          label="Learning queue"
          value=${count(data.queue.queued + data.queue.leased)}
          tone=${data.queue.dead > 0 ? 'bad' : undefined}
          note=${
            data.queue.dead > 0
              ? html`${data.queue.leased} running, <a href=${link('learning')}>${data.queue.dead} failed for good</a>, ${count(data.queue.done)} done`
              : `${data.queue.leased} running, ${data.queue.dead} dead, ${count(data.queue.done)} done`
          }
        />
        <${Stat}
          label="Skills"
          value=${data.skills.enabled ? count(data.skills.count) : 'off'}
          note=${`generation ${data.skills.generation}, ${data.skills.pending_proposals} pending; changed ${ago(data.skills.last_change_at)}`}
        />
        <${Stat}
          label="Memories"
          value=${data.memory.enabled ? count(data.memory.units) : 'off'}
          note=${`${data.memory.scopes} scope(s); learned ${ago(data.memory.last_learned_at)}`}
        />
        <${Stat}
          label="Learning spend today"
          value=${`${count(data.learning.spend.tokens_today)} tokens`}
          note=${data.learning.spend.daily_budget > 0 ? `of ${count(data.learning.spend.daily_budget)}` : 'no daily limit'}
        />
      </div>
      <h2>Last learning events</h2>
      ${
        data.events.length === 0
          ? html`<p class="muted">Nothing learned yet. Skills are written when a session ends; memories as turns arrive.</p>`
          : html`<ol class="events">
              ${data.events.map(
                (event) =>
                  html`<li class=${event.ok ? '' : 'bad'} data-event=${event.what}>
                    <time datetime=${event.at}>${when(event.at)}</time> <strong>${event.title}</strong>
                    ${event.session_id ? html` <a href=${link('sessions', event.session_id)}>session</a>` : null}
                    ${event.detail ? html`<div class="muted">${event.detail}</div>` : null}
                  </li>`,
              )}
            </ol>`
      }
    `}<//
  >`;
}
