import { Hono, type Context } from 'hono';
import type { HttpBindings } from '@hono/node-server';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { AuthenticationError, NotFoundError, RequestError } from '../errors.js';
import { errorBodyText } from '../shared/api-errors.js';
import { storageErrorCode } from '../store/index.js';
import { sessionIdCandidates, type TurnDetail } from '../conversation/index.js';
import { clientLeft, readRequestBody } from './body.js';
import { formatForHeaders } from './error-response.js';
import { checkMemberRoute, memberSessionId, requireOwnScope } from './member-access.js';
import { memberScope } from '../team/index.js';
import { newRequestId } from './model-request.js';
import { passThroughRoutes } from './pass-through-routes.js';
import { responsesRoutes } from './responses-routes.js';
import { noteClientLeft, noteRejection } from './rejections.js';
import type { ProxyApp, ProxyDeps, ProxyEnv } from './types.js';

/** The non-model routes: health, status, models, request explanations, and groups added by other parts. */
export function createRoutes(deps: ProxyDeps): ProxyApp {
  const app: ProxyApp = new Hono();
  const rejected = (c: Context<ProxyEnv>, status: number, code: string, message: string) =>
    noteRejection(deps, { requestId: c.res.headers.get('x-metaclaw-request-id') ?? '', status, code, message, method: c.req.method, path: c.req.path });

  app.use('*', async (c, next) => {
    c.header('x-metaclaw-request-id', newRequestId());
    const path = c.req.path;
    if (path !== '/healthz' && path !== '/ui/login') {
      try {
        const { member } = deps.auth.identify(c.env.incoming.headers, c.req.method);
        if (member) checkMemberRoute(member, c.req.method, path);
        c.set('member', member);
      } catch (error) {
        // A browser opening a dashboard page without its cookie is sent to sign in, not shown JSON.
        if (error instanceof AuthenticationError && c.req.method === 'GET' && (path === '/ui' || path.startsWith('/ui/'))) return c.redirect('/ui/login', 303);
        throw error;
      }
    }
    await next();
  });
  // Every body is read here, once, by the model routes' reader: a compressed one decoded, the limit
  // counted in decoded bytes as they arrive (a chunked body declares no length), a slow one ended by
  // proxy.request_timeout_seconds. Hono's readers (json, text, parseBody) are then handed the decoded
  // bytes: @hono/node-server serves `incoming.rawBody` when one is set.
  // /healthz is open to anyone and reads no body: buffering one there would let a client without the
  // proxy key make the proxy hold proxy.max_body_mb per connection before its 404.
  app.use('*', async (c, next) => {
    const incoming: BufferedIncoming = c.env.incoming;
    if (c.req.path !== '/healthz' && carriesBody(incoming)) incoming.rawBody = await readRequestBody(incoming, deps.maxBodyBytes);
    await next();
  });

  app.get('/healthz', (c) => c.json({ ok: true }));
  app.get('/status', (c) => c.json(deps.statusReport()));
  // Prometheus text format; behind the same auth as /status.
  app.get('/metrics', async (c) => c.body(await deps.metrics.text(), 200, { 'content-type': deps.metrics.contentType }));

  const models = async (c: Context<ProxyEnv>) => {
    const headers = c.env.incoming.headers;
    const list = await deps.listModels(formatForHeaders(headers), deps.auth.check(headers, c.req.method));
    return c.body(list.body, list.status as ContentfulStatusCode, { 'content-type': 'application/json' });
  };
  app.get('/v1/models', models);
  app.get('/models', models);

  app.get('/v1/requests/:id', async (c) => {
    const id = c.req.param('id');
    await deps.pendingRecords.get(id);
    const turn = await deps.conversation.getTurn(id);
    const missing = () => new NotFoundError(`No recorded request with id ${id}.`, 'request_not_found');
    if (!turn) throw missing();
    requireOwnScope(c.get('member'), (await deps.conversation.getSession(turn.session_id))?.scope, missing);
    return c.json(explainTurn(turn));
  });

  // An agent (the OpenClaw plugin) says a session is over: learning that waits for session end runs now.
  app.post('/v1/sessions/:id/end', async (c) => {
    // Turns finished just before are still being written: ending the session first would let
    // their record reopen it.
    await Promise.allSettled([...deps.pendingRecords.values()]);
    const requested = c.req.param('id');
    // A member names their sessions as their agent knows them; they are stored behind the member's name.
    const member = c.get('member');
    const stored = (id: string) => (member ? memberSessionId(member, id) : id);
    let known: string | undefined;
    for (const id of sessionIdCandidates(requested)) {
      const session = await deps.conversation.getSession(stored(id));
      if (session !== undefined && (member === undefined || session.scope === memberScope(member))) {
        known = id;
        break;
      }
    }
    if (!known) throw new NotFoundError(`No session ${requested} has been seen by this proxy.`, 'session_not_found');
    const ended = await deps.conversation.endSession(stored(known), 'agent');
    return c.json({ session_id: known, ended, already_ended: !ended });
  });

  responsesRoutes(deps, app);
  passThroughRoutes(deps, app);
  for (const group of deps.routeGroups) group(app);

  for (const path of ['/v1/chat/completions', '/chat/completions', '/v1/messages', '/messages', '/v1/responses', '/responses']) {
    app.all(path, (c) => {
      const message = `Use POST for ${path}.`;
      rejected(c, 405, 'method_not_allowed', message);
      return c.body(errorBodyText(formatForHeaders(c.env.incoming.headers), { kind: 'invalid_request_error', message, code: 'method_not_allowed' }), 405, {
        'content-type': 'application/json',
        allow: 'POST',
      });
    });
  }

  app.notFound((c) => {
    const message = `No route ${c.req.method} ${c.req.path}.`;
    rejected(c, 404, 'route_not_found', message);
    return c.body(errorBodyText(formatForHeaders(c.env.incoming.headers), { kind: 'not_found_error', message, code: 'route_not_found' }), 404, {
      'content-type': 'application/json',
    });
  });

  app.onError((error, c) => {
    const format = formatForHeaders(c.env.incoming.headers);
    if (clientLeft(c.env.incoming, error)) {
      noteClientLeft(deps, { path: c.req.path });
      return c.body(null, 400);
    }
    if (error instanceof RequestError) {
      if (error.status < 500) rejected(c, error.status, error.code, error.message);
      return c.body(
        errorBodyText(format, { kind: error.kind, message: error.message, code: error.code, param: error.param ?? null }),
        error.status as ContentfulStatusCode,
        { 'content-type': 'application/json' },
      );
    }
    if (deps.health.report('api', error)) {
      const message = `MetaClaw cannot write its store right now (${storageErrorCode(error)}); nothing was changed. Serving goes on; recording and learning resume once the store can be written (see /status).`;
      return c.body(errorBodyText(format, { kind: 'overloaded_error', message, code: 'store_unavailable' }), 503, {
        'content-type': 'application/json',
        'retry-after': '30',
      });
    }
    deps.stats.proxyErrors++;
    deps.logger.error({ err: error, path: c.req.path }, 'route failed');
    return c.body(errorBodyText(format, { kind: 'api_error', message: 'Internal proxy error.', code: 'internal_error' }), 500, {
      'content-type': 'application/json',
    });
  });

  return app;
}

/** The Node request with the body already read, as @hono/node-server takes it. */
type BufferedIncoming = HttpBindings['incoming'] & { rawBody?: Buffer };

/** Whether a request has a body to read: GET and HEAD are never read, and a request with neither length nor chunks has none. */
function carriesBody(incoming: HttpBindings['incoming']): boolean {
  if (incoming.method === 'GET' || incoming.method === 'HEAD') return false;
  const { headers } = incoming;
  return headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
}

/** What arrived, what was added, what was forwarded, and how it ended. */
function explainTurn(turn: TurnDetail) {
  return {
    id: turn.id,
    session_id: turn.session_id,
    seq: turn.seq,
    turn_type: turn.turn_type,
    side_request: turn.side_request,
    started_at: new Date(turn.started_at).toISOString(),
    received: {
      format: turn.client_format,
      client_profile: turn.client_profile,
      headers: turn.received_headers,
      body: turn.received,
      user_request: turn.query,
    },
    added: turn.injected,
    stripped_keys: turn.stripped_keys,
    forwarded: { upstream: turn.upstream_name, format: turn.upstream_format, body: turn.forwarded },
    outcome: {
      status: turn.status,
      result: turn.outcome,
      error: turn.error,
      attempts: turn.attempts,
      model: turn.model,
      response: { text: turn.response_text, tool_calls: turn.tool_calls ? (JSON.parse(turn.tool_calls) as unknown) : [], finish_reason: turn.finish_reason },
      usage: { input_tokens: turn.input_tokens, output_tokens: turn.output_tokens },
      first_byte_ms: turn.first_byte_ms,
      duration_ms: turn.duration_ms,
    },
  };
}

export { AuthenticationError };
