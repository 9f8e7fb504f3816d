import { useJson } from '../api.js';
import { PageFrame } from '../components.js';
import { clip, when } from '../format.js';
import { html } from '../html.js';
import { link } from '../router.js';
import { ForgetAction, MemoryEditor, SupersedeAction } from './memory-actions.js';
import { MemoryTags } from './memory-tags.js';
import { listLink, type BriefMemory, type MemoryDetail } from './memory-types.js';

/** One memory: its text, where it came from, what replaced it or what it replaced, and what can be done to it. */
export function MemoryDetailPage(props: { id: string }) {
  const loaded = useJson<MemoryDetail>(`/v1/dashboard/memory/${encodeURIComponent(props.id)}`);
  return html`<${PageFrame} title="Memory" loaded=${loaded}
    >${(data: MemoryDetail) => {
      const { memory } = data;
      return html`
        <p><a href=${listLink({ scope: memory.scope })}>← all memories of ${memory.scope}</a></p>
        <article class="card memory-detail" data-memory=${memory.id}>
          <pre class="memory-full">${memory.content}</pre>
          <${MemoryTags} memory=${memory} />
          <dl class="memory-facts">
            <dt>id</dt>
            <dd><code>${memory.id}</code></dd>
            <dt>scope</dt>
            <dd>${memory.scope}</dd>
            <dt>observed</dt>
            <dd><time datetime=${memory.observed_at}>${when(memory.observed_at)}</time></dd>
            <dt>written</dt>
            <dd>
              <time datetime=${memory.created_at}>${when(memory.created_at)}</time>${', changed '}
              <time datetime=${memory.updated_at}>${when(memory.updated_at)}</time>
            </dd>
            <dt>recalled</dt>
            <dd>${memory.access_count} time(s)</dd>
            ${
              memory.speaker
                ? html`<dt>said by</dt>
                    <dd>${memory.speaker}</dd>`
                : null
            }
            ${
              memory.flagged
                ? html`<dt>never injected</dt>
                    <dd>${memory.flagged}</dd>`
                : null
            }
          </dl>
        </article>
        ${
          data.superseded_by
            ? html`<div class="banner warning" data-superseded-by=${data.superseded_by.id}>
                Superseded by
                ${data.superseded_by.unit ? html`<a href=${link('memory', data.superseded_by.id)}>${clip(data.superseded_by.unit.content, 160)}</a>` : html`<code>${data.superseded_by.id}</code> (since forgotten)`}
              </div>`
            : null
        }
        <${Provenance} source=${data.source} />
        ${
          data.supersedes.length > 0
            ? html`<h2>It replaced</h2>
                <${BriefList} items=${data.supersedes} />`
            : null
        }
        <h2>Change it</h2>
        ${memory.status === 'active' ? html`<${MemoryEditor} memory=${memory} types=${data.types} onSaved=${loaded.reload} />` : null}
        ${memory.status === 'active' ? html`<${SupersedeAction} memory=${memory} />` : html`<p class="muted">A superseded memory is kept for its history; it can only be forgotten.</p>`}
        <${ForgetAction} memory=${memory} />
      `;
    }}<//
  >`;
}

/** Where a memory came from: its session and the turns it was learned from, linked to the sessions page. */
function Provenance(props: { source: MemoryDetail['source'] }) {
  const { source } = props;
  return html`<section class="memory-provenance">
    <h2>Provenance</h2>
    ${source.session_id === null && source.turns.length === 0 ? html`<p class="muted">Written by hand or imported: no session or turn.</p>` : null}
    ${
      source.session_id !== null
        ? html`<p>
            Session${' '}
            ${
              source.session_recorded
                ? html`<a href=${link('sessions', source.session_id)} data-session=${source.session_id}>${source.session_id}</a>`
                : html`<code>${source.session_id}</code>
                    <span class="muted">(not recorded by this proxy: sent through <code>POST /v1/memory/ingest</code>, or past retention)</span>`
            }
          </p>`
        : null
    }
    ${
      source.turns.length > 0
        ? html`<ol class="memory-turns">
            ${source.turns.map(
              (turn) =>
                html`<li data-turn=${turn.id}>
                  ${
                    turn.recorded && turn.session_id
                      ? html`<a href=${link('sessions', turn.session_id)}>turn ${turn.seq}</a>${' '}
                          <time datetime=${turn.started_at ?? ''}>${when(turn.started_at)}</time>
                          ${turn.query ? html`<div class="muted">${clip(turn.query, 200)}</div>` : null}`
                      : html`<code>${turn.id}</code> <span class="muted">(no turn record)</span>`
                  }
                </li>`,
            )}
          </ol>`
        : null
    }
    ${source.more_turns > 0 ? html`<p class="muted">and ${source.more_turns} more turn(s).</p>` : null}
  </section>`;
}

function BriefList(props: { items: BriefMemory[] }) {
  return html`<ul class="memory-brief">
    ${props.items.map(
      (item) =>
        html`<li>
          <a href=${link('memory', item.id)}>${clip(item.content, 160)}</a> <span class="tag">${item.type}</span> <span class="tag">${item.status}</span>
        </li>`,
    )}
  </ul>`;
}
