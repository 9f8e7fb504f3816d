import { clip, count, ms, when } from '../format.js';
import { html } from '../html.js';
import { JobsTable } from './jobs-table.js';
import { logLink } from './log.js';
import type { Injected, Turn } from './session-types.js';

const score = (value: number | null): string => (value === null ? '—' : value.toFixed(3));

/** What was injected, in a line: shown on the closed turn so a reader knows which turns to open. */
function injectedSummary(injected: Injected | null): string {
  if (!injected) return 'nothing injected';
  const { skills, memories } = injected;
  return `${skills.length} skill${skills.length === 1 ? '' : 's'}, ${memories.length} ${memories.length === 1 ? 'memory' : 'memories'} injected`;
}

/** One turn: closed, its request and what was injected; open, everything the record has. */
export function TurnCard(props: { turn: Turn; open: boolean }) {
  const { turn } = props;
  const failed = turn.outcome !== 'ok';
  return html`<details class="card turn" open=${props.open} data-turn=${turn.id}>
    <summary>
      <span class="tag">#${turn.seq}</span> <span class="tag">${turn.side_request ? `side: ${turn.side_request}` : turn.turn_type}</span>${' '}
      <span class=${failed ? 'tag bad' : 'tag'}>${turn.outcome}${turn.status === null ? '' : ` ${turn.status}`}</span>${' '}
      <strong class="turn-query">${clip(turn.query, 160) || '(no user text)'}</strong>${' '}
      <span class="muted">${injectedSummary(turn.injected)}</span>
    </summary>
    <div class="turn-body">
      <p class="muted">
        ${when(turn.started_at)} · model <code>${turn.model ?? '—'}</code> · ${count(turn.input_tokens)} in / ${count(turn.output_tokens)} out tokens · first
        byte ${' '}${ms(turn.first_byte_ms)} · took
        ${ms(turn.duration_ms)}${turn.stream ? ' · streamed' : ''}${turn.attempts > 1 ? ` · ${turn.attempts} attempts` : ''}
      </p>
      ${turn.error ? html`<p class="error">${turn.error}</p>` : null}
      <h3>Request</h3>
      <pre class="turn-text">${turn.query ?? ''}${turn.query_truncated ? '\n(cut here: GET /v1/requests/<id> has it whole)' : ''}</pre>
      <h3>Answer${turn.finish_reason ? html` <span class="tag">${turn.finish_reason}</span>` : null}</h3>
      ${turn.response_text ? html`<pre class="turn-text">${turn.response_text}${turn.response_truncated ? '\n(cut here)' : ''}</pre>` : html`<p class="muted">No text.</p>`}
      ${turn.tool_calls.map(
        (call) =>
          html`<div class="tool-call">
            <code>${call.name}</code>
            <pre>${call.arguments}</pre>
          </div>`,
      )}
      <${InjectedContext} injected=${turn.injected} />
      <h3>Learning jobs of this turn</h3>
      ${turn.jobs.length === 0 ? html`<p class="muted">None.</p>` : html`<${JobsTable} jobs=${turn.jobs} />`}
      <p class="muted">Full record: <code>GET /v1/requests/${turn.id}</code> · <a href=${logLink({ request: turn.id })}>what the proxy logged</a></p>
    </div>
  </details>`;
}

/** Exactly what the proxy added: the skills and memories with the scores they were chosen by, then the text itself. */
function InjectedContext(props: { injected: Injected | null }) {
  const { injected } = props;
  if (!injected)
    return html`<h3>Injected</h3>
      <p class="muted">Nothing was added to this turn.</p>`;
  return html`<h3>
      Injected <span class="muted">(${count(injected.tokens)} tokens${injected.placement ? `, ${injected.placement.replace('_', ' ')}` : ''})</span>
    </h3>
    ${
      injected.skills.length === 0
        ? null
        : html`<div class="table-wrap">
            <table class="injected-skills">
              <thead>
                <tr>
                  <th>Skill${injected.skills_generation === null ? '' : ` (generation ${injected.skills_generation})`}</th>
                  <th class="num">Relevance</th>
                  <th class="num">Keyword</th>
                  <th class="num">Semantic</th>
                  <th>Shown</th>
                </tr>
              </thead>
              <tbody>
                ${injected.skills.map(
                  (skill) =>
                    html`<tr data-skill=${skill.name}>
                      <td>${skill.name}${skill.version === null ? '' : html` <span class="muted">v${skill.version}</span>`}</td>
                      <td class="num" data-score="relevance">${score(skill.relevance)}</td>
                      <td class="num">${score(skill.keyword)}</td>
                      <td class="num">${score(skill.semantic)}</td>
                      <td>${skill.full ? 'in full' : 'summary'}</td>
                    </tr>`,
                )}
              </tbody>
            </table>
          </div>`
    }
    ${
      injected.memories.length === 0
        ? null
        : html`<div class="table-wrap">
            <table class="injected-memories">
              <thead>
                <tr>
                  <th>Memory</th>
                  <th>Kind</th>
                  <th class="num">Score</th>
                  <th class="num">Relevance</th>
                </tr>
              </thead>
              <tbody>
                ${injected.memories.map(
                  (memory) =>
                    html`<tr data-memory=${memory.id}>
                      <td>${memory.content ?? html`<span class="muted">(forgotten since)</span>`} <span class="muted">${memory.id}</span></td>
                      <td>${memory.kind === 'core' ? 'standing rule' : 'recalled'}${memory.type ? html` <span class="tag">${memory.type}</span>` : null}</td>
                      <td class="num" data-score="score">${score(memory.score)}</td>
                      <td class="num">${score(memory.relevance)}</td>
                    </tr>`,
                )}
              </tbody>
            </table>
          </div>`
    }
    ${injected.sections
      .filter((section) => section.provider !== 'skills' && section.provider !== 'memory')
      .map((section) => html`<p class="muted">${section.provider}: ${count(section.tokens)} tokens</p>`)}
    ${injected.failures.map((failure) => html`<p class="error">${failure.provider} failed on this turn (the request went on without it): ${failure.error}</p>`)}
    ${
      injected.text === null
        ? injected.sections.length > 0
          ? html`<p class="muted">The injected text is no longer stored (payload retention).</p>`
          : null
        : html`<details class="injected-text">
            <summary>The injected text, in full</summary>
            <pre>${injected.text}</pre>
          </details>`
    }`;
}
