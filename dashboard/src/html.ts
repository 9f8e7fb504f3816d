import { h } from 'preact';
import htm from 'htm';

/** Markup as tagged templates: no JSX compile step, the same Preact underneath. */
export const html = htm.bind(h);
