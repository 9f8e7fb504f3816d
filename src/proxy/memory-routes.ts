import type { Context } from 'hono';
import { z } from 'zod';
import { bounded, deriveScope, readTurnSignals } from '../conversation/index.js';
import { BadRequestError, ConflictError, NotFoundError, PermissionError } from '../errors.js';
import {
  DEFAULT_MEMORY_TYPE,
  ingestTurnSchema,
  MAX_INGEST_TURNS,
  MEMORY_TYPES,
  memoryContentSchema,
  presentMemory,
  SHARED_SCOPE,
  type MemoryApi,
  type MemoryUnit,
} from '../memory/index.js';
import { memberScope } from '../team/index.js';
import { ADMIN_HEADER, type AdminToken } from './admin-token.js';
import { parse, readJson } from './route-body.js';
import type { ProxyApp, ProxyEnv } from './types.js';

const typeSchema = z.enum(MEMORY_TYPES);

const ingestSchema = z.object({
  // An empty scope is refused by scopeFor as `scope_empty`, as the query parameter is.
  scope: z.string().optional(),
  session_id: z.string().min(1),
  turns: z
    .array(ingestTurnSchema)
    .min(1, 'must contain at least one turn')
    // Zod checks the length before it reads a turn (300,000 turns refused in ~2 ms); nothing is stored.
    .max(
      MAX_INGEST_TURNS,
      `at most ${MAX_INGEST_TURNS} turns in one request: split the upload into several requests (the same session_id continues the session)`,
    ),
});

const searchSchema = z.object({
  query: z.string().min(1),
  scope: z.string().optional(),
  limit: z.number().int().min(1).max(100).optional(),
  types: z.array(typeSchema).optional(),
  include_superseded: z.boolean().optional(),
});

const addSchema = z.object({
  scope: z.string().optional(),
  // Optional, as for `metaclaw memory add` and MCP's memory_add: a fact unless said otherwise.
  type: typeSchema.optional(),
  content: memoryContentSchema,
  importance: z.number().min(0).max(1).optional(),
  core: z.boolean().optional(),
  pinned: z.boolean().optional(),
});

const patchSchema = z
  .object({
    content: memoryContentSchema.optional(),
    type: typeSchema.optional(),
    importance: z.number().min(0).max(1).optional(),
    core: z.boolean().optional(),
    pinned: z.boolean().optional(),
  })
  .refine((patch) => Object.keys(patch).length > 0, 'nothing to change: give content, type, importance, core or pinned');

/** The unit that replaces another: new content, the rest kept from the old unit unless given. */
const supersedeSchema = addSchema.omit({ scope: true }).partial({ type: true });

/** Who is asking: the scope their headers give (as on model requests), and whether they hold the admin token. */
interface Caller {
  scope: string;
  admin: boolean;
  member: boolean;
}

/** Reading reaches the shared scope too; writing, only the caller's own scope (or any, with the admin token). */
type Access = 'read' | 'write';

/**
 * The memory HTTP API (authenticated like every route but /healthz). Scopes are an access boundary:
 * every route works in the caller's own scope, derived from `X-Memory-Scope`, `X-User-Id` and
 * `X-Workspace-Id` exactly as for model requests. A unit of another scope answers 404 like a missing
 * one; naming another scope (body or query `scope`) is refused. The admin token lifts both limits.
 * The shared scope (`team`) can be read by every caller and written only with the owner's access.
 */
export function memoryRoutes(api: MemoryApi, defaultScope: string, adminToken: AdminToken): (app: ProxyApp) => void {
  return (app) => {
    const callerOf = (c: Context<ProxyEnv>): Caller => {
      const headers = c.env.incoming.headers;
      // Read first: a token that does not match is refused whoever sends it.
      const admin = adminToken.grants(headers);
      // A member's key fixes their scope; headers cannot widen it, and the admin token is not theirs to hold.
      const member = c.get('member');
      if (member) return { scope: memberScope(member), admin: false, member: true };
      return { scope: deriveScope(readTurnSignals(headers, {}, 'openai').scope, defaultScope), admin, member: false };
    };
    /** The caller's unit with this id (or, to read, the shared scope's); another scope's unit is as missing as one that never existed. */
    const ownUnit = async (caller: Caller, id: string, access: Access): Promise<MemoryUnit> => {
      const unit = await api.get(id);
      if (unit?.scope === SHARED_SCOPE && access === 'write' && caller.member) throw sharedReadOnly();
      return found(unit && (caller.admin || unit.scope === caller.scope || (access === 'read' && unit.scope === SHARED_SCOPE)) ? unit : undefined, id);
    };

    app.post('/v1/memory/ingest', async (c) => {
      const body = parse(ingestSchema, await readJson(c.req.raw));
      // As on every other route: a longer id is refused, so no session exists that a request cannot name.
      bounded(body.session_id);
      const scope = scopeFor(callerOf(c), body.scope, 'scope', 'write');
      const result = await api.ingest(
        scope,
        body.session_id,
        body.turns.map((turn) => ({
          role: turn.role,
          content: turn.content,
          ...(turn.name ? { name: turn.name } : {}),
          ...(turn.timestamp !== undefined ? { timestamp: turn.timestamp } : {}),
          ...(turn.id ? { id: turn.id } : {}),
        })),
      );
      return c.json({ scope, session_id: body.session_id, ...result });
    });

    app.post('/v1/memory/search', async (c) => {
      const body = parse(searchSchema, await readJson(c.req.raw));
      const scope = scopeFor(callerOf(c), body.scope, 'scope', 'read');
      const hits = await api.search({
        scope,
        query: body.query,
        limit: body.limit ?? 10,
        ...(body.types ? { types: body.types } : {}),
        includeSuperseded: body.include_superseded ?? false,
      });
      return c.json({ scope, results: hits.map((hit) => ({ ...presentMemory(hit.unit), score: Math.round(hit.score * 1000) / 1000 })) });
    });

    app.get('/v1/memory/stats', async (c) => {
      const caller = callerOf(c);
      const requested = c.req.query('scope');
      // Only the admin sees every scope (and the total across them) without naming one.
      if (caller.admin && requested === undefined) {
        const all = await api.allStats();
        return c.json({ scopes: all.scopes, total_units: all.total });
      }
      const stats = await api.stats(scopeFor(caller, requested, 'scope', 'read'));
      return c.json({ scopes: [stats], total_units: stats.active + stats.superseded });
    });

    app.get('/v1/memory/export', async (c) => {
      const caller = callerOf(c);
      const requested = c.req.query('scope');
      const scope = caller.admin && requested === undefined ? undefined : scopeFor(caller, requested, 'scope', 'read');
      return c.body(await api.export(scope), 200, { 'content-type': 'application/x-ndjson' });
    });

    app.post('/v1/memory/import', async (c) => {
      const caller = callerOf(c);
      const text = await c.req.text();
      const report = await api.import(text.split('\n'), scopeFor(caller, c.req.query('scope'), 'scope', 'write'), caller.admin ? undefined : caller.scope);
      return c.json(report);
    });

    app.post('/v1/memory', async (c) => {
      const body = parse(addSchema, await readJson(c.req.raw));
      const unit = await api.add({
        scope: scopeFor(callerOf(c), body.scope, 'scope', 'write'),
        type: body.type ?? DEFAULT_MEMORY_TYPE,
        content: body.content,
        importance: body.importance ?? 0.8,
        confidence: 1,
        core: body.core ?? false,
        pinned: body.pinned ?? false,
        origin: 'manual',
      });
      return c.json(presentMemory(unit), 201);
    });

    app.delete('/v1/memory', async (c) => {
      const requested = c.req.query('scope');
      if (!requested) throw new BadRequestError('missing_scope', 'scope: required (DELETE /v1/memory?scope=… forgets a whole scope)', 'scope');
      const scope = scopeFor(callerOf(c), requested, 'scope', 'write');
      return c.json({ scope, deleted: await api.forgetScope(scope) });
    });

    app.get('/v1/memory/:id', async (c) => c.json(presentMemory(await ownUnit(callerOf(c), c.req.param('id'), 'read'))));

    app.patch('/v1/memory/:id', async (c) => {
      const unit = await ownUnit(callerOf(c), c.req.param('id'), 'write');
      const patch = parse(patchSchema, await readJson(c.req.raw));
      const updated = await api.update(unit.id, {
        ...(patch.content !== undefined ? { content: patch.content } : {}),
        ...(patch.type !== undefined ? { type: patch.type } : {}),
        ...(patch.importance !== undefined ? { importance: patch.importance } : {}),
        ...(patch.core !== undefined ? { core: patch.core } : {}),
        ...(patch.pinned !== undefined ? { pinned: patch.pinned } : {}),
      });
      return c.json(presentMemory(found(updated, unit.id)));
    });

    app.post('/v1/memory/:id/supersede', async (c) => {
      const unit = await ownUnit(callerOf(c), c.req.param('id'), 'write');
      const body = parse(supersedeSchema, await readJson(c.req.raw));
      if (unit.status !== 'active')
        throw new ConflictError(`Memory ${unit.id} is already superseded by ${unit.supersededBy ?? 'another unit'}.`, 'memory_not_active');
      const { old, added } = found(
        await api.supersede(unit.id, {
          content: body.content,
          ...(body.type !== undefined ? { type: body.type } : {}),
          ...(body.importance !== undefined ? { importance: body.importance } : {}),
          ...(body.core !== undefined ? { core: body.core } : {}),
          ...(body.pinned !== undefined ? { pinned: body.pinned } : {}),
        }),
        unit.id,
      );
      return c.json({ superseded: presentMemory(old), memory: presentMemory(added) }, 201);
    });

    app.delete('/v1/memory/:id', async (c) => {
      const unit = await ownUnit(callerOf(c), c.req.param('id'), 'write');
      const removed = found(await api.forget(unit.id), unit.id);
      return c.json({ id: removed.id, deleted: true });
    });
  };
}

/** The scope a request may work in: its own, the shared scope to read, or any scope it names when it holds the admin token. */
function scopeFor(caller: Caller, requested: string | undefined, param: string, access: Access): string {
  // `?scope=` is a mistake (an unset variable in a script), not a scope: refused as such, not as another scope.
  if (requested === '')
    throw new BadRequestError('scope_empty', `The ${param} parameter is empty: name a scope, or leave it out for this request's own scope.`, param);
  // Capped as the scope headers are, before anything else: with the admin token it would be stored.
  bounded(requested, param, param);
  if (requested === undefined || requested === caller.scope) return caller.scope;
  if (caller.admin) return requested;
  if (requested === SHARED_SCOPE) {
    if (access === 'read') return requested;
    if (caller.member) throw sharedReadOnly(param);
  }
  if (caller.member)
    throw new PermissionError(
      'scope_forbidden',
      `A member key works in its own memory scope "${caller.scope}" (and reads "${SHARED_SCOPE}"); it cannot reach scope "${requested}".`,
      param,
    );
  throw new PermissionError(
    'scope_forbidden',
    `This request's memory scope is "${caller.scope}" (from X-Memory-Scope, X-User-Id, X-Workspace-Id or memory.scope); it cannot reach scope "${requested}". Send the request with that scope's headers, or use the admin token ($METACLAW_HOME/admin-token in ${ADMIN_HEADER}) for cross-scope work.`,
    param,
  );
}

function found<T>(value: T | undefined, id: string): T {
  if (value === undefined) throw new NotFoundError(`No memory with id ${id}.`, 'memory_not_found');
  return value;
}

function sharedReadOnly(param?: string): PermissionError {
  return new PermissionError(
    'shared_scope_read_only',
    `The "${SHARED_SCOPE}" memory scope is shared: a member key reads it, and only the owner writes it (metaclaw memory add --scope ${SHARED_SCOPE}, or the proxy key).`,
    param,
  );
}
