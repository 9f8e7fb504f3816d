import { useJson } from '../api.js';
import { PageFrame } from '../components.js';
import { when } from '../format.js';
import { html } from '../html.js';
import { link, routeQuery } from '../router.js';
import type { PageProps } from './index.js';
import { SessionPage } from './session.js';
import { ended, type SessionSummary } from './session-types.js';

interface SessionList {
  sessions: SessionSummary[];
  next: string | null;
}

/** `#/sessions` lists them; `#/sessions/<id>` shows one session's turns. */
export function SessionsPage(props: PageProps) {
  const id = props.params[0];
  return id === undefined ? html`<${SessionListPage} />` : html`<${SessionPage} id=${id} />`;
}

function SessionListPage() {
  const before = routeQuery().get('before');
  const loaded = useJson<SessionList>(`/v1/dashboard/sessions${before ? `?before=${encodeURIComponent(before)}` : ''}`);
  return html`<${PageFrame} title="Sessions" loaded=${loaded}
    >${(data: SessionList) => html`
      ${
        data.sessions.length === 0
          ? html`<p class="muted">${before ? 'No older sessions.' : 'No sessions yet: they appear once an agent sends requests through the proxy.'}</p>`
          : html`<div class="table-wrap">
              <table class="sessions">
                <thead>
                  <tr>
                    <th>Session</th>
                    <th>Client</th>
                    <th>Scope</th>
                    <th>Started</th>
                    <th>Last turn</th>
                    <th>Ended</th>
                    <th class="num">Turns (main)</th>
                  </tr>
                </thead>
                <tbody>
                  ${data.sessions.map(
                    (session) =>
                      html`<tr data-session=${session.id}>
                        <td>
                          <a href=${link('sessions', session.id)}>${session.id}</a>${session.learning ? null : html` <span class="tag">not learning</span>`}
                        </td>
                        <td>${session.client_profile ?? '—'} <span class="muted">${session.client_format}</span></td>
                        <td>${session.scope ?? '—'}</td>
                        <td>${when(session.started_at)}</td>
                        <td>${when(session.last_turn_at)}</td>
                        <td>${ended(session)}</td>
                        <td class="num">${session.turn_count} (${session.main_turn_count})</td>
                      </tr>`,
                  )}
                </tbody>
              </table>
            </div>`
      }
      <p class="row">
        ${before ? html`<a href=${link('sessions')}>Newest sessions</a>` : null}
        ${data.next ? html`<a href=${`${link('sessions')}?before=${encodeURIComponent(data.next)}`}>Older sessions</a>` : null}
      </p>
    `}<//
  >`;
}
