import { useState } from 'preact/hooks';
import { getBlob, useJson } from '../api.js';
import { PageFrame } from '../components.js';
import { clip, when } from '../format.js';
import { html } from '../html.js';
import { link, routeQuery } from '../router.js';
import type { PageProps } from './index.js';
import { MemoryDetailPage } from './memory-detail.js';
import { MemoryTags } from './memory-tags.js';
import { listLink, scopeHeader, type MemoryList } from './memory-types.js';

/** `#/memory?…` lists and searches a scope; `#/memory/<id>` shows one memory. */
export function MemoryPage(props: PageProps) {
  const id = props.params[0];
  // Keyed by id: forms never carry one memory's draft over to another's page.
  return id ? html`<${MemoryDetailPage} key=${id} id=${id} />` : html`<${MemoryListPage} />`;
}

function MemoryListPage() {
  const query = routeQuery();
  const params = new URLSearchParams();
  for (const key of ['scope', 'q', 'type', 'superseded', 'before', 'limit']) {
    const value = query.get(key);
    if (value) params.set(key, value);
  }
  const loaded = useJson<MemoryList>(`/v1/dashboard/memory${params.size > 0 ? `?${params.toString()}` : ''}`);
  const forgotten = query.get('forgotten');
  return html`<${PageFrame} title="Memory" loaded=${loaded}
    >${(data: MemoryList) => html`
      ${forgotten ? html`<div class="banner ok" role="status">Memory <code>${forgotten}</code> was forgotten for good.</div>` : null}
      <${SearchForm} data=${data} key=${`${data.scope ?? ''}|${data.q}|${data.type ?? ''}|${String(data.superseded)}`} />
      ${
        data.scope === null
          ? html`<p class="muted">
              No memories yet. They are written as turns arrive (raw turns), by the extractor, from rules the user states, or by hand (<code
                >POST /v1/memory</code
              >).
            </p>`
          : html`
              <div class="row memory-summary">
                <span class="muted">
                  ${data.q ? `${data.results.length} match(es) for “${data.q}”` : `${listed(data)} memor${data.results.length === 1 ? 'y' : 'ies'}`}
                  ${' in '}<strong>${data.scope}</strong>${data.type ? ` of type ${data.type}` : ''}.
                </span>
                <${ExportButton} scope=${data.scope} />
              </div>
              ${data.results.length === 0 ? html`<p class="muted">Nothing found.</p>` : null}
              <ul class="memory-results">
                ${data.results.map(
                  (memory) =>
                    html`<li class="card" data-memory=${memory.id}>
                      <a class="memory-content" href=${link('memory', memory.id)}>${clip(memory.content, 280)}</a>
                      <${MemoryTags} memory=${memory} score=${memory.score} />
                      <div class="muted memory-dates">
                        observed <time datetime=${memory.observed_at}>${when(memory.observed_at)}</time>, written${' '}
                        <time datetime=${memory.created_at}>${when(memory.created_at)}</time>
                      </div>
                    </li>`,
                )}
              </ul>
              <${MorePages} data=${data} />
            `
      }
    `}<//
  >`;
}

/** How the listed units are described: the newest page, an older one, or all there are. */
function listed(data: MemoryList): string {
  if (data.before) return `${data.results.length} older`;
  return data.next ? `The ${data.results.length} newest` : `All ${data.results.length}`;
}

/** Older pages of the newest units (a cursor), or more hits of a search (a longer ranked list). */
function MorePages(props: { data: MemoryList }) {
  const { data } = props;
  const same = { scope: data.scope, q: data.q, type: data.type, superseded: data.superseded };
  const links = [
    data.before ? html`<a href=${listLink(same)}>Newest memories</a>` : null,
    data.next ? html`<a href=${listLink({ ...same, before: data.next })}>Older memories</a>` : null,
    data.more ? html`<a href=${listLink({ ...same, limit: data.limit + 50 })}>Show more matches</a>` : null,
  ].filter((item) => item !== null);
  return links.length > 0 ? html`<nav class="row" aria-label="More memories">${links}</nav>` : null;
}

/** Scope, query, type and whether to show superseded units; submitting changes the address (and so the data). */
function SearchForm(props: { data: MemoryList }) {
  const { data } = props;
  const [scope, setScope] = useState(data.scope ?? '');
  const [q, setQ] = useState(data.q);
  const [type, setType] = useState(data.type ?? '');
  const [superseded, setSuperseded] = useState(data.superseded);
  const value = (event: Event) => (event.target as HTMLInputElement).value;
  const submit = (event: Event) => {
    event.preventDefault();
    window.location.hash = listLink({ scope, q: q.trim(), type, superseded });
  };
  return html`<form class="memory-search" role="search" onSubmit=${submit}>
    <label>
      Scope
      <select name="scope" value=${scope} onChange=${(event: Event) => setScope(value(event))}>
        ${data.scopes.map((item) => html`<option value=${item.scope}>${item.scope} (${item.active} active${item.superseded ? `, ${item.superseded} superseded` : ''})</option>`)}
      </select>
    </label>
    <label class="memory-query">
      Search
      <input type="search" name="q" value=${q} placeholder="empty: the newest memories" onInput=${(event: Event) => setQ(value(event))} />
    </label>
    <label>
      Type
      <select name="type" value=${type} onChange=${(event: Event) => setType(value(event))}>
        <option value="">any type</option>
        ${data.types.map((name) => html`<option value=${name}>${name}</option>`)}
      </select>
    </label>
    <label class="memory-check">
      <input type="checkbox" checked=${superseded} onChange=${(event: Event) => setSuperseded((event.target as HTMLInputElement).checked)} />
      include superseded
    </label>
    <button type="submit" class="primary">Search</button>
  </form>`;
}

/** The scope's memories as JSONL (`GET /v1/memory/export` in that scope), saved by the browser. */
function ExportButton(props: { scope: string }) {
  const [state, setState] = useState<{ busy: boolean; error?: string }>({ busy: false });
  const exportScope = async () => {
    setState({ busy: true });
    try {
      const blob = await getBlob('/v1/memory/export', scopeHeader(props.scope));
      const url = URL.createObjectURL(blob);
      const anchor = document.createElement('a');
      anchor.href = url;
      anchor.download = `metaclaw-memory-${props.scope.replace(/[^\w.-]+/g, '_')}.jsonl`;
      anchor.click();
      // The download has its copy once the click is handled.
      setTimeout(() => URL.revokeObjectURL(url), 1_000);
      setState({ busy: false });
    } catch (error) {
      setState({ busy: false, error: error instanceof Error ? error.message : String(error) });
    }
  };
  return html`<span class="memory-export">
    <button type="button" onClick=${exportScope} disabled=${state.busy}>Export JSONL</button>
    ${state.error ? html`<span class="error" role="alert">Export failed: ${state.error}</span>` : null}
  </span>`;
}
