import { html } from '../html.js';
import type { ShownMemory } from './memory-types.js';

/** The flags and figures of a memory, as small tags. */
export function MemoryTags(props: { memory: ShownMemory; score?: number | null }) {
  const { memory } = props;
  return html`<div class="row memory-tags">
    <span class="tag" data-tag="type">${memory.type}</span>
    <span class=${`tag ${memory.status === 'superseded' ? 'memory-superseded' : ''}`} data-tag="status">${memory.status}</span>
    <span class="tag" title="importance">importance ${memory.importance}</span>
    ${memory.core ? html`<span class="tag" data-tag="core" title="a standing instruction, injected on every turn of the scope">core</span>` : null}
    ${memory.pinned ? html`<span class="tag" data-tag="pinned" title="never removed by housekeeping">pinned</span>` : null}
    ${memory.flagged ? html`<span class="tag memory-superseded" title=${memory.flagged}>never injected</span>` : null}
    <span class="tag" title="how it was written">${memory.origin}</span>
    ${props.score !== undefined && props.score !== null ? html`<span class="tag" title="search score">score ${props.score}</span>` : null}
  </div>`;
}
