import { z } from 'zod';
import { callPromptForJson } from '../learning/job-call.js';
import type { JobContext } from '../learning/runner.js';
import type { LlmTarget } from '../learning/llm-client.js';
import type { Prompt } from '../prompts/index.js';
import type { Db } from '../store/index.js';
import type { ScriptLanguage } from '../text/index.js';
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

/** One stored row of skill search keys (a skill's content hash and a language). */
export interface SkillKeyRow {
  content_hash: string;
  language: string;
  keys: string;
  prompt_version: number;
}

/**
 * Skills' search keys held in memory by content hash and language: what retrieval indexes with a
 * skill and what a search keys job still has to ask for. Filled from rows of `skill_search_keys`,
 * wherever they are kept (SQLite for a personal install, `SkillSearchKeys`; the team store, see
 * store/postgres/skill-key-jobs.ts).
 */
export class SkillKeyCache {
  private byHash = new Map<string, Map<string, { keys: string[]; promptVersion: number }>>();

  /** Replaces what is held by `rows`; returns the content hashes whose keys changed. */
  load(rows: readonly SkillKeyRow[]): Set<string> {
    const before = this.byHash;
    this.byHash = new Map();
    for (const row of rows) {
      const keys = z.array(z.string()).safeParse(JSON.parse(row.keys));
      if (keys.success) this.remember(row.content_hash, row.language, keys.data, row.prompt_version);
    }
    const changed = new Set<string>();
    for (const hash of new Set([...before.keys(), ...this.byHash.keys()]))
      if (JSON.stringify([...(before.get(hash) ?? [])]) !== JSON.stringify([...(this.byHash.get(hash) ?? [])])) changed.add(hash);
    return changed;
  }

  /** A skill's keys by language, for its current content (a language the model had none in is left out). */
  keysOf(skill: Skill): Record<string, string[]> {
    const entry = this.byHash.get(skill.contentHash);
    return entry ? Object.fromEntries([...entry].filter(([, { keys }]) => keys.length > 0).map(([language, { keys }]) => [language, keys])) : {};
  }

  /** The text indexed with a skill (all its keys). */
  textOf(skill: Skill): string {
    const entry = this.byHash.get(skill.contentHash);
    return entry ? [...entry.values()].map(({ keys }) => keys.join('\n')).join('\n') : '';
  }

  /**
   * Skills without keys in some of `languages` for their current content and prompt version. The
   * skill's own language is asked too: there the keys are the other words people ask with (a user
   * rarely writes the words of the skill's author), which keyword search cannot otherwise bridge.
   */
  pending(skills: readonly Skill[], languages: readonly ScriptLanguage[], promptVersion: number): PendingKeys[] {
    const result: PendingKeys[] = [];
    for (const skill of skills) {
      const entry = this.byHash.get(skill.contentHash);
      const missing = languages.filter((language) => (entry?.get(language)?.promptVersion ?? -1) < promptVersion);
      if (missing.length > 0) result.push({ skill, languages: missing });
    }
    return result;
  }

  protected remember(hash: string, language: string, keys: string[], promptVersion: number): void {
    const entry = this.byHash.get(hash) ?? new Map<string, { keys: string[]; promptVersion: number }>();
    entry.set(language, { keys, promptVersion });
    this.byHash.set(hash, entry);
  }
}

/**
 * Search keys of skills: short phrases in the languages the user writes, written by a learning job
 * (SkillsService) and indexed with the skill, so a request in Chinese finds an English skill that
 * the glossary alone cannot bridge. Kept in SQLite by the skill's content hash and language: an edit
 * asks again, a revert finds its old keys, and SKILL.md is never touched.
 */
export class SkillSearchKeys extends SkillKeyCache {
  private readonly statements;

  constructor(db: Db) {
    super();
    this.statements = {
      all: db.prepare<[], SkillKeyRow>('SELECT content_hash, language, keys, prompt_version FROM skill_search_keys'),
      upsert: db.prepare<[string, string, string, string, number, string | null, number]>(
        `INSERT INTO skill_search_keys (content_hash, language, name, keys, prompt_version, model, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT(content_hash, language) DO UPDATE SET name = excluded.name, keys = excluded.keys, prompt_version = excluded.prompt_version, model = excluded.model, created_at = excluded.created_at`,
      ),
    };
    this.load(this.statements.all.all());
  }

  save(skill: Skill, language: string, keys: readonly string[], promptVersion: number, model: string): void {
    const unique = uniqueKeys(keys);
    this.statements.upsert.run(skill.contentHash, language, skill.name, JSON.stringify(unique), promptVersion, model, Date.now());
    this.remember(skill.contentHash, language, unique, promptVersion);
  }
}

/** Keys as stored: trimmed, without blanks or repeats. */
export function uniqueKeys(keys: readonly string[]): string[] {
  return [...new Set(keys.map((key) => key.trim()).filter((key) => key !== ''))];
}

/** Skills per search keys call, and calls per job (a large library is done over several jobs). */
const KEYS_BATCH = 8;
const KEYS_BATCHES_PER_JOB = 4;

/** Keys the model wrote for one skill in one language (empty: it had none, and is not asked again). */
export interface WrittenSkillKeys {
  skill: Skill;
  language: string;
  keys: string[];
}

/**
 * Asks the learning model for search keys of the first skills of `pending` (as many as one job
 * does), a batch per call; returns an answer for every skill and language asked (empty when the
 * model gave none) and the skills it asked about. Storing
 * them is the caller's: SQLite at once, or the team store in the job's effect.
 */
export async function askSkillSearchKeys(
  context: JobContext,
  target: LlmTarget,
  prompt: Prompt,
  pending: readonly PendingKeys[],
): Promise<{ written: WrittenSkillKeys[]; asked: PendingKeys[] }> {
  const asked = pending.slice(0, KEYS_BATCH * KEYS_BATCHES_PER_JOB);
  const written: WrittenSkillKeys[] = [];
  for (let start = 0; start < asked.length; start += KEYS_BATCH) {
    const batch = asked.slice(start, start + KEYS_BATCH);
    const values = {
      languages: [...new Set(batch.flatMap((item) => item.languages))].join(', '),
      skills: batch.map((item) => renderForKeys(item.skill, item.languages)).join('\n\n'),
    };
    const { value } = await callPromptForJson(
      context,
      target,
      prompt,
      values,
      { name: 'skill_search_keys', schema: searchKeysOutputSchema },
      { maxTokens: 300 * batch.length, temperature: 0.2 },
    );
    for (const { skill, languages } of batch)
      for (const language of languages) {
        const answer = value.skills.find((item) => item.name === skill.name && item.language === language);
        // An empty answer is kept too, so the skill is not asked about again (and a job that has more
        // to do than it holds, which runs again, always gets further).
        written.push({ skill, language, keys: uniqueKeys(answer?.keys ?? []) });
      }
  }
  return { written, asked };
}

/** A skill as the search keys prompt shows it: name, description and the start of its body. */
export function renderForKeys(skill: Skill, languages: readonly string[]): string {
  return `### ${skill.name} (keys in: ${languages.join(', ')})\ndescription: ${skill.description}\n${skill.body.slice(0, 600)}`;
}
