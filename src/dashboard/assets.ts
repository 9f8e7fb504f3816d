import { readFileSync } from 'node:fs';

/** Where `npm run build` writes the bundled pages (scripts/build-dashboard.ts). */
const BUILT_DIR = new URL('../ui/', import.meta.url);

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json',
};

export interface Asset {
  body: Buffer;
  type: string;
}

/**
 * The dashboard's files, read once at start (a few hundred KB): served from memory, never from a
 * path a request names, so no request can read another file.
 */
export class DashboardAssets {
  private readonly files = new Map<string, Asset>();

  constructor(dir: URL = BUILT_DIR) {
    for (const name of ['index.html', 'app.js', 'app.css']) {
      try {
        this.files.set(name, { body: readFileSync(new URL(name, dir)), type: TYPES[name.slice(name.lastIndexOf('.'))] ?? 'application/octet-stream' });
      } catch {
        // not built: `built` says so and the page explains it
      }
    }
  }

  get built(): boolean {
    return this.files.has('index.html') && this.files.has('app.js');
  }

  get(name: string): Asset | undefined {
    return this.files.get(name);
  }
}
