import { z } from 'zod';
import type { ProxyApp } from '../proxy/index.js';
import { parse, wholeNumberParam } from '../proxy/route-body.js';
import { BROWSER_COOKIE, type ProxyAuth } from '../proxy/index.js';
import { DashboardAssets } from './assets.js';
import { loginPage } from './login-page.js';
import type { DashboardReads } from './reads.js';
import { sessionDetailQuery, sessionListQuery } from './sessions.js';

const learningQuery = z.object({ days: wholeNumberParam(1, 365, 'must be a whole number of days from 1 to 365').default(30) });
/** `q` searches the library; `page` is 1-based (past the last page shows the last). */
const skillsQuery = z.object({ q: z.string().optional(), page: wholeNumberParam(1, 999_999).default(1) });
/** How many of the skill log's last entries the Skills page shows. */
const skillLogQuery = z.object({ n: wholeNumberParam(1, 500).default(50) });
/** The pair of versions a skill's diff compares (each defaults to the last change's). */
const skillQuery = z.object({
  from: wholeNumberParam(1, 999_999, 'must be a version number').optional(),
  to: wholeNumberParam(1, 999_999, 'must be a version number').optional(),
});

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
    app.get('/v1/dashboard/skills', async (c) => {
      const query = parse(skillsQuery, c.req.query());
      return c.json(await reads.skills((query.q ?? '').slice(0, 500), query.page));
    });
    // Not under /skills/: "log" may be a skill's name.
    app.get('/v1/dashboard/skill-log', async (c) => c.json(await reads.skillLog(parse(skillLogQuery, c.req.query()).n)));
    app.get('/v1/dashboard/skills/:name', async (c) => c.json(await reads.skill(c.req.param('name'), parse(skillQuery, c.req.query()))));
  };
}
