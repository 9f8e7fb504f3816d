import { createHash } from 'node:crypto';
import { parse as parseYaml, Scalar, stringify as stringifyYaml } from 'yaml';
import { z } from 'zod';
import { countTextTokens } from '../text/index.js';
import type { Skill, SkillDraft, SkillOrigin } from './types.js';

/** Agent Skills rules: lowercase letters, digits and hyphens, at most 64 characters. */
export const SKILL_NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
export const MAX_NAME_LENGTH = 64;
export const MAX_DESCRIPTION_LENGTH = 1024;
/** The category of a skill whose file names none (and which is then not written back). */
export const DEFAULT_CATEGORY = 'general';
/** A category is a short label: `skills list` prints it in a column, so it is one line and bounded. */
export const MAX_CATEGORY_LENGTH = 64;
export const categorySchema = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(MAX_CATEGORY_LENGTH, `must be at most ${MAX_CATEGORY_LENGTH} characters`)
  .regex(/^[^\p{Cc}\p{Zl}\p{Zp}]*$/u, 'must be one line without control characters');

const frontmatterSchema = z.looseObject({
  name: z
    .string({ error: 'name is required' })
    .max(MAX_NAME_LENGTH, `name must be at most ${MAX_NAME_LENGTH} characters`)
    .regex(SKILL_NAME, 'name must be lowercase letters, digits and single hyphens'),
  description: z
    .string({ error: 'description is required' })
    .trim()
    .min(1, 'description must say when to use the skill')
    .max(MAX_DESCRIPTION_LENGTH, `description must be at most ${MAX_DESCRIPTION_LENGTH} characters`),
  category: categorySchema.optional(),
  version: z.number().int().positive().optional(),
  created_at: z.union([z.string(), z.date()]).optional(),
  updated_at: z.union([z.string(), z.date()]).optional(),
  origin: z.enum(['starter', 'user', 'evolved', 'imported']).optional(),
  generation: z.number().int().nonnegative().optional(),
  source_sessions: z.array(z.string()).optional(),
});

const KNOWN_KEYS = new Set(['name', 'description', 'category', 'version', 'created_at', 'updated_at', 'origin', 'generation', 'source_sessions']);
const FENCE = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;

export type ParseResult = { skill: Skill } | { reason: string };

/** Parses and validates one SKILL.md. `folderName` must equal the skill's name. */
export function parseSkillFile(text: string, path: string, folderName: string): ParseResult {
  const match = FENCE.exec(text.replace(/^\uFEFF/, ''));
  if (!match) return { reason: 'the file must start with a YAML frontmatter block between --- lines' };
  let data: unknown;
  try {
    // No aliases: frontmatter never needs one, and resolving a self-referencing one (`a: &a [*a, *a, …]`)
    // is cubic in their count: 800 of them, 4 KB, held the event loop for 37 s (yaml's maxAliasCount does not catch it).
    data = parseYaml(match[1]!, { schema: 'core', maxAliasCount: 0 });
  } catch (error) {
    const message = (error as Error).message;
    if (message.startsWith('Alias resolution is disabled')) return { reason: 'frontmatter uses a YAML alias (*name); write the value out instead' };
    return { reason: `frontmatter is not valid YAML: ${message.split('\n')[0]}` };
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return { reason: 'frontmatter must be a mapping of keys' };
  const parsed = frontmatterSchema.safeParse(data);
  if (!parsed.success) return { reason: parsed.error.issues.map((issue) => `${issue.path.join('.') || 'frontmatter'}: ${issue.message}`).join('; ') };
  const front = parsed.data;
  if (front.name !== folderName) return { reason: `name "${front.name}" must equal the folder name "${folderName}"` };
  const body = text
    .replace(/^\uFEFF/, '')
    .slice(match[0].length)
    .trim();
  if (body === '') return { reason: 'the body (Markdown after the frontmatter) is empty' };
  const extra: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(data as Record<string, unknown>)) if (!KNOWN_KEYS.has(key)) extra[key] = value;
  return {
    skill: {
      name: front.name,
      description: plainInFile(match[1]!) ? writtenDescription(front.description) : front.description,
      category: front.category ?? DEFAULT_CATEGORY,
      body,
      version: front.version ?? 1,
      origin: front.origin ?? 'user',
      createdAt: dateText(front.created_at),
      updatedAt: dateText(front.updated_at),
      generation: front.generation,
      sourceSessions: front.source_sessions ?? [],
      extra,
      path,
      contentHash: hashText(text),
      bodyTokens: countTextTokens(body),
      summaryTokens: countTextTokens(`${front.name}: ${front.description}`),
    },
  };
}

export interface SkillFileFields extends SkillDraft {
  version: number;
  origin: SkillOrigin;
  createdAt: string;
  updatedAt: string;
  generation?: number;
}

/**
 * The fields of the next version of a skill: `draft` over what `before` held (its version + 1, its
 * origin and creation time unless the draft says otherwise, extra keys and source sessions merged).
 * One rule for every store that writes skills (the folder library, the team store).
 */
export function nextSkillFields(before: Skill | undefined, draft: SkillDraft, now: Date, generation?: number): SkillFileFields {
  const at = now.toISOString();
  const fields: SkillFileFields = {
    ...draft,
    version: (before?.version ?? 0) + 1,
    origin: draft.origin ?? before?.origin ?? 'user',
    createdAt: before?.createdAt ?? at,
    updatedAt: at,
    extra: { ...(before?.extra ?? {}), ...(draft.extra ?? {}) },
    sourceSessions: [...new Set([...(before?.sourceSessions ?? []), ...(draft.sourceSessions ?? [])])],
    category: draft.category ?? before?.category ?? 'general',
  };
  const kept = generation ?? before?.generation;
  if (kept !== undefined) fields.generation = kept;
  return fields;
}

/**
 * Whether writing `draft` over `before` would change what the skill says: its description, category,
 * body and extra frontmatter keys, compared as the file would hold them. The bookkeeping (version,
 * times, generation, origin, source sessions) is left aside: saving a skill unchanged, or adding the
 * file `skills show` printed, is no new version of it.
 */
export function sameSkillContent(before: Skill, draft: SkillDraft): boolean {
  const kept = {
    version: before.version,
    origin: before.origin,
    createdAt: before.createdAt ?? '',
    updatedAt: before.updatedAt ?? '',
    sourceSessions: before.sourceSessions,
    ...(before.generation !== undefined ? { generation: before.generation } : {}),
  };
  return serializeSkill({ ...nextSkillFields(before, draft, new Date()), ...kept }) === serializeSkill({ ...before, ...kept });
}

/**
 * Writes SKILL.md text; the frontmatter is real YAML, so any description round-trips safely. The
 * description is written so that MetaClaw's parser reads it as YAML does (see descriptionValue).
 */
export function serializeSkill(fields: SkillFileFields): string {
  const front: Record<string, unknown> = {
    name: fields.name,
    description: descriptionValue(fields.description),
  };
  if (fields.category && fields.category !== DEFAULT_CATEGORY) front['category'] = fields.category;
  front['version'] = fields.version;
  front['origin'] = fields.origin;
  front['created_at'] = fields.createdAt;
  front['updated_at'] = fields.updatedAt;
  if (fields.generation !== undefined) front['generation'] = fields.generation;
  if (fields.sourceSessions && fields.sourceSessions.length > 0) front['source_sessions'] = fields.sourceSessions.slice(-20);
  for (const [key, value] of Object.entries(fields.extra ?? {})) if (!(key in front)) front[key] = value;
  const yaml = stringifyYaml(front, { lineWidth: 0 }).trimEnd();
  return `---\n${yaml}\n---\n\n${fields.body.trim()}\n`;
}

/**
 * MetaClaw's own parser was line-based `key: value`, so its files may hold descriptions that are
 * not valid YAML (a second colon). Import reads those with the same rule, then writes real YAML.
 */
export function parseLegacyFrontmatter(text: string): { name?: string; description?: string; category?: string; body: string } | undefined {
  const normalized = text.replace(/^\uFEFF/, '');
  if (!normalized.startsWith('---')) return undefined;
  const end = normalized.indexOf('\n---', 3);
  if (end === -1) return undefined;
  const fields: Record<string, string> = {};
  for (const line of normalized.slice(3, end).split('\n')) {
    const colon = line.indexOf(':');
    if (colon === -1) continue;
    fields[line.slice(0, colon).trim()] = line
      .slice(colon + 1)
      .trim()
      .replace(/^["']|["']$/g, '');
  }
  const bodyStart = normalized.indexOf('\n', end + 1);
  return {
    ...(fields['name'] ? { name: fields['name'] } : {}),
    ...(fields['description'] ? { description: fields['description'] } : {}),
    ...(fields['category'] ? { category: fields['category'] } : {}),
    body: bodyStart === -1 ? '' : normalized.slice(bodyStart).trim(),
  };
}

/**
 * A description as MetaClaw's parser and YAML read it alike. MetaClaw reads the frontmatter line by
 * line, `key: value` split at the first colon, the value kept as it is, quotes included (its spec,
 * 2.1: "no multi-line values, no quoting"). So the description goes on one line (its line breaks
 * joined with a space: MetaClaw took a YAML block, `description: |-`, for the description "|-"),
 * and the space after a colon or before a `#` — which would make YAML quote the value, and MetaClaw
 * read the quotes as text — is written as a no-break space, which keeps it a plain YAML scalar and
 * reads the same to a person (writtenDescription turns them back when the file is read, so only
 * the file holds them). Quoted only where YAML requires it: a description that plain would still
 * not make a plain scalar (one that starts with a quote or `[`, is `true` or a number, or has a tab
 * after a colon) is written as it is, and YAML quotes it; so is one that holds such a no-break space
 * itself, which a reader could not tell from the writer's (a quoted description is read as it is).
 */
function descriptionValue(text: string): string | Scalar {
  const line = oneLine(text);
  if (/:\u00a0|\u00a0#/.test(line)) return quoted(line);
  const plain = line.replace(/: /g, ':\u00a0').replace(/ #/g, '\u00a0#');
  return stringifyYaml({ description: plain }, { lineWidth: 0 }) === `description: ${plain}\n` ? plain : line;
}

function quoted(text: string): Scalar {
  const scalar = new Scalar(text);
  scalar.type = 'QUOTE_DOUBLE';
  return scalar;
}

/** Whether the frontmatter's description is a plain scalar (not quoted, not a block): only those hold the writer's no-break spaces. */
function plainInFile(frontmatter: string): boolean {
  const first = /^description:\s*(\S)/m.exec(frontmatter)?.[1];
  return first !== undefined && !`"'|>`.includes(first);
}

/** The description descriptionValue wrote, with its spaces back: what the user wrote is what every reader of the library gets. */
function writtenDescription(text: string): string {
  return text.replace(/:\u00a0/g, ': ').replace(/\u00a0#/g, ' #');
}

/** `text` trimmed, each line break (with the blanks around it) made one space. */
function oneLine(text: string): string {
  return text.trim().replace(/[ \t]*(?:\r\n|[\r\n\u2028\u2029])\s*/g, ' ');
}

export function hashText(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

function dateText(value: string | Date | undefined): string | undefined {
  if (value === undefined) return undefined;
  return value instanceof Date ? value.toISOString() : value;
}
