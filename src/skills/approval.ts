import { mergedDraft } from './evolution/apply.js';
import type { ProposalRow } from './proposals.js';
import { sameSkillContent } from './skill-file.js';
import type { Skill, SkillDraft } from './types.js';

/**
 * What approving a proposal writes over the skill as it is now: the drafted text as proposed, or,
 * when the skill changed after the proposal was written (a person's edit, another approved
 * proposal, a revert), the proposal's new lines merged into the current text — never written over
 * it, since the draft was made from a text that is no longer the current one — or nothing, when the
 * current text already holds every line the proposal adds. The personal library and the team store
 * both approve through this.
 */
export type Approval = { kind: 'as-proposed'; draft: SkillDraft } | { kind: 'merged'; draft: SkillDraft; into: Skill } | { kind: 'already-held'; into: Skill };

/** `lastChangeAt`: when the skill's latest recorded version was written (ms), if it has one. */
export function approvalOf(proposal: ProposalRow, current: Skill | undefined, lastChangeAt: number | undefined): Approval {
  const proposed = proposedDraft(proposal);
  if (current === undefined || (lastChangeAt ?? 0) <= proposal.created_at) return { kind: 'as-proposed', draft: proposed };
  const draft = mergedDraft(current, proposed.body, proposed.sourceSessions ?? []);
  return sameSkillContent(current, draft) ? { kind: 'already-held', into: current } : { kind: 'merged', draft, into: current };
}

export function proposedDraft(proposal: ProposalRow): SkillDraft {
  return JSON.parse(proposal.draft) as SkillDraft;
}

/** The version history's source line of an approved proposal. */
export function approvalSource(proposal: ProposalRow): string {
  return `proposal #${proposal.id} (session ${proposal.session_id ?? '-'})`;
}
