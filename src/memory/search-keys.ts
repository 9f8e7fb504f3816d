import { createHash } from 'node:crypto';
import { z } from 'zod';
import { callPromptForJson } from '../learning/job-call.js';
import type { LlmTarget } from '../learning/llm-client.js';
import type { JobContext } from '../learning/runner.js';
import type { Prompt } from '../prompts/index.js';
import { uniqueKeys } from '../skills/search-keys.js';
import type { Db } from '../store/index.js';
import { languageOf, type ScriptLanguage } from '../text/index.js';
import type { SearchKeysSource } from './store.js';

/** The memory search keys call's answer (prompts/memory-search-keys.md). */
export const memoryKeysOutputSchema = z.object({
  units: z
    .array(
      z.object({
        id: z.string().min(1).max(64),
        language: z.string().min(2).max(5),
        keys: z.array(z.string().trim().min(1).max(80)).max(12),
      }),
    )
    .max(64),
});

/** A unit that lacks keys in some of the user's languages, for its current content. */
export interface PendingUnitKeys {
  rowid: number;
  id: string;
  scope: string;
  content: string;
  hash: string;
  languages: ScriptLanguage[];
}

/** Units looked at per job: the newest (a job after that finds the older ones). */
export const UNITS_SCANNED = 2_000;
/** Units per search keys call, and calls per job (a large memory is done over several jobs). */
const KEYS_BATCH = 12;
const KEYS_BATCHES_PER_JOB = 2;
/** Units one job asks about. */
export const UNITS_PER_JOB = KEYS_BATCH * KEYS_BATCHES_PER_JOB;

/**
 * Search keys of memory units: short phrases in the languages the user writes, written by a
 * learning job (MemoryService) and indexed with the unit, so a question in Chinese finds a memory
 * written in English that the glossary cannot bridge. Kept by the unit's content hash and language
 * (an edit asks again; the same text in another scope reuses them). A unit written without keys
 * gets them in its own language too (pendingUnitKeys). Raw turns get none: they are many and
 * short-lived, and the units extracted from them carry what is worth finding.
 */
export class MemorySearchKeys implements SearchKeysSource {
  private readonly statements;
  /** How many times keys were written (a unit prepared before then reads its keys again). */
  written = 0;

  constructor(db: Db) {
    this.statements = {
      units: db.prepare<[number], UnitToKey>(
        "SELECT rowid, id, scope, content, search_keys FROM memory_units WHERE status = 'active' AND origin != 'raw_turn' ORDER BY rowid DESC LIMIT ?",
      ),
      ofHash: db.prepare<[string], { language: string; keys: string; prompt_version: number }>(
        'SELECT language, keys, prompt_version FROM memory_search_keys WHERE content_hash = ?',
      ),
      upsert: db.prepare<[string, string, string, number, string, number]>(
        `INSERT INTO memory_search_keys (content_hash, language, keys, prompt_version, model, created_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT(content_hash, language) DO UPDATE SET keys = excluded.keys, prompt_version = excluded.prompt_version, model = excluded.model, created_at = excluded.created_at`,
      ),
    };
  }

  /** Units without keys in some of `languages` for their content and prompt version (pendingUnitKeys). */
  pending(languages: readonly ScriptLanguage[], promptVersion: number, limit: number): PendingUnitKeys[] {
    return pendingUnitKeys(
      this.statements.units.all(UNITS_SCANNED),
      (hash) => new Map(this.statements.ofHash.all(hash).map((row) => [row.language, row.prompt_version])),
      languages,
      promptVersion,
      limit,
    );
  }

  /** Every key of a text, in every language (what is indexed with the unit). */
  keysOf(content: string): string[] {
    return this.statements.ofHash.all(contentHash(content)).flatMap((row) => z.array(z.string()).catch([]).parse(JSON.parse(row.keys)));
  }

  save(hash: string, language: string, keys: readonly string[], promptVersion: number, model: string): void {
    this.written++;
    this.statements.upsert.run(hash, language, JSON.stringify(uniqueKeys(keys)), promptVersion, model, Date.now());
  }
}

export function contentHash(content: string): string {
  return createHash('sha256').update(content).digest('hex').slice(0, 24);
}

/** A unit the search keys job looks at: `search_keys` is the JSON list its writer gave it (the extractor's keys), often empty. */
export interface UnitToKey {
  rowid: number;
  id: string;
  scope: string;
  content: string;
  search_keys: string;
}

/**
 * Of `units` (newest first), those lacking keys in some of `languages` for their content and
 * prompt version, up to `limit`. The unit's own language is asked only of a unit that came without
 * keys of its own (a rule the detector found, a unit added by hand or imported without keys): there
 * the keys are the other words a question uses ("pet" for a greyhound), which the extractor already
 * wrote for the units it keeps. `done`: the languages a content hash has keys in, with their prompt
 * versions (wherever they are kept: SQLite or the team store).
 */
export function pendingUnitKeys(
  units: Iterable<UnitToKey>,
  done: (hash: string) => ReadonlyMap<string, number>,
  languages: readonly ScriptLanguage[],
  promptVersion: number,
  limit: number,
): PendingUnitKeys[] {
  const result: PendingUnitKeys[] = [];
  for (const { search_keys, ...unit } of units) {
    const own = hasOwnKeys(search_keys) ? languageOf(unit.content) : undefined;
    const hash = contentHash(unit.content);
    const have = done(hash);
    const missing = languages.filter((language) => language !== own && (have.get(language) ?? -1) < promptVersion);
    if (missing.length > 0) result.push({ ...unit, hash, languages: missing });
    if (result.length === limit) break;
  }
  return result;
}

/** Whether a unit's `search_keys` column (a JSON list) holds any key; unreadable counts as none. */
function hasOwnKeys(column: string): boolean {
  try {
    const keys: unknown = JSON.parse(column);
    return Array.isArray(keys) && keys.length > 0;
  } catch {
    return false;
  }
}

/** Keys the model wrote for one unit's text in one language (empty: it had none, and is not asked again). */
export interface WrittenUnitKeys {
  unit: PendingUnitKeys;
  language: string;
  keys: string[];
}

/**
 * Asks the learning model for search keys of the first UNITS_PER_JOB units of `pending`, a batch per
 * call; returns an answer for every unit and language asked (storing them is the caller's: SQLite
 * at once, or the team store in the job's effect) and the units asked about.
 */
export async function askMemorySearchKeys(
  context: JobContext,
  target: LlmTarget,
  prompt: Prompt,
  pending: readonly PendingUnitKeys[],
): Promise<{ written: WrittenUnitKeys[]; asked: PendingUnitKeys[] }> {
  const asked = pending.slice(0, UNITS_PER_JOB);
  const written: WrittenUnitKeys[] = [];
  for (let start = 0; start < asked.length; start += KEYS_BATCH) {
    const batch = asked.slice(start, start + KEYS_BATCH);
    const values = {
      languages: [...new Set(batch.flatMap((unit) => unit.languages))].join(', '),
      units: batch.map((unit) => `### ${unit.id} (keys in: ${unit.languages.join(', ')})\n${unit.content.slice(0, 600)}`).join('\n\n'),
    };
    const { value } = await callPromptForJson(
      context,
      target,
      prompt,
      values,
      { name: 'memory_search_keys', schema: memoryKeysOutputSchema },
      { maxTokens: 200 * batch.length, temperature: 0.2 },
    );
    for (const unit of batch)
      for (const language of unit.languages) {
        const answer = value.units.find((item) => item.id === unit.id && item.language === language);
        // An empty answer is kept too, so the unit is not asked about again.
        written.push({ unit, language, keys: uniqueKeys(answer?.keys ?? []) });
      }
  }
  return { written, asked };
}
