import { useJson } from '../api.js';
import { PageFrame } from '../components.js';
import { when } from '../format.js';
import { html } from '../html.js';
import { link, routeQuery } from '../router.js';
import { JobsTable } from './jobs-table.js';
import { ended, type SessionDetail } from './session-types.js';
import { TurnCard } from './turn.js';

/** One session: what it is, the learning it caused, and its turns in order (`?turn=<id>` opens one). */
export function SessionPage(props: { id: string }) {
  const query = routeQuery();
  const after = query.get('after');
  const chosen = query.get('turn');
  const loaded = useJson<SessionDetail>(`/v1/dashboard/sessions/${encodeURIComponent(props.id)}${after ? `?after=${encodeURIComponent(after)}` : ''}`);
  const base = link('sessions', props.id);
  return html`<${PageFrame} title="Session" loaded=${loaded} actions=${html`<a href=${link('sessions')}>All sessions</a>`}
    >${({ session, turns, next_after, session_jobs }: SessionDetail) => html`
      <div class="card session-facts">
        <div><code>${session.id}</code>${session.learning ? null : html` <span class="tag">not learning</span>`}</div>
        <dl>
          <dt>Client</dt>
          <dd>${session.client_profile ?? '—'} (${session.client_format}; id from ${session.identity_source})</dd>
          <dt>Scope</dt>
          <dd>${session.scope ?? '—'}</dd>
          <dt>Started</dt>
          <dd>${when(session.started_at)}</dd>
          <dt>Last turn</dt>
          <dd>${when(session.last_turn_at)}</dd>
          <dt>Ended</dt>
          <dd>${ended(session)}</dd>
          <dt>Turns</dt>
          <dd>${session.turn_count} (${session.main_turn_count} main)</dd>
        </dl>
      </div>
      <h2>Learning jobs of the session</h2>
      ${session_jobs.length === 0 ? html`<p class="muted">None yet: skills and memory extraction run when the session ends (or every few turns).</p>` : html`<${JobsTable} jobs=${session_jobs} />`}
      <h2>Turns</h2>
      ${after ? html`<p><a href=${base}>From the first turn</a></p>` : null}
      ${turns.length === 0 ? html`<p class="muted">No turns here.</p>` : turns.map((turn) => html`<${TurnCard} key=${turn.id} turn=${turn} open=${turn.id === chosen} />`)}
      ${next_after === null ? null : html`<p><a href=${`${base}?after=${next_after}`}>Later turns</a></p>`}
    `}<//
  >`;
}
