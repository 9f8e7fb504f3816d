import type { ComponentChildren } from 'preact';
import { html } from './html.js';
import type { Loaded } from './api.js';

/** A page's frame: its title, and what to show while the data loads or when it failed. */
export function PageFrame<T>(props: { title: string; loaded: Loaded<T>; actions?: ComponentChildren; children: (data: T) => ComponentChildren }) {
  const { loaded } = props;
  return html`
    <section class="page">
      <div class="page-head">
        <h1>${props.title}</h1>
        <div class="actions">${props.actions}<button type="button" onClick=${loaded.reload} disabled=${loaded.loading}>Refresh</button></div>
      </div>
      ${loaded.error ? html`<p class="error" role="alert">Could not load: ${loaded.error}</p>` : null}
      ${loaded.data === undefined ? (loaded.error ? null : html`<p class="muted">Loading…</p>`) : props.children(loaded.data)}
    </section>
  `;
}

/** A figure with its label. */
export function Stat(props: { label: string; value: ComponentChildren; note?: ComponentChildren; tone?: 'bad' | 'good' }) {
  return html`<div class=${`stat ${props.tone ?? ''}`} data-stat=${props.label}>
    <div class="stat-label">${props.label}</div>
    <div class="stat-value">${props.value}</div>
    ${props.note ? html`<div class="stat-note">${props.note}</div>` : null}
  </div>`;
}
