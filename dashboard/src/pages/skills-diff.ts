import { html } from '../html.js';

/** A unified diff's lines, each marked as added, removed, a file header or a hunk header (put them in a `pre`). */
export function PatchLines(props: { patch: string }) {
  return html`${props.patch.split('\n').map((line) => html`<span class=${diffClass(line)}>${`${line}\n`}</span>`)}`;
}

function diffClass(line: string): string {
  if (line.startsWith('+++') || line.startsWith('---')) return 'diff-file';
  if (line.startsWith('+')) return 'diff-add';
  if (line.startsWith('-')) return 'diff-del';
  if (line.startsWith('@@')) return 'diff-hunk';
  return '';
}
