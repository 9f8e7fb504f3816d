import { useState } from 'preact/hooks';
import { send, useJson } from '../api.js';
import { PageFrame, Stat } from '../components.js';
import { ago, count, when } from '../format.js';
import { html } from '../html.js';
import { link, routeQuery } from '../router.js';
import { PatchLines } from './skills-diff.js';
import { judgeMean, type SkillDetail } from './skills-types.js';

/** The address of a skill's page, with the pair of versions its diff compares. */
function skillLink(name: string, from?: number | null, to?: number | null): string {
  const query = new URLSearchParams();
  if (from !== undefined && from !== null) query.set('from', String(from));
  if (to !== undefined && to !== null) query.set('to', String(to));
  const text = query.toString();
  return `${link('skills', name)}${text ? `?${text}` : ''}`;
}

/** One skill: figures, text, versions with a diff of the chosen pair, and the edit form. */
export function SkillDetailView(props: { name: string }) {
  const choice = routeQuery();
  const query = new URLSearchParams();
  for (const key of ['from', 'to']) {
    const value = choice.get(key);
    if (value) query.set(key, value);
  }
  const loaded = useJson<SkillDetail>(`/v1/dashboard/skills/${encodeURIComponent(props.name)}${query.size > 0 ? `?${query.toString()}` : ''}`);
  const [saved, setSaved] = useState<string | undefined>();
  return html`<${PageFrame} title=${props.name} loaded=${loaded} actions=${html`<a href=${link('skills')}>All skills</a>`}
    >${(data: SkillDetail) => html`
      ${
        data.credit?.flagged
          ? html`<div class="banner warning" role="alert">This skill keeps being shown in turns that go badly: consider editing or retiring it.</div>`
          : null
      }
      ${
        data.pending_proposals.length > 0
          ? html`<div class="banner warning">
              A proposal to change this skill is waiting: <a href=${link('skills')}>review #${data.pending_proposals.join(', #')}</a>.
            </div>`
          : null
      }
      ${saved ? html`<div class="banner ok" role="status">${saved}</div>` : null}
      ${
        data.exists
          ? html`<p>${data.description}</p>
              <div class="row">
                <span class="tag">${data.category}</span><span class="tag">${data.origin}</span
                ><span class="muted">${count(data.tokens)} tokens; updated ${when(data.updated_at)}</span>
              </div>`
          : html`<p class="error">This skill was removed; its recorded versions remain below (Restore brings one back).</p>`
      }
      ${
        data.exists
          ? html`<${RemoveControl}
              name=${data.name}
              onRemoved=${(generation: number) => {
                setSaved(`Removed ${data.name} (generation ${generation}); its versions stay, so it can be restored.`);
                loaded.reload();
              }}
            />`
          : null
      }
      <h2>Usage and outcomes</h2>
      <div class="stats">
        <${Stat} label="Version" value=${data.version === null ? '—' : `v${data.version}`} note=${`${data.versions.length} recorded`} />
        <${Stat} label="Injected" value=${count(data.credit?.injected ?? 0)} note=${`${count(data.credit?.full_body ?? 0)} with the full text`} />
        <${Stat} label="Sessions" value=${count(data.credit?.sessions ?? 0)} note=${`last used ${ago(data.credit?.last_used_at)}`} />
        <${Stat}
          label="Corrected / accepted"
          value=${`${data.credit?.corrected ?? 0} / ${data.credit?.accepted ?? 0}`}
          tone=${data.credit?.flagged ? 'bad' : undefined}
          note="by the user's next message"
        />
        <${Stat} label="Judge mean" value=${judgeMean(data.credit)} note=${`${count(data.credit?.judged ?? 0)} judged turns`} />
      </div>
      ${
        data.recent_sessions.length > 0
          ? html`<p class="muted">
              Recent sessions: ${data.recent_sessions.map((id, index) => html`${index > 0 ? ', ' : ''}<a href=${link('sessions', id)}>${id}</a>`)}
            </p>`
          : null
      }
      ${
        data.body === null
          ? null
          : html`<h2>Text</h2>
              <pre class="skill-body">${data.body}</pre>`
      }
      <h2>Versions</h2>
      <${Versions}
        data=${data}
        onChanged=${(text: string) => {
          setSaved(text);
          loaded.reload();
        }}
      />
      <${DiffView} key=${`${data.diff?.from ?? ''}-${data.diff?.to ?? ''}`} data=${data} />
      ${
        data.text === null
          ? null
          : html`<${EditForm}
              key=${data.version}
              name=${data.name}
              text=${data.text}
              onSaved=${(version: number, unchanged?: string) => {
                setSaved(unchanged ? `Unchanged: ${unchanged}` : `Saved ${data.name} v${version}.`);
                // Back to the default diff (the change just saved); the new address loads the page again.
                if (window.location.hash === skillLink(data.name)) loaded.reload();
                else window.location.hash = skillLink(data.name);
              }}
            />`
      }
    `}<//
  >`;
}

function Versions(props: { data: SkillDetail; onChanged: (text: string) => void }) {
  const { data } = props;
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const restore = async (version: number) => {
    setBusy(true);
    setError(undefined);
    try {
      const result = await send<{ version: number; generation: number }>('POST', `/v1/skills/${encodeURIComponent(data.name)}/revert`, { to: version });
      props.onChanged(`Restored v${version} of ${data.name} as v${result.version} (generation ${result.generation}).`);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    }
    setBusy(false);
  };
  // A removal records no text, and the current version needs no restoring.
  const restorable = (row: SkillDetail['versions'][number]) => row.action !== 'remove' && !(data.exists && row.version === data.version);
  if (data.versions.length === 0) return html`<p class="muted">No recorded versions (a file written by hand before MetaClaw saw it).</p>`;
  return html`<div class="table-wrap">
    <table class="versions">
      <thead>
        <tr>
          <th class="num">Version</th>
          <th>Change</th>
          <th class="num">Generation</th>
          <th>Source</th>
          <th>When</th>
          <th></th>
          <th></th>
        </tr>
      </thead>
      <tbody>
        ${data.versions.map(
          (row, index) =>
            html`<tr data-version=${row.version}>
              <td class="num">v${row.version}</td>
              <td>${row.action}</td>
              <td class="num">${row.generation}</td>
              <td>${row.source ?? '—'}</td>
              <td>${when(row.created_at)}</td>
              <td>${index > 0 ? html`<a href=${skillLink(data.name, data.versions[index - 1]!.version, row.version)}>diff</a>` : null}</td>
              <td>${restorable(row) ? html`<button type="button" disabled=${busy} onClick=${() => void restore(row.version)}>Restore</button>` : null}</td>
            </tr>`,
        )}
      </tbody>
    </table>
    ${error ? html`<p class="error" role="alert">${error}</p>` : null}
  </div>`;
}

/** Remove the skill from the library after a confirmation (`DELETE /v1/skills/{name}`, as `metaclaw skills remove`). */
function RemoveControl(props: { name: string; onRemoved: (generation: number) => void }) {
  const [asking, setAsking] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const remove = async () => {
    setError(undefined);
    try {
      const result = await send<{ generation: number }>('DELETE', `/v1/skills/${encodeURIComponent(props.name)}`);
      props.onRemoved(result.generation);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    }
  };
  if (!asking) return html`<div class="row"><button type="button" class="danger" onClick=${() => setAsking(true)}>Remove…</button></div>`;
  return html`<div class="banner warning" role="group" aria-label="Confirm removal">
    Remove <strong>${props.name}</strong> from the library? It is no longer injected; its versions stay, so it can be restored.
    <div class="row">
      <button type="button" class="danger" onClick=${() => void remove()}>Remove ${props.name}</button>
      <button type="button" onClick=${() => setAsking(false)}>Cancel</button>
    </div>
    ${error ? html`<p class="error" role="alert">${error}</p>` : null}
  </div>`;
}

/** The chosen pair (From / To) and their unified diff, computed by the server for this address. */
function DiffView(props: { data: SkillDetail }) {
  const { data } = props;
  const [from, setFrom] = useState(String(data.diff?.from ?? ''));
  const [to, setTo] = useState(String(data.diff?.to ?? ''));
  if (!data.diff) return null;
  const options = () => data.versions.map((row) => html`<option value=${String(row.version)}>v${row.version} (${row.action})</option>`);
  const compare = (event: Event) => {
    event.preventDefault();
    window.location.hash = skillLink(data.name, from ? Number(from) : null, to ? Number(to) : null);
  };
  return html`<section class="skill-diff">
    <h2>Diff</h2>
    <form class="row" onSubmit=${compare}>
      <label
        >From
        <select name="from" value=${from} onChange=${(event: Event) => setFrom((event.target as HTMLSelectElement).value)}>
          <option value="">nothing</option>
          ${options()}
        </select></label
      >
      <label
        >To
        <select name="to" value=${to} onChange=${(event: Event) => setTo((event.target as HTMLSelectElement).value)}>
          ${options()}
        </select></label
      >
      <button type="submit">Compare</button>
    </form>
    ${
      data.diff.problem
        ? html`<p class="error">${data.diff.problem}</p>`
        : html`<pre class="diff" data-from=${data.diff.from ?? 0} data-to=${data.diff.to}>
<${PatchLines} patch=${data.diff.patch ?? ''} /></pre>`
    }
  </section>`;
}

/** The whole SKILL.md as on disk; saving writes it as a new version (PUT /v1/skills/<name>), unless it says what the current one does. */
function EditForm(props: { name: string; text: string; onSaved: (version: number, unchanged?: string) => void }) {
  const [text, setText] = useState(props.text);
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const write = async (force: boolean) => {
    setBusy(true);
    setError(undefined);
    try {
      const result = await send<{ version: number; action: string; message?: string }>(
        'PUT',
        `/v1/skills/${encodeURIComponent(props.name)}`,
        force ? { text, force } : { text },
      );
      // A text that says what the current version does (only its bookkeeping lines edited) writes no version.
      props.onSaved(result.version, result.action === 'unchanged' ? result.message : undefined);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
      setBusy(false);
    }
  };
  // As `metaclaw skills add --force`: the person read the text and trusts it (it is still escaped when injected).
  const suspicious = error?.includes('reads like a prompt injection') ?? false;
  return html`<form
    class="skill-edit"
    onSubmit=${(event: Event) => {
      event.preventDefault();
      void write(false);
    }}
  >
    <h2>Edit</h2>
    <p class="muted">The whole SKILL.md: frontmatter (name, description, category) and the Markdown body. Saving records a new version.</p>
    <label class="visually-hidden" for="skill-text">SKILL.md text</label>
    <textarea
      id="skill-text"
      spellcheck="false"
      value=${text}
      onInput=${(event: Event) => {
        setText((event.target as HTMLTextAreaElement).value);
        setError(undefined);
      }}
    ></textarea>
    ${error ? html`<p class="error" role="alert">${error}</p>` : null}
    <div class="row">
      <button type="submit" class="primary" disabled=${busy || text === props.text}>Save as a new version</button>
      ${suspicious ? html`<button type="button" class="danger" disabled=${busy} onClick=${() => void write(true)}>Save anyway: I trust this text</button>` : null}
      <button type="button" disabled=${busy || text === props.text} onClick=${() => setText(props.text)}>Discard changes</button>
    </div>
  </form>`;
}
