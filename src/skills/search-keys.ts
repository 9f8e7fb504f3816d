import { z } from 'zod';
import type { Db } from '../store/index.js';
import { languageOf, type ScriptLanguage } from '../text/index.js';
import type { Skill } from './types.js';

/** The search keys call's answer (prompts/skill-search-keys.md). */
export const searchKeysOutputSchema = z.object({
  skills: z
    .array(
      z.object({
        name: z.string().min(1).max(64),
        language: z.string().min(2).max(5),
        keys: z.array(z.string().trim().min(1).max(80)).max(16),
      }),
    )
    .max(64),
});

export type SearchKeysAnswer = z.infer<typeof searchKeysOutputSchema>;

/** What one skill still needs: the languages it has no keys in for its current content. */
export interface PendingKeys {
  skill: Skill;
  languages: ScriptLanguage[];
}

/**
 * Search keys of skills: short phrases in the languages the user writes, written by a learning job
 * (SkillsService) and indexed with the skill, so a request in Chinese finds an English skill that
 * the glossary alone cannot bridge. Kept in SQLite by the skill's content hash and language: an edit
 * asks again, a revert finds its old keys, and SKILL.md is never touched.
 */
export class SkillSearchKeys {
  private readonly byHash = new Map<string, Map<string, { keys: string[]; promptVersion: number }>>();
  private readonly statements;

  constructor(db: Db) {
    this.statements = {
      all: db.prepare<[], { content_hash: string; language: string; keys: string; prompt_version: number }>(
        'SELECT content_hash, language, keys, prompt_version FROM skill_search_keys',
      ),
      upsert: db.prepare<[string, string, string, string, number, string | null, number]>(
        `INSERT INTO skill_search_keys (content_hash, language, name, keys, prompt_version, model, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT(content_hash, language) DO UPDATE SET name = excluded.name, keys = excluded.keys, prompt_version = excluded.prompt_version, model = excluded.model, created_at = excluded.created_at`,
      ),
    };
    for (const row of this.statements.all.all()) {
      const keys = z.array(z.string()).safeParse(JSON.parse(row.keys));
      if (keys.success) this.remember(row.content_hash, row.language, keys.data, row.prompt_version);
    }
  }

  /** A skill's keys by language, for its current content. */
  keysOf(skill: Skill): Record<string, string[]> {
    const entry = this.byHash.get(skill.contentHash);
    return entry ? Object.fromEntries([...entry].map(([language, { keys }]) => [language, keys])) : {};
  }

  /** The text indexed with a skill (all its keys). */
  textOf(skill: Skill): string {
    const entry = this.byHash.get(skill.contentHash);
    return entry ? [...entry.values()].map(({ keys }) => keys.join('\n')).join('\n') : '';
  }

  /** Skills without keys in some of `languages` (other than their own) for their current content and prompt version. */
  pending(skills: readonly Skill[], languages: readonly ScriptLanguage[], promptVersion: number): PendingKeys[] {
    const result: PendingKeys[] = [];
    for (const skill of skills) {
      const own = languageOf(`${skill.description}\n${skill.body.slice(0, 500)}`);
      const entry = this.byHash.get(skill.contentHash);
      const missing = languages.filter((language) => language !== own && (entry?.get(language)?.promptVersion ?? -1) < promptVersion);
      if (missing.length > 0) result.push({ skill, languages: missing });
    }
    return result;
  }

  save(skill: Skill, language: string, keys: readonly string[], promptVersion: number, model: string): void {
    const unique = [...new Set(keys.map((key) => key.trim()).filter((key) => key !== ''))];
    this.statements.upsert.run(skill.contentHash, language, skill.name, JSON.stringify(unique), promptVersion, model, Date.now());
    this.remember(skill.contentHash, language, unique, promptVersion);
  }

  private remember(hash: string, language: string, keys: string[], promptVersion: number): void {
    const entry = this.byHash.get(hash) ?? new Map<string, { keys: string[]; promptVersion: number }>();
    entry.set(language, { keys, promptVersion });
    this.byHash.set(hash, entry);
  }
}

/** A skill as the search keys prompt shows it: name, description and the start of its body. */
export function renderForKeys(skill: Skill, languages: readonly string[]): string {
  return `### ${skill.name} (keys in: ${languages.join(', ')})\ndescription: ${skill.description}\n${skill.body.slice(0, 600)}`;
}
