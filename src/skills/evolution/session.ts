import { callPromptForJson, InvalidLlmOutputError, type JobContext, type LlmTarget } from '../../learning/index.js';
import { loadPrompt } from '../../prompts/index.js';
import { keywordRelevance, uniqueTerms } from '../../text/index.js';
import type { SkillSearchIndex } from '../search-index.js';
import type { Skill } from '../types.js';
import { planChanges, type PlannedChange, type Rejected } from './apply.js';
import { evolverOutputSchema } from './schema.js';
import type { SessionTranscript } from './transcript.js';

/**
 * One evolution of the library from a session, up to the changes to write: which skills the
 * evolver is shown, its call, and the validated plan. Where the plan is written is the caller's:
 * the personal library on disk (SkillsService) or the team store (a team node's job effect).
 */

/** The library as evolution reads it: skills by name and the keyword index over them. */
export interface EvolvingLibrary {
  get(name: string): Skill | undefined;
  all(): Skill[];
  readonly index: SkillSearchIndex;
}

export interface EvolutionMeta {
  reason: string;
  turns: number;
  model: string;
  tokens: number;
  promptVersion: number;
}

export interface EvolutionPlan {
  planned: PlannedChange[];
  rejected: Rejected[];
  /** The version of each skill the evolver was shown in full. */
  seen: Map<string, number>;
  meta: EvolutionMeta;
}

/** The existing skill most similar to `text` by keywords. */
export function nearestSkill(library: EvolvingLibrary, text: string, excluding?: string): { skill: Skill; relevance: number } | undefined {
  let best: { skill: Skill; relevance: number } | undefined;
  for (const hit of library.index.search(uniqueTerms(text))) {
    if (hit.name === excluding) continue;
    const skill = library.get(hit.name);
    if (!skill) continue;
    const relevance = keywordRelevance(hit.coverage, hit.evidence);
    if (!best || relevance > best.relevance) best = { skill, relevance };
  }
  return best;
}

/** Skills related to what the session asked for (its latest distinct requests). */
function relatedSkills(library: EvolvingLibrary, requests: readonly string[]): Skill[] {
  const recent = [...new Set(requests)].slice(-20).join('\n').slice(-6_000);
  return library.index
    .search(uniqueTerms(recent))
    .slice(0, 6)
    .map((hit) => library.get(hit.name))
    .filter((skill): skill is Skill => skill !== undefined);
}

function renderForPrompt(skill: Skill): string {
  return `#### ${skill.name} (category ${skill.category}, v${skill.version})\ndescription: ${skill.description}\n${skill.body.slice(0, 2_500)}`;
}

/** Asks the evolver what the session teaches and plans the changes against `library` (nothing is written). */
export async function planSessionEvolution(input: {
  library: EvolvingLibrary;
  transcript: SessionTranscript;
  target: LlmTarget;
  sessionId: string;
  reason: string;
  maxChanges: number;
  context: JobContext;
}): Promise<EvolutionPlan> {
  const { library, transcript, target, sessionId, context } = input;
  const related = relatedSkills(library, transcript.userRequests);
  const prompt = loadPrompt('skill-evolve');
  const values = {
    session_id: sessionId,
    turn_count: String(transcript.turnsUsed),
    reason: input.reason,
    transcript: transcript.text,
    related_skills: related.length > 0 ? related.map(renderForPrompt).join('\n\n') : '(none)',
    all_names:
      library
        .all()
        .map((skill) => skill.name)
        .sort()
        .join(', ') || '(the library is empty)',
    max_changes: String(input.maxChanges),
  };
  let output;
  try {
    output = await callPromptForJson(
      context,
      target,
      prompt,
      values,
      { name: 'skill_changes', schema: evolverOutputSchema },
      { maxTokens: 3_000, temperature: 0.2 },
    );
  } catch (error) {
    if (error instanceof InvalidLlmOutputError)
      context.logger.warn({ session: sessionId, err: error.message }, 'the evolver returned unusable output; nothing written');
    throw error;
  }
  const seen = new Map(related.map((skill) => [skill.name, skill.version]));
  const { planned, rejected } = planChanges(output.value.changes, {
    get: (name) => library.get(name),
    nearest: (text, excluding) => nearestSkill(library, text, excluding),
    seenVersion: (name) => seen.get(name),
    sessionId,
    maxChanges: input.maxChanges,
  });
  return {
    planned,
    rejected,
    seen,
    meta: {
      reason: input.reason,
      turns: transcript.turnsUsed,
      model: target.model,
      tokens: output.reply.inputTokens + output.reply.outputTokens,
      promptVersion: prompt.version,
    },
  };
}

/** The evolution history line (MetaClaw's evolution_history.jsonl fields, plus ours). */
export function evolutionRecord(
  sessionId: string,
  plan: Pick<EvolutionPlan, 'planned' | 'rejected' | 'meta'>,
  outcome: { review: 'auto' | 'manual'; applied: ReadonlyArray<{ skill: Skill; action: string }>; proposed: readonly number[] },
): Record<string, unknown> {
  const { planned, rejected, meta } = plan;
  return {
    session_id: sessionId,
    reason: meta.reason,
    num_turns_analyzed: meta.turns,
    model: meta.model,
    prompt_version: meta.promptVersion,
    tokens: meta.tokens,
    review: outcome.review,
    num_skills_generated: outcome.applied.filter((change) => change.action === 'create').length,
    skill_names: [
      ...outcome.applied.map((change) => change.skill.name),
      ...planned.filter((_, index) => outcome.proposed[index] !== undefined).map((change) => change.draft.name),
    ],
    changes: planned.map((change, index) => ({
      action: change.action,
      name: change.draft.name,
      merged_into: change.mergedInto ?? null,
      evidence: change.evidence,
      reason: change.reason ?? null,
      status: outcome.review === 'manual' ? `pending #${outcome.proposed[index]}` : 'applied',
    })),
    rejected,
  };
}
