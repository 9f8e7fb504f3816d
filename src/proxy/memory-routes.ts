import { z } from 'zod';
import { BadRequestError, NotFoundError } from '../errors.js';
import { MEMORY_TYPES, type MemoryService, type MemoryUnit } from '../memory/index.js';
import { parseJsonBody } from './body.js';
import type { ProxyApp } from './types.js';
import { requestErrorFrom } from './validate.js';

const typeSchema = z.enum(MEMORY_TYPES);

const ingestSchema = z.object({
  scope: z.string().min(1).optional(),
  session_id: z.string().min(1),
  turns: z
    .array(
      z.object({
        role: z.enum(['user', 'assistant']),
        content: z.string(),
        name: z.string().optional(),
        timestamp: z.union([z.string(), z.number()]).optional(),
        id: z.string().min(1).optional(),
      }),
    )
    .min(1, 'must contain at least one turn'),
});

const searchSchema = z.object({
  query: z.string().min(1),
  scope: z.string().min(1).optional(),
  limit: z.number().int().min(1).max(100).optional(),
  types: z.array(typeSchema).optional(),
  include_superseded: z.boolean().optional(),
});

const addSchema = z.object({
  scope: z.string().min(1).optional(),
  type: typeSchema,
  content: z.string().trim().min(1).max(4_000),
  importance: z.number().min(0).max(1).optional(),
  core: z.boolean().optional(),
  pinned: z.boolean().optional(),
});

const patchSchema = z
  .object({
    content: z.string().trim().min(1).max(4_000).optional(),
    type: typeSchema.optional(),
    importance: z.number().min(0).max(1).optional(),
    core: z.boolean().optional(),
    pinned: z.boolean().optional(),
  })
  .refine((patch) => Object.keys(patch).length > 0, 'nothing to change');

const importLineSchema = z.object({
  scope: z.string().min(1).optional(),
  type: typeSchema,
  content: z.string().trim().min(1),
  importance: z.number().min(0).max(1).optional(),
  confidence: z.number().min(0).max(1).optional(),
  core: z.boolean().optional(),
  pinned: z.boolean().optional(),
  observed_at: z.string().optional(),
  source: z.object({ session_id: z.string().nullable().optional(), turn_ids: z.array(z.string()).optional() }).optional(),
});

/** The memory HTTP API (authenticated like every route but /healthz). */
export function memoryRoutes(memory: MemoryService, defaultScope: string): (app: ProxyApp) => void {
  return (app) => {
    const scopeOf = (explicit: string | undefined, header: string | undefined) => explicit ?? header ?? defaultScope;

    app.post('/v1/memory/ingest', async (c) => {
      const body = parse(ingestSchema, await readJson(c.req.raw));
      const scope = scopeOf(body.scope, c.req.header('x-memory-scope'));
      const result = memory.ingest(scope, body.session_id, body.turns.map((turn) => ({ role: turn.role, content: turn.content, ...(turn.name ? { name: turn.name } : {}), ...(turn.timestamp !== undefined ? { timestamp: turn.timestamp } : {}), ...(turn.id ? { id: turn.id } : {}) })));
      return c.json({ scope, session_id: body.session_id, ...result });
    });

    app.post('/v1/memory/search', async (c) => {
      const body = parse(searchSchema, await readJson(c.req.raw));
      const scope = scopeOf(body.scope, c.req.header('x-memory-scope'));
      const hits = await memory.search({ scope, query: body.query, limit: body.limit ?? 10, ...(body.types ? { types: body.types } : {}), includeSuperseded: body.include_superseded ?? false });
      return c.json({ scope, results: hits.map((hit) => ({ ...present(hit.unit), score: Math.round(hit.score * 1000) / 1000 })) });
    });

    app.get('/v1/memory/stats', (c) => {
      const scope = c.req.query('scope');
      const scopes = scope ? [scope] : memory.store.scopes();
      return c.json({ scopes: scopes.map((name) => memory.store.stats(name)), total_units: memory.store.totalUnits() });
    });

    app.get('/v1/memory/export', (c) => {
      const scope = c.req.query('scope');
      const lines: string[] = [];
      for (const unit of memory.store.iterate(scope)) lines.push(JSON.stringify(present(unit)));
      return c.body(lines.length > 0 ? `${lines.join('\n')}\n` : '', 200, { 'content-type': 'application/x-ndjson' });
    });

    app.post('/v1/memory/import', async (c) => {
      const text = await c.req.text();
      const report = importLines(memory, text.split('\n'), c.req.query('scope') ?? c.req.header('x-memory-scope') ?? defaultScope);
      return c.json(report);
    });

    app.post('/v1/memory', async (c) => {
      const body = parse(addSchema, await readJson(c.req.raw));
      const unit = memory.add({ scope: scopeOf(body.scope, c.req.header('x-memory-scope')), type: body.type, content: body.content, importance: body.importance ?? 0.8, confidence: 1, core: body.core ?? false, pinned: body.pinned ?? false, origin: 'manual' });
      return c.json(present(unit), 201);
    });

    app.delete('/v1/memory', (c) => {
      const scope = c.req.query('scope');
      if (!scope) throw new BadRequestError('missing_scope', 'scope: required (DELETE /v1/memory?scope=… forgets a whole scope)', 'scope');
      return c.json({ scope, deleted: memory.forgetScope(scope) });
    });

    app.get('/v1/memory/:id', (c) => c.json(present(found(memory.store.get(c.req.param('id')), c.req.param('id')))));

    app.patch('/v1/memory/:id', async (c) => {
      const patch = parse(patchSchema, await readJson(c.req.raw));
      const updated = memory.update(c.req.param('id'), {
        ...(patch.content !== undefined ? { content: patch.content } : {}),
        ...(patch.type !== undefined ? { type: patch.type } : {}),
        ...(patch.importance !== undefined ? { importance: patch.importance } : {}),
        ...(patch.core !== undefined ? { core: patch.core } : {}),
        ...(patch.pinned !== undefined ? { pinned: patch.pinned } : {}),
      });
      return c.json(present(found(updated, c.req.param('id'))));
    });

    app.delete('/v1/memory/:id', (c) => {
      const removed = found(memory.forget(c.req.param('id')), c.req.param('id'));
      return c.json({ id: removed.id, deleted: true });
    });
  };
}

/** Imports JSONL lines (what export writes); bad lines are reported, never fatal. */
export function importLines(memory: MemoryService, lines: readonly string[], defaultScope: string): { imported: number; skipped: Array<{ line: number; reason: string }> } {
  const report = { imported: 0, skipped: [] as Array<{ line: number; reason: string }> };
  lines.forEach((line, index) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      report.skipped.push({ line: index + 1, reason: 'not JSON' });
      return;
    }
    const parsed = importLineSchema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      report.skipped.push({ line: index + 1, reason: `${issue?.path.join('.') || 'line'}: ${issue?.message}` });
      return;
    }
    const item = parsed.data;
    const scope = item.scope ?? defaultScope;
    if (memory.store.findSameContent(scope, item.content)) {
      report.skipped.push({ line: index + 1, reason: 'already in memory' });
      return;
    }
    const observedAt = item.observed_at ? Date.parse(item.observed_at) : Number.NaN;
    memory.add({ scope, type: item.type, content: item.content, importance: item.importance ?? 0.6, confidence: item.confidence ?? 0.8, core: item.core ?? false, pinned: item.pinned ?? false, origin: 'import', ...(Number.isNaN(observedAt) ? {} : { observedAt }), sourceSession: item.source?.session_id ?? null, sourceTurns: item.source?.turn_ids ?? [] });
    report.imported++;
  });
  return report;
}

/** A unit as the API shows it. */
export function present(unit: MemoryUnit) {
  return {
    id: unit.id,
    scope: unit.scope,
    type: unit.type,
    content: unit.content,
    core: unit.core,
    pinned: unit.pinned,
    status: unit.status,
    superseded_by: unit.supersededBy,
    importance: Math.round(unit.importance * 1000) / 1000,
    confidence: Math.round(unit.confidence * 1000) / 1000,
    origin: unit.origin,
    speaker: unit.speaker,
    observed_at: new Date(unit.observedAt).toISOString(),
    flagged: unit.flagged,
    access_count: unit.accessCount,
    source: { session_id: unit.sourceSession, turn_ids: unit.sourceTurns },
  };
}

function found<T>(value: T | undefined, id: string): T {
  if (value === undefined) throw new NotFoundError(`No memory with id ${id}.`, 'memory_not_found');
  return value;
}

async function readJson(request: Request): Promise<unknown> {
  return parseJsonBody(await request.text());
}

function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw requestErrorFrom(result.error, (issue) => (issue.input === undefined && issue.code === 'invalid_type' ? 'required' : issue.message));
}
