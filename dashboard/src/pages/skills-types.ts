import type { SkillDetailView, SkillsListView } from '../../../src/dashboard/views.js';

/** What GET /v1/dashboard/skills and /v1/dashboard/skills/<name> return (src/dashboard/skills.ts). */
export type SkillList = SkillsListView;
export type SkillDetail = SkillDetailView;
export type Proposal = SkillsListView['proposals'][number];
export type Credit = SkillDetailView['credit'];

/** The RL judge's mean score over the turns the skill was shown in, when any were judged. */
export function judgeMean(credit: Credit | null): string {
  return credit?.judge_mean === null || credit?.judge_mean === undefined ? '—' : credit.judge_mean.toFixed(2);
}
