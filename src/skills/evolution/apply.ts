import { redactSecrets } from '../../text/index.js';
import { MAX_CATEGORY_LENGTH, MAX_DESCRIPTION_LENGTH, MAX_NAME_LENGTH, SKILL_NAME } from '../skill-file.js';
import { skillInjectionReason } from '../screen.js';
import type { Skill, SkillDraft } from '../types.js';
import type { ProposedChange } from './schema.js';

const MAX_BODY_CHARS = 12_000;
const MIN_BODY_CHARS = 40;

export interface PlannedChange {
  action: 'create' | 'update';
  draft: SkillDraft;
  evidence: string[];
  reason: string | undefined;
  /** Set when the change was merged into an existing skill rather than replacing it. */
  mergedInto?: string;
}

export interface Rejected {
  name: string;
  reason: string;
}

export interface PlanningContext {
  get(name: string): Skill | undefined;
  /** The existing skill most like `text`, with its keyword relevance (0..1). */
  nearest(text: string, excluding?: string): { skill: Skill; relevance: number } | undefined;
  /** The version of a skill the evolver was shown in full; undefined when it only saw the name. */
  seenVersion(name: string): number | undefined;
  sessionId: string;
  maxChanges: number;
}

/** A proposed "create" this close to an existing skill becomes an edit of it. */
export const NEAR_DUPLICATE_RELEVANCE = 0.5;

/**
 * Turns the evolver's proposals into validated drafts: names normalised, limits enforced, prompt
 * injection refused, near-duplicates merged into the skill they duplicate. Nothing is written here.
 */
export function planChanges(proposed: readonly ProposedChange[], context: PlanningContext): { planned: PlannedChange[]; rejected: Rejected[] } {
  const planned: PlannedChange[] = [];
  const rejected: Rejected[] = [];
  const touched = new Set<string>();
  for (const proposal of proposed) {
    const change = withoutSecrets(proposal);
    if (planned.length >= context.maxChanges) {
      rejected.push({ name: change.name, reason: `over the limit of ${context.maxChanges} changes per evolution (skills.max_new_skills)` });
      continue;
    }
    const name = normaliseName(change.name);
    const problem = validate(name, change);
    if (problem) {
      rejected.push({ name: change.name, reason: problem });
      continue;
    }
    const category =
      change.category
        ?.trim()
        .toLowerCase()
        .replace(/[^a-z_]/g, '')
        // a longer one would not validate (skill-file.ts), and the library would refuse the change
        .slice(0, MAX_CATEGORY_LENGTH) || undefined;
    let action: 'create' | 'update' = change.action;
    let target = context.get(name);
    let mergedInto: string | undefined;
    if (action === 'update' && !target) action = 'create';
    if (action === 'create' && target) action = 'update';
    if (action === 'create') {
      const near = context.nearest(`${name.replaceAll('-', ' ')} ${change.description}`);
      if (near && near.relevance >= NEAR_DUPLICATE_RELEVANCE) {
        target = near.skill;
        action = 'update';
        mergedInto = near.skill.name;
      }
    }
    // An update replaces a skill only if the evolver saw its current text; otherwise (it only knew
    // the name, or another session changed the skill meanwhile) it is merged in, so nothing is lost.
    if (action === 'update' && target && !mergedInto && context.seenVersion(target.name) !== target.version) mergedInto = target.name;
    const finalName = target?.name ?? name;
    if (touched.has(finalName)) {
      rejected.push({ name: change.name, reason: `another change in this evolution already edits ${finalName}` });
      continue;
    }
    touched.add(finalName);
    const draft: SkillDraft =
      mergedInto && target
        ? mergedDraft(target, change.body, [context.sessionId])
        : {
            name: finalName,
            description: change.description.trim(),
            ...(category ? { category } : {}),
            body: change.body.trim(),
            origin: target?.origin ?? 'evolved',
            sourceSessions: [context.sessionId],
          };
    planned.push({ action, draft, evidence: change.evidence, reason: change.reason, ...(mergedInto ? { mergedInto } : {}) });
  }
  return { planned, rejected };
}

/** A secret the session held never reaches a skill, its evidence or the evolution history. */
function withoutSecrets(change: ProposedChange): ProposedChange {
  const reason = change.reason === undefined ? {} : { reason: redactSecrets(change.reason) };
  return {
    ...change,
    description: redactSecrets(change.description),
    body: redactSecrets(change.body),
    evidence: change.evidence.map(redactSecrets),
    ...reason,
  };
}

export function normaliseName(raw: string): string {
  return raw
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, MAX_NAME_LENGTH)
    .replace(/-+$/, '');
}

function validate(name: string, change: ProposedChange): string | undefined {
  if (!SKILL_NAME.test(name)) return `name "${change.name}" cannot be made a valid skill name`;
  if (change.description.trim().length > MAX_DESCRIPTION_LENGTH) return `description longer than ${MAX_DESCRIPTION_LENGTH} characters`;
  const body = change.body.trim();
  if (body.length < MIN_BODY_CHARS) return 'body too short to be a usable skill';
  if (body.length > MAX_BODY_CHARS) return `body longer than ${MAX_BODY_CHARS} characters`;
  // An evolved skill would carry the text into every future prompt (persistent prompt injection).
  const injection = skillInjectionReason({ description: change.description, body });
  return injection ? `refused: looks like a prompt injection (${injection})` : undefined;
}

/**
 * A learned change folded into `target` as it is now: its description, category and origin kept,
 * the lines of `body` it lacks added (see mergeBodies). Evolution merges so when the evolver did not
 * see the current text; approving a proposal does when the skill changed after it was proposed.
 */
export function mergedDraft(target: Skill, body: string, sourceSessions: string[]): SkillDraft {
  return {
    name: target.name,
    description: target.description,
    category: target.category,
    body: mergeBodies(target.body, body),
    origin: target.origin,
    sourceSessions,
  };
}

/** Adds the lines of `addition` that `existing` lacks, under a dated heading. */
export function mergeBodies(existing: string, addition: string): string {
  const known = new Set(existing.split('\n').map(normaliseLine).filter(Boolean));
  const fresh = addition
    .split('\n')
    .filter((line) => !/^#\s/.test(line))
    .filter((line) => {
      const key = normaliseLine(line);
      return key === '' || !known.has(key);
    });
  const text = fresh.join('\n').trim();
  if (text === '') return existing;
  return `${existing.trim()}\n\n**Learned in practice (${new Date().toISOString().slice(0, 10)})**\n\n${text}`;
}

function normaliseLine(line: string): string {
  return line
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}
