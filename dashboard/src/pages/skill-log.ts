import { useEffect, useState } from 'preact/hooks';
import type { SkillLogView } from '../../../src/dashboard/views.js';
import { useJson } from '../api.js';
import { when } from '../format.js';
import { html } from '../html.js';
import { link } from '../router.js';

type LogEvent = SkillLogView['events'][number];
type LogChange = LogEvent['changes'][number];

/**
 * The skill log, as `metaclaw skills log` shows it: evolutions newest first, each change with what
 * became of its proposal (approved or rejected, and when), and the changes made by hand in the
 * skills folder. Loaded when opened, so the Skills page itself stays one data request; read again
 * when `refresh` changes (a proposal was decided on the page).
 */
export function SkillLogSection(props: { refresh: number }) {
  const [open, setOpen] = useState(false);
  const log = useJson<SkillLogView>(open ? '/v1/dashboard/skill-log' : undefined);
  const { reload } = log;
  useEffect(() => {
    if (open && props.refresh > 0) reload();
  }, [props.refresh]);
  return html`<details class="skill-log" onToggle=${(event: Event) => setOpen((event.target as HTMLDetailsElement).open)}>
    <summary><h2>Evolution log</h2></summary>
    ${log.error ? html`<p class="error" role="alert">Could not load: ${log.error}</p>` : null}
    ${
      !open || log.data === undefined
        ? log.error
          ? null
          : html`<p class="muted">Loading…</p>`
        : log.data.events.length === 0
          ? html`<p class="muted">No skill evolutions yet.</p>`
          : html`<ol class="skill-log-events">
              ${log.data.events.map((event) => html`<${LogEntry} event=${event} />`)}
            </ol>`
    }
  </details>`;
}

function LogEntry(props: { event: LogEvent }) {
  const { event } = props;
  const kind = event.library_switch ? `switch-${event.generation}` : event.by_hand ? `hand-${event.generation}` : (event.session_id ?? '');
  return html`<li class="card" data-log-event=${kind}>
    <div class="row">
      <strong>${when(event.timestamp)}</strong>
      <span class="muted">
        ${
          event.library_switch
            ? `library switched from ${event.library_switch.from} to ${event.library_switch.to} (generation ${event.generation})`
            : event.by_hand
              ? `by hand in the skills folder (generation ${event.generation})`
              : `session ${event.session_id ?? '-'}${event.reason ? `, ${event.reason}` : ''}${event.num_turns_analyzed == null ? '' : `, ${event.num_turns_analyzed} turns`}`
        }
      </span>
    </div>
    <ul class="skill-log-changes">
      ${event.changes.map((change) => html`<${LogChangeLine} change=${change} />`)}
      ${event.more_changes ? html`<li class="muted">and ${event.more_changes} more</li>` : null}
      ${event.rejected.map((rejected) => html`<li class="muted">refused ${rejected.name}: ${rejected.reason}</li>`)}
    </ul>
  </li>`;
}

function LogChangeLine(props: { change: LogChange }) {
  const { change } = props;
  return html`<li data-log-change=${change.name}>
    ${change.action} <a href=${link('skills', change.name)}>${change.name}</a>${change.merged_into ? ` (merged into ${change.merged_into})` : ''}:
    ${' '}<${ChangeStatus} change=${change} />
  </li>`;
}

/** A proposal's decision once made (the logged "pending #N" is what it was when logged), a hand change's version. */
function ChangeStatus(props: { change: LogChange }) {
  const { change } = props;
  if (change.version !== undefined) return html`<span>${change.status} (v${change.version})</span>`;
  if (!change.decision) return html`<span class="tag">${change.status}</span>`;
  const proposal = change.status.replace(/^pending /, '');
  return html`<span class=${`tag decision-${change.decision.status}`} data-decision=${change.decision.status}>${change.decision.status}</span>${' '}<span
      class="muted"
      >${change.decision.decided_at ? `${when(change.decision.decided_at)} ` : ''}(proposal ${proposal})</span
    >`;
}
