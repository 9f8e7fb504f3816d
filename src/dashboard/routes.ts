import { z } from 'zod';
import type { ProxyApp } from '../proxy/index.js';
import { parse } from '../proxy/route-body.js';
import { BROWSER_COOKIE, type ProxyAuth } from '../proxy/index.js';
import { DashboardAssets } from './assets.js';
import { loginPage } from './login-page.js';
import type { DashboardReads } from './reads.js';
import { sessionDetailQuery, sessionListQuery } from './sessions.js';

const DAYS = 'must be a whole number of days from 1 to 365';
const learningQuery = z.object({ days: z.coerce.number({ error: DAYS }).int(DAYS).min(1, DAYS).max(365, DAYS).default(30) });

/** Nothing a page loads may come from elsewhere; no page may be framed. */
const PAGE_POLICY = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

const PAGE_HEADERS = {
  'content-security-policy': PAGE_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/**
 * The dashboard: its pages at /ui (behind the proxy's auth: with a key configured, a browser signs
 * in once at /ui/login and holds a cookie) and one data route per page under /v1/dashboard, read
 * through the store's DashboardReads.
 */
export function dashboardRoutes(reads: DashboardReads, auth: ProxyAuth, assets = new DashboardAssets()): (app: ProxyApp) => void {
  return (app) => {
    app.get('/ui/login', (c) => c.html(loginPage(false), 200, PAGE_HEADERS));
    app.post('/ui/login', async (c) => {
      const form: Record<string, unknown> = await c.req.parseBody().catch(() => ({}));
      const key = typeof form['key'] === 'string' ? form['key'] : '';
      const token = auth.browserTokenFor(key);
      if (!token) return c.html(loginPage(true), 401, PAGE_HEADERS);
      return c.body(null, 303, {
        location: '/ui',
        'set-cookie': `${BROWSER_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Strict`,
        'cache-control': 'no-store',
      });
    });

    const page = () => {
      const index = assets.get('index.html');
      return index
        ? new Response(new Uint8Array(index.body), { headers: { ...PAGE_HEADERS, 'content-type': index.type } })
        : new Response('The dashboard is not built: run `npm run build` in the MetaClaw checkout, then restart the proxy.', {
            status: 503,
            headers: { ...PAGE_HEADERS, 'content-type': 'text/plain; charset=utf-8' },
          });
    };
    app.get('/ui', page);
    app.get('/ui/', page);
    app.get('/ui/assets/:file', (c) => {
      const asset = assets.get(c.req.param('file'));
      if (!asset || c.req.param('file') === 'index.html') return c.text('No such dashboard file.', 404, PAGE_HEADERS);
      return c.body(new Uint8Array(asset.body), 200, { ...PAGE_HEADERS, 'content-type': asset.type });
    });

    app.get('/v1/dashboard/overview', async (c) => c.json(await reads.overview()));
    app.get('/v1/dashboard/learning', async (c) => c.json(await reads.learning(parse(learningQuery, c.req.query()).days)));
    app.get('/v1/dashboard/sessions', async (c) => c.json(await reads.sessions(parse(sessionListQuery, c.req.query()))));
    app.get('/v1/dashboard/sessions/:id', async (c) => c.json(await reads.session(c.req.param('id'), parse(sessionDetailQuery, c.req.query()))));
    app.get('/v1/dashboard/memory', async (c) => c.json(await reads.memory(c.req.query())));
    app.get('/v1/dashboard/memory/:id', async (c) => c.json(await reads.memoryDetail(c.req.param('id'))));
    app.get('/v1/dashboard/skills', async (c) => c.json(await reads.skills((c.req.query('q') ?? '').slice(0, 500), pageNumber(c.req.query('page')))));
    app.get('/v1/dashboard/skills/:name', async (c) =>
      c.json(await reads.skill(c.req.param('name'), { from: versionNumber(c.req.query('from')), to: versionNumber(c.req.query('to')) })),
    );
  };
}

/** A list page from the page's query (1-based); anything else means the first. */
function pageNumber(value: string | undefined): number {
  return value !== undefined && /^[1-9]\d{0,5}$/.test(value) ? Number(value) : 1;
}

/** A version number from the page's query; anything else means "the default". */
function versionNumber(value: string | undefined): number | undefined {
  const number = Number(value);
  return value !== undefined && value !== '' && Number.isInteger(number) && number > 0 ? number : undefined;
}
