import { useState } from 'preact/hooks';
import { send, useJson } from '../api.js';
import { PageFrame } from '../components.js';
import { clip, count, when } from '../format.js';
import { html } from '../html.js';
import { link, routeQuery } from '../router.js';
import type { PageProps } from './index.js';
import { SkillDetailView } from './skill-detail.js';
import { SkillLogSection } from './skill-log.js';
import { PatchLines } from './skills-diff.js';
import { judgeMean, type Proposal, type SkillList } from './skills-types.js';

/** `#/skills?q=…` is the library and its pending proposals; `#/skills/<name>` one skill. */
export function SkillsPage(props: PageProps) {
  const [name] = props.params;
  return name === undefined ? html`<${SkillListView} />` : html`<${SkillDetailView} name=${name} />`;
}

function SkillListView() {
  const query = routeQuery().get('q') ?? '';
  const page = routeQuery().get('page') ?? '';
  const loaded = useJson<SkillList>(`/v1/dashboard/skills${listQuery(query, page)}`);
  const [message, setMessage] = useState<{ ok: boolean; text: string } | undefined>();
  // Counts the proposals decided on this page: the evolution log reads them again.
  const [decided, setDecided] = useState(0);
  return html`<${PageFrame} title="Skills" loaded=${loaded}
    >${(data: SkillList) => html`
      <${SearchBox} query=${query} />
      ${message ? html`<div class=${`banner ${message.ok ? 'ok' : 'warning'}`} role="status">${message.text}</div>` : null}
      ${
        data.invalid_files.length > 0
          ? html`<div class="banner warning" role="alert">
              ${data.invalid_files.length} SKILL.md file(s) are invalid and skipped (<code>metaclaw skills doctor</code> says why).
            </div>`
          : null
      }
      <h2>Waiting for review (${data.proposals.length})</h2>
      ${
        data.proposals.length === 0
          ? html`<p class="muted">
              ${
                data.review === 'manual'
                  ? 'No proposals waiting. Skills learned from ended sessions appear here until you approve or reject them.'
                  : 'skills.review is auto: learned skills are written at once, nothing waits here.'
              }
            </p>`
          : data.proposals.map(
              (proposal) =>
                html`<${ProposalCard}
                  key=${proposal.id}
                  proposal=${proposal}
                  onDone=${(text: string, ok: boolean) => {
                    setMessage({ ok, text });
                    if (ok) loaded.reload();
                    if (ok) setDecided((value) => value + 1);
                  }}
                />`,
            )
      }
      <h2>Library</h2>
      <p class="muted">
        ${data.query ? `${data.matched} of ${data.total} skills match “${data.query}”` : `${data.total} skills`}, generation
        ${data.generation}${data.pages > 1 ? `; ${data.first}–${data.first + data.skills.length - 1} shown` : ''}.
      </p>
      <div class="table-wrap">
        <table class="skills-table">
          <thead>
            <tr>
              <th>Skill</th>
              <th>Category</th>
              <th class="num">Version</th>
              <th>Origin</th>
              <th class="num">Injected</th>
              <th class="num">Sessions</th>
              <th class="num">Corrected / accepted</th>
              <th class="num">Judge</th>
            </tr>
          </thead>
          <tbody>
            ${data.skills.map(
              (skill) =>
                html`<tr data-skill=${skill.name}>
                  <td class="skill-cell">
                    <a class="skill-name" href=${link('skills', skill.name)}>${skill.name}</a
                    >${skill.credit?.flagged ? html` <span class="tag bad-tag">flagged</span>` : null}
                    <div class="muted skill-description">${clip(skill.description, 160)}</div>
                  </td>
                  <td>${skill.category}</td>
                  <td class="num">v${skill.version}</td>
                  <td><span class="tag">${skill.origin}</span></td>
                  <td class="num">${count(skill.credit?.injected ?? 0)}</td>
                  <td class="num">${count(skill.credit?.sessions ?? 0)}</td>
                  <td class="num">${skill.credit ? `${skill.credit.corrected} / ${skill.credit.accepted}` : '—'}</td>
                  <td class="num">${judgeMean(skill.credit)}</td>
                </tr>`,
            )}
          </tbody>
        </table>
      </div>
      ${
        data.pages > 1
          ? html`<nav class="row" aria-label="Library pages">
              ${data.page > 1 ? html`<a href=${`${link('skills')}${listQuery(query, String(data.page - 1))}`}>Previous skills</a>` : null}
              <span class="muted">page ${data.page} of ${data.pages}</span>
              ${data.page < data.pages ? html`<a href=${`${link('skills')}${listQuery(query, String(data.page + 1))}`}>Next skills</a>` : null}
            </nav>`
          : null
      }
      <${SkillLogSection} refresh=${decided} />
    `}<//
  >`;
}

/** The list's query string: the search and the page (the first page needs none). */
function listQuery(q: string, page: string): string {
  const parts = [q ? `q=${encodeURIComponent(q)}` : '', page && page !== '1' ? `page=${encodeURIComponent(page)}` : ''].filter(Boolean);
  return parts.length > 0 ? `?${parts.join('&')}` : '';
}

/** The search box; the query lives in the address, so a search can be bookmarked and reloaded. */
function SearchBox(props: { query: string }) {
  const [text, setText] = useState(props.query);
  const submit = (event: Event) => {
    event.preventDefault();
    const q = text.trim();
    window.location.hash = `${link('skills')}${listQuery(q, '')}`;
  };
  return html`<form class="row skill-search" role="search" onSubmit=${submit}>
    <label class="visually-hidden" for="skill-query">Search skills</label>
    <input
      id="skill-query"
      type="search"
      placeholder="Search by what a skill is for…"
      value=${text}
      onInput=${(event: Event) => setText((event.target as HTMLInputElement).value)}
    />
    <button type="submit">Search</button>
    ${props.query ? html`<a href=${link('skills')}>Clear</a>` : null}
  </form>`;
}

function ProposalCard(props: { proposal: Proposal; onDone: (message: string, ok: boolean) => void }) {
  const { proposal } = props;
  const [busy, setBusy] = useState(false);
  const decide = async (decision: 'approve' | 'reject') => {
    setBusy(true);
    try {
      const result = await send<{ name: string; version?: number }>('POST', `/v1/skills/proposals/${proposal.id}/${decision}`);
      props.onDone(
        decision === 'approve' ? `Approved #${proposal.id}: ${result.name} is now v${result.version ?? '?'}.` : `Rejected #${proposal.id} (${proposal.name}).`,
        true,
      );
    } catch (error) {
      props.onDone(`Could not ${decision} #${proposal.id}: ${error instanceof Error ? error.message : String(error)}`, false);
      setBusy(false);
    }
  };
  return html`<article class="card proposal" data-proposal=${proposal.id}>
    <div class="row">
      <strong>#${proposal.id} ${proposal.action} ${proposal.name}</strong>
      <span class="tag">${proposal.category}</span>
      <span class="muted">${proposal.session_id ? `from session ${proposal.session_id}, ` : ''}${when(proposal.created_at)}</span>
    </div>
    <p>${proposal.description}</p>
    ${proposal.reason ? html`<p class="muted">Why: ${proposal.reason}</p>` : null}
    ${
      proposal.evidence.length > 0
        ? html`<ul class="evidence">
            ${proposal.evidence.map((line) => html`<li>${line}</li>`)}
          </ul>`
        : null
    }
    ${
      proposal.patch
        ? html`<details open>
            <summary>Changes to ${proposal.name} v${proposal.current_version}</summary>
            <pre class="diff"><${PatchLines} patch=${proposal.patch} /></pre>
          </details>`
        : html`<details>
            <summary>Proposed text</summary>
            <pre>${proposal.body}</pre>
          </details>`
    }
    <div class="row">
      <button type="button" class="primary" disabled=${busy} onClick=${() => decide('approve')}>Approve</button>
      <button type="button" class="danger" disabled=${busy} onClick=${() => decide('reject')}>Reject</button>
    </div>
  </article>`;
}
