import { z } from 'zod';
import { BadRequestError, ConflictError, NotFoundError, SkillError } from '../errors.js';
import {
  categorySchema,
  parseSkillFile,
  presentProposal,
  serializeSkill,
  SKILL_NAME,
  MAX_NAME_LENGTH,
  skillInjectionReason,
  type ChangeResult,
  type UnchangedResult,
  type SkillDraft,
  type SkillsService,
} from '../skills/index.js';
import { parseJsonBody } from './body.js';
import { parse, readJson } from './route-body.js';
import type { ProxyApp } from './types.js';

/** The whole SKILL.md; `force` as in `metaclaw skills add --force`. */
const textSchema = z.strictObject({ text: z.string().min(1, 'must be the whole SKILL.md'), force: z.boolean().optional() });

/** Or only the parts a person usually edits, over the current skill. */
const fieldsSchema = z.strictObject({
  description: z.string().trim().min(1, 'must say when to use the skill'),
  body: z.string().trim().min(1, 'must not be empty'),
  category: categorySchema.optional(),
  force: z.boolean().optional(),
});

/** One of the two forms, told apart by `text`, so a refusal names the field at fault (a union would only say "invalid input"). */
function parseEdit(body: unknown): z.infer<typeof textSchema> | z.infer<typeof fieldsSchema> {
  const hasText = typeof body === 'object' && body !== null && 'text' in body;
  return hasText ? parse(textSchema, body) : parse(fieldsSchema, body);
}

/**
 * The proposal id in the path, a whole number: anything else is named as the id at fault (a schema
 * read of the path said "(body): … expected number, received NaN").
 */
export function proposalId(text: string): number {
  const id = /^\d{1,15}$/.test(text) ? Number(text) : 0;
  if (id >= 1) return id;
  throw new BadRequestError('invalid_request', `proposal id "${text}": expected a whole number 1 or more (see GET /v1/skills/proposals).`, 'id');
}

/** Which recorded version to restore; none: the one before the current (as `metaclaw skills revert`). */
const revertSchema = z.strictObject({ to: z.number().int().positive().optional() });

/**
 * Changes to the library over HTTP (the dashboard's edit form and review buttons): the same service
 * calls as `metaclaw skills add` / `approve` / `reject`, so the SKILL.md on disk, the version
 * history and the generation change exactly as they do from the CLI. Registered before
 * GET /v1/skills/{name}, which would otherwise take "proposals" for a skill's name.
 */
export function skillChangeRoutes(skills: SkillsService): (app: ProxyApp) => void {
  return (app) => {
    app.get('/v1/skills/proposals', (c) => c.json({ object: 'list', data: skills.proposals.pending().map(presentProposal) }));

    app.post('/v1/skills/proposals/:id/approve', (c) => {
      const id = proposalId(c.req.param('id'));
      const result = decided(() => skills.approve(id));
      return c.json({ id, status: 'approved', ...presentChange(result), ...(result.mergedInto !== undefined ? { merged_into: result.mergedInto } : {}) });
    });

    app.post('/v1/skills/proposals/:id/reject', (c) => {
      const id = proposalId(c.req.param('id'));
      const row = decided(() => skills.reject(id));
      return c.json({ id, status: 'rejected', action: row.action, name: row.name });
    });

    app.put('/v1/skills/:name', async (c) => {
      const name = checkedName(c.req.param('name'));
      const body = await readJson(c.req.raw);
      const existing = skills.library.get(name);
      const result = skills.save(editedDraft(name, body, existing), HTTP_EDIT);
      return c.json(presentChange(result), existing ? 200 : 201);
    });

    app.delete('/v1/skills/:name', (c) => {
      const name = c.req.param('name');
      const { removed, generation } = skills.remove(name, 'http remove');
      if (!removed) throw new NotFoundError(`No skill named ${name}.`, 'skill_not_found');
      return c.json({ action: 'remove', name, generation });
    });

    app.post('/v1/skills/:name/revert', async (c) => {
      const name = c.req.param('name');
      const to = await revertTarget(c.req.raw);
      if (!skills.library.get(name) && skills.history.versions(name).length === 0) throw new NotFoundError(`No skill named ${name}.`, 'skill_not_found');
      return c.json(presentChange(decided(() => skills.revert(name, to))));
    });
  };
}

/** The history's source line of an edit over HTTP. */
export const HTTP_EDIT = 'http edit';

/** The name in PUT /v1/skills/{name}, if it is one a skill may have. */
export function checkedName(name: string): string {
  if (!SKILL_NAME.test(name) || name.length > MAX_NAME_LENGTH)
    throw new BadRequestError(
      'invalid_skill_name',
      `"${name}" is not a skill name: lowercase letters, digits and single hyphens, at most ${MAX_NAME_LENGTH} characters.`,
      'name',
    );
  return name;
}

/**
 * The draft an edit's body (a whole SKILL.md, or description and body over `existing`) writes,
 * checked as the library will read it and screened for prompt injection (unless `force`), before
 * anything is written: the same checks whichever store takes it.
 */
export function editedDraft(name: string, body: unknown, existing: SkillDraft | undefined): SkillDraft {
  const edit = parseEdit(body);
  const draft = 'text' in edit ? draftFromText(name, edit.text) : draftFromFields(name, edit, existing);
  const injection = skillInjectionReason(draft);
  if (injection && !edit.force)
    throw new BadRequestError(
      'suspicious_skill',
      `The skill reads like a prompt injection (${injection}); nothing written. Send "force": true if you trust it.`,
    );
  return draft;
}

/** The version a revert's body names; an empty body is the default target, as with the CLI. */
export async function revertTarget(request: Request): Promise<number | undefined> {
  const raw = await request.text();
  return parse(revertSchema, raw.trim() === '' ? {} : parseJsonBody(raw)).to;
}

/** A SKILL.md text checked as the library will read it, before anything is written. */
function draftFromText(name: string, text: string): SkillDraft {
  const parsed = parseSkillFile(text, `${name}/SKILL.md`, name);
  if ('reason' in parsed) throw new BadRequestError('invalid_skill', `Not a valid SKILL.md: ${parsed.reason}. Nothing was written.`, 'text');
  const { skill } = parsed;
  return { name, description: skill.description, category: skill.category, body: skill.body, origin: skill.origin, extra: skill.extra };
}

/** New description and body over the current skill; checked through the same parser as a whole file. */
function draftFromFields(
  name: string,
  edit: { description: string; body: string; category?: string | undefined },
  existing: SkillDraft | undefined,
): SkillDraft {
  const draft: SkillDraft = {
    name,
    description: edit.description,
    body: edit.body,
    category: edit.category ?? existing?.category ?? 'general',
    origin: existing?.origin ?? 'user',
    extra: existing?.extra ?? {},
  };
  const now = new Date().toISOString();
  draftFromText(name, serializeSkill({ ...draft, version: 1, origin: draft.origin ?? 'user', createdAt: now, updatedAt: now }));
  return draft;
}

/** A review decision; a proposal that is not pending is as missing as one that never existed. */
export function decided<T>(decide: () => T): T {
  try {
    return decide();
  } catch (error) {
    throw asDecisionError(error);
  }
}

/** A decision on a proposal that cannot be made: 404 when it is not pending, 409 for another skill error. */
export function asDecisionError(error: unknown): unknown {
  if (error instanceof SkillError && error.code === 'proposal_not_found') return new NotFoundError(`${error.message}.`, 'proposal_not_found');
  if (error instanceof SkillError) return new ConflictError(error.message, error.code);
  return error;
}

/** A change's answer; `unchanged` (a save that says what the current version does) adds why nothing was written. */
export function presentChange(result: Pick<ChangeResult | UnchangedResult, 'action' | 'version' | 'generation'> & { skill: { name: string } }) {
  const answer = { action: result.action, name: result.skill.name, version: result.version, generation: result.generation };
  if (result.action !== 'unchanged') return answer;
  return { ...answer, message: `${result.skill.name} v${result.version} already says this: no new version was written.` };
}
