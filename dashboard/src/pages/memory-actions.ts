import { useState } from 'preact/hooks';
import { send } from '../api.js';
import { html } from '../html.js';
import { link } from '../router.js';
import { listLink, scopeHeader, type ShownMemory } from './memory-types.js';

/** A change in flight, done, or refused (the API's own message). */
interface Outcome {
  busy: boolean;
  done?: string;
  error?: string;
}

/** Runs one change through the memory API and keeps its outcome for the form to show. */
function useChange(): [Outcome, (run: () => Promise<string | undefined>) => Promise<void>] {
  const [outcome, setOutcome] = useState<Outcome>({ busy: false });
  const start = async (run: () => Promise<string | undefined>) => {
    setOutcome({ busy: true });
    try {
      const done = await run();
      setOutcome(done === undefined ? { busy: false } : { busy: false, done });
    } catch (error) {
      setOutcome({ busy: false, error: error instanceof Error ? error.message : String(error) });
    }
  };
  return [outcome, start];
}

function OutcomeLine(props: { outcome: Outcome }) {
  const { outcome } = props;
  if (outcome.error) return html`<p class="error" role="alert">${outcome.error}</p>`;
  return outcome.done ? html`<p class="banner ok" role="status">${outcome.done}</p>` : null;
}

const valueOf = (event: Event) => (event.target as HTMLInputElement).value;
const checkedOf = (event: Event) => (event.target as HTMLInputElement).checked;

/** Edit in place: content, type, importance and flags, through `PATCH /v1/memory/{id}`. */
export function MemoryEditor(props: { memory: ShownMemory; types: string[]; onSaved: () => void }) {
  const { memory } = props;
  const [draft, setDraft] = useState({
    content: memory.content,
    type: memory.type,
    importance: String(memory.importance),
    core: memory.core,
    pinned: memory.pinned,
  });
  const [outcome, run] = useChange();
  const save = (event: Event) => {
    event.preventDefault();
    void run(async () => {
      await send(
        'PATCH',
        `/v1/memory/${encodeURIComponent(memory.id)}`,
        { content: draft.content, type: draft.type, importance: Number(draft.importance), core: draft.core, pinned: draft.pinned },
        scopeHeader(memory.scope),
      );
      props.onSaved();
      return 'Saved.';
    });
  };
  return html`<form class="card memory-form" data-action="edit" onSubmit=${save}>
    <h3>Edit</h3>
    <label
      >Content<textarea
        name="content"
        rows="4"
        required
        value=${draft.content}
        onInput=${(event: Event) => setDraft({ ...draft, content: valueOf(event) })}
      ></textarea>
    </label>
    <div class="row">
      <label>
        Type
        <select name="type" value=${draft.type} onChange=${(event: Event) => setDraft({ ...draft, type: valueOf(event) as ShownMemory['type'] })}>
          ${props.types.map((name) => html`<option value=${name}>${name}</option>`)}
        </select>
      </label>
      <label>
        Importance
        <input
          name="importance"
          type="number"
          min="0"
          max="1"
          step="0.05"
          required
          value=${draft.importance}
          onInput=${(event: Event) => setDraft({ ...draft, importance: valueOf(event) })}
        />
      </label>
      <label class="memory-check"
        ><input name="core" type="checkbox" checked=${draft.core} onChange=${(event: Event) => setDraft({ ...draft, core: checkedOf(event) })} /> core</label
      >
      <label class="memory-check"
        ><input name="pinned" type="checkbox" checked=${draft.pinned} onChange=${(event: Event) => setDraft({ ...draft, pinned: checkedOf(event) })} />
        pinned</label
      >
    </div>
    <button type="submit" class="primary" disabled=${outcome.busy}>Save changes</button>
    <${OutcomeLine} outcome=${outcome} />
  </form>`;
}

/** Replace by new content: the old unit stays, superseded and linked (`POST /v1/memory/{id}/supersede`). */
export function SupersedeAction(props: { memory: ShownMemory }) {
  const { memory } = props;
  const [content, setContent] = useState('');
  const [outcome, run] = useChange();
  const supersede = (event: Event) => {
    event.preventDefault();
    void run(async () => {
      const answer = await send<{ memory: { id: string } }>(
        'POST',
        `/v1/memory/${encodeURIComponent(memory.id)}/supersede`,
        { content },
        scopeHeader(memory.scope),
      );
      window.location.hash = link('memory', answer.memory.id);
      return undefined;
    });
  };
  return html`<form class="card memory-form" data-action="supersede" onSubmit=${supersede}>
    <h3>Supersede</h3>
    <p class="muted">Write what holds now. This memory is kept for its history, marked superseded and linked to the new one (same scope, type and flags).</p>
    <label
      >New content<textarea name="replacement" rows="3" required value=${content} onInput=${(event: Event) => setContent(valueOf(event))}></textarea>
    </label>
    <button type="submit" disabled=${outcome.busy || content.trim() === ''}>Supersede</button>
    <${OutcomeLine} outcome=${outcome} />
  </form>`;
}

/** Forget for good, after a confirmation: the unit is deleted and its text scrubbed from its turns. */
export function ForgetAction(props: { memory: ShownMemory }) {
  const { memory } = props;
  const [confirming, setConfirming] = useState(false);
  const [outcome, run] = useChange();
  const forget = () =>
    run(async () => {
      await send('DELETE', `/v1/memory/${encodeURIComponent(memory.id)}`, undefined, scopeHeader(memory.scope));
      window.location.hash = listLink({ scope: memory.scope, forgotten: memory.id });
      return undefined;
    });
  return html`<div class="card memory-form" data-action="forget">
    <h3>Forget</h3>
    ${
      confirming
        ? html`<div class="banner warning" role="alertdialog" aria-label="Confirm forgetting">
            <p>
              Forget this memory for good? It is deleted, not archived, and its text is also removed from the recorded turns it came from or was injected into.
              This cannot be undone.
            </p>
            <div class="row">
              <button type="button" class="danger" onClick=${forget} disabled=${outcome.busy}>Forget for good</button>
              <button type="button" onClick=${() => setConfirming(false)} disabled=${outcome.busy}>Cancel</button>
            </div>
          </div>`
        : html`<button type="button" class="danger" onClick=${() => setConfirming(true)}>Forget…</button>`
    }
    <${OutcomeLine} outcome=${outcome} />
  </div>`;
}
