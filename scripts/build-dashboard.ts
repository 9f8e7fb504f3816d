/**
 * Bundles the dashboard (dashboard/src, Preact + htm + uPlot) into dist/ui: one script, one
 * stylesheet and the page, all served by the proxy itself. Nothing is loaded from a CDN.
 * Part of `npm run build`.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = `${root}/dist/ui`;
mkdirSync(out, { recursive: true });
await build({
  entryPoints: { app: `${root}/dashboard/src/main.ts` },
  bundle: true,
  format: 'esm',
  target: 'es2020',
  minify: true,
  sourcemap: false,
  legalComments: 'eof',
  outdir: out,
  logLevel: 'warning',
});
copyFileSync(`${root}/dashboard/index.html`, `${out}/index.html`);
