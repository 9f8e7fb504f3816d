/** One skill as loaded from `<skills.dir>/<name>/SKILL.md`. */
export interface Skill {
  name: string;
  description: string;
  category: string;
  body: string;
  /** Our optional frontmatter fields. */
  version: number;
  origin: SkillOrigin;
  createdAt: string | undefined;
  updatedAt: string | undefined;
  generation: number | undefined;
  sourceSessions: string[];
  /** Frontmatter keys we do not know (Agent Skills' `license`, `allowed-tools`, …), kept on rewrite. */
  extra: Record<string, unknown>;
  /** Where it was read from, and a hash of the file's text (changes trigger re-indexing). */
  path: string;
  contentHash: string;
  /** Tokens of the full body and of the name + description line (for budgets). */
  bodyTokens: number;
  summaryTokens: number;
}

export type SkillOrigin = 'starter' | 'user' | 'evolved' | 'imported';

/** A SKILL.md that failed validation: reported, skipped, never fatal. */
export interface SkillProblem {
  path: string;
  reason: string;
}

/** What a writer supplies; the library fills in the bookkeeping fields. */
export interface SkillDraft {
  name: string;
  description: string;
  category?: string;
  body: string;
  origin?: SkillOrigin;
  sourceSessions?: string[];
  extra?: Record<string, unknown>;
}
