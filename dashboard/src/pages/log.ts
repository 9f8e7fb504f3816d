import { useEffect, useState } from 'preact/hooks';
import { CONFIG_LOG_LEVELS } from '../../../src/logging/levels.js';
import { useJson } from '../api.js';
import { PageFrame } from '../components.js';
import { when } from '../format.js';
import { html } from '../html.js';
import { link, routeQuery } from '../router.js';

/** A line of GET /v1/logs: what the proxy logged (src/proxy/log-routes.ts), or `{text}` for a foreign line. */
interface LogEntry {
  level?: string;
  time?: string;
  msg?: string;
  text?: string;
  err?: { type?: string; message?: string; stack?: string };
  [field: string]: unknown;
}

const FILTERS = ['level', 'request', 'job', 'since'] as const;
/** Fields every line has, or that the row shows in their own place. */
const SHOWN_APART = new Set(['level', 'time', 'msg', 'pid', 'err']);
const LIVE_EVERY_MS = 3_000;

/** The log page's address for these filters (`#/log?level=warn&request=…`): sessions and jobs link here. */
export function logLink(filters: Partial<Record<(typeof FILTERS)[number], string>>): string {
  const query = new URLSearchParams();
  for (const key of FILTERS) if (filters[key]) query.set(key, filters[key]);
  return `${link('log')}${query.size > 0 ? `?${query.toString()}` : ''}`;
}

/** `#/log?…`: the proxy's log, newest first, filtered as `metaclaw logs` filters it; "Live" reads it again every few seconds. */
export function LogPage() {
  const query = routeQuery();
  const filters = Object.fromEntries(FILTERS.map((key) => [key, query.get(key) ?? ''])) as Record<(typeof FILTERS)[number], string>;
  const params = new URLSearchParams({ limit: '200' });
  for (const key of FILTERS) if (filters[key]) params.set(key, filters[key]);
  const loaded = useJson<{ data: LogEntry[] }>(`/v1/logs?${params.toString()}`);
  const [live, setLive] = useState(false);
  useEffect(() => {
    if (!live) return;
    const timer = setInterval(loaded.reload, LIVE_EVERY_MS);
    return () => clearInterval(timer);
  }, [live, loaded.reload]);
  const actions = html`<label class="live"><input type="checkbox" checked=${live} onChange=${() => setLive(!live)} /> Live</label>`;
  return html`<${PageFrame} title="Log" loaded=${loaded} actions=${actions}
    >${(data: { data: LogEntry[] }) => html`
      <${LogFilterForm} filters=${filters} key=${FILTERS.map((key) => filters[key]).join('|')} />
      <p class="muted">
        The ${data.data.length === 200 ? '200 newest lines' : `${data.data.length} line${data.data.length === 1 ? '' : 's'}`} of${' '}
        <code>metaclaw.log</code> and its rotated files that pass the filters, newest first (<code>metaclaw logs</code> prints the same in a terminal).
      </p>
      ${
        data.data.length === 0
          ? html`<p class="muted">No log line passes these filters.</p>`
          : html`<div class="table-wrap">
              <table class="log-lines" aria-label="Log lines">
                <thead>
                  <tr>
                    <th>Time</th>
                    <th>Level</th>
                    <th>Message</th>
                    <th>Details</th>
                  </tr>
                </thead>
                <tbody>
                  ${data.data.map((entry) => html`<${LogRow} entry=${entry} />`)}
                </tbody>
              </table>
            </div>`
      }
    `}<//
  >`;
}

function LogRow(props: { entry: LogEntry }) {
  const { entry } = props;
  if (entry.text !== undefined && entry.level === undefined)
    return html`<tr>
      <td>—</td>
      <td>—</td>
      <td colspan="2"><code>${entry.text}</code></td>
    </tr>`;
  const fields = Object.entries(entry).filter(([key]) => !SHOWN_APART.has(key));
  const tone = entry.level === 'error' || entry.level === 'fatal' ? 'tag bad' : entry.level === 'warn' ? 'tag warn' : 'tag';
  return html`<tr data-level=${entry.level}>
    <td class="nowrap"><time datetime=${entry.time}>${when(entry.time)}</time></td>
    <td><span class=${tone}>${entry.level}</span></td>
    <td>${entry.msg ?? ''}${entry.err?.message ? html`<div class="error">${entry.err.message}</div>` : null}</td>
    <td class="log-fields">
      ${fields.map(([key, value]) => html`<span class="log-field"><span class="muted">${key}</span> ${fieldValue(key, value)}</span> `)}
      ${
        entry.err?.stack
          ? html`<details>
              <summary>stack</summary>
              <pre>${entry.err.stack}</pre>
            </details>`
          : null
      }
    </td>
  </tr>`;
}

/** A field as text; a request id or job id links to the log of that request or job alone. */
function fieldValue(key: string, value: unknown) {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  if (key === 'request_id' && typeof value === 'string') return html`<a href=${logLink({ request: value })}>${text}</a>`;
  if (key === 'job' && typeof value === 'number') return html`<a href=${logLink({ job: String(value) })}>${text}</a>`;
  return html`<code>${text}</code>`;
}

/** The filters, as a form that changes the address (so a filtered view can be linked and reloaded). */
function LogFilterForm(props: { filters: Record<(typeof FILTERS)[number], string> }) {
  const [draft, setDraft] = useState(props.filters);
  const field = (key: (typeof FILTERS)[number]) => (event: Event) => setDraft({ ...draft, [key]: (event.target as HTMLInputElement).value.trim() });
  const submit = (event: Event) => {
    event.preventDefault();
    window.location.hash = logLink(draft);
  };
  return html`<form class="row log-filters" onSubmit=${submit} aria-label="Log filters">
    <label
      >Level
      <select name="level" value=${draft.level} onChange=${field('level')}>
        <option value="">all</option>
        ${CONFIG_LOG_LEVELS.map((level) => html`<option value=${level}>${level} and above</option>`)}
      </select></label
    >
    <label>Request <input name="request" value=${draft.request} onInput=${field('request')} placeholder="x-metaclaw-request-id" /></label>
    <label>Job <input name="job" value=${draft.job} onInput=${field('job')} placeholder="learning job id" size="8" /></label>
    <label>Since <input name="since" value=${draft.since} onInput=${field('since')} placeholder="30m, 2h, 1d or a date" size="12" /></label>
    <button type="submit">Show</button>
    ${FILTERS.some((key) => props.filters[key]) ? html`<a href=${logLink({})}>Clear</a>` : null}
  </form>`;
}
