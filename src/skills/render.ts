import { escapeContextTags } from '../context/index.js';
import { countTextTokens } from '../text/index.js';
import type { RetrievedSkill } from './retrieval.js';

export interface RenderOptions {
  /** Token budget for the whole skills section. */
  maxTokens: number;
  /** How many of the best skills carry their full body (the rest: name and description). */
  fullBodyTopN: number;
}

export interface RenderedSkills {
  text: string;
  tokens: number;
  shown: Array<{ name: string; version: number; relevance: number; keyword: number; semantic: number | null; full: boolean }>;
}

/** MetaClaw's marker, kept so existing tooling that looks for it still finds it. */
export const SKILLS_HEADING = '## Active Skills';
const INTRO = 'Skills from your library that match this request. Follow them when they fit; ignore them when they do not.';
const BRIEF_HEADING = '### Also relevant (summaries)';

/**
 * Renders the chosen skills within the budget: full bodies for the best few (progressive
 * disclosure: the rest as name and description). Output order is by name, not by score, so the
 * same set of skills renders to the same bytes turn after turn and the provider's prompt cache holds.
 */
export function renderSkills(retrieved: readonly RetrievedSkill[], options: RenderOptions): RenderedSkills | undefined {
  if (retrieved.length === 0 || options.maxTokens <= 0) return undefined;
  const overhead = countTextTokens(`${SKILLS_HEADING}\n${INTRO}\n${BRIEF_HEADING}`);
  let budget = options.maxTokens - overhead;
  const full: RetrievedSkill[] = [];
  const brief: RetrievedSkill[] = [];
  for (const [rank, item] of retrieved.entries()) {
    const fullCost = item.skill.bodyTokens + item.skill.summaryTokens + 8;
    if (rank < options.fullBodyTopN && fullCost <= budget) {
      full.push(item);
      budget -= fullCost;
      continue;
    }
    const briefCost = item.skill.summaryTokens + 6;
    if (briefCost <= budget) {
      brief.push(item);
      budget -= briefCost;
    }
  }
  if (full.length === 0 && brief.length === 0) return undefined;
  const byName = (a: RetrievedSkill, b: RetrievedSkill) => a.skill.name.localeCompare(b.skill.name);
  full.sort(byName);
  brief.sort(byName);
  const parts = [SKILLS_HEADING, INTRO];
  // Library text is data: escaped so that no skill, however written, can close the context block.
  for (const { skill } of full) parts.push('', `### ${skill.name}`, `_${oneLine(skill.description)}_`, '', escapeContextTags(skill.body.trim()));
  if (brief.length > 0) {
    parts.push('', BRIEF_HEADING);
    for (const { skill } of brief) parts.push(`- **${skill.name}**: ${oneLine(skill.description)}`);
  }
  const text = parts.join('\n');
  const shown = [...full.map((item) => describe(item, true)), ...brief.map((item) => describe(item, false))];
  return { text, tokens: options.maxTokens - budget, shown };
}

function describe(item: RetrievedSkill, full: boolean) {
  return {
    name: item.skill.name,
    version: item.skill.version,
    relevance: round(item.relevance),
    keyword: round(item.keyword),
    semantic: item.semantic === undefined ? null : round(item.semantic),
    full,
  };
}

function oneLine(text: string): string {
  return escapeContextTags(text).replace(/\s+/g, ' ').trim();
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}
