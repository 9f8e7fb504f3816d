/** What GET /v1/dashboard/skills and /v1/dashboard/skills/<name> return (src/dashboard/skills.ts). */

export interface Credit {
  injected: number;
  full_body: number;
  sessions: number;
  corrected: number;
  accepted: number;
  judged: number;
  judge_mean: number | null;
  last_used_at: string | null;
  flagged: boolean;
}

export interface Proposal {
  id: number;
  action: 'create' | 'update';
  name: string;
  session_id: string | null;
  description: string;
  category: string;
  body: string;
  evidence: string[];
  reason: string | null;
  created_at: string;
  /** against the skill as it is now, when it exists */
  current_version: number | null;
  patch: string | null;
}

export interface SkillList {
  generation: number;
  review: 'auto' | 'manual';
  total: number;
  matched: number;
  query: string;
  skills: Array<{
    name: string;
    category: string;
    description: string;
    version: number;
    origin: string;
    updated_at: string | null;
    credit: Credit | null;
  }>;
  proposals: Proposal[];
  invalid_files: Array<{ path: string; reason: string }>;
}

export interface SkillDetail {
  name: string;
  exists: boolean;
  description: string | null;
  category: string | null;
  origin: string | null;
  version: number | null;
  created_at: string | null;
  updated_at: string | null;
  source_sessions: string[];
  body: string | null;
  text: string | null;
  tokens: number | null;
  credit: Credit | null;
  recent_sessions: string[];
  versions: Array<{ version: number; action: string; generation: number; source: string | null; created_at: string }>;
  diff: { from: number | null; to: number | null; patch: string | null; problem: string | null } | null;
  pending_proposals: number[];
}

/** The RL judge's mean score over the turns the skill was shown in, when any were judged. */
export function judgeMean(credit: Credit | null): string {
  return credit?.judge_mean === null || credit?.judge_mean === undefined ? '—' : credit.judge_mean.toFixed(2);
}
