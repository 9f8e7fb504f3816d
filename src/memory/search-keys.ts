import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Db } from '../store/index.js';
import { languageOf, type ScriptLanguage } from '../text/index.js';

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
const UNITS_SCANNED = 2_000;

/**
 * Search keys of memory units: short phrases in the languages the user writes, written by a
 * learning job (MemoryService) and indexed with the unit, so a question in Chinese finds a memory
 * written in English that the glossary cannot bridge. Kept by the unit's content hash and language
 * (an edit asks again; the same text in another scope reuses them). Raw turns get none: they are
 * many and short-lived, and the units extracted from them carry what is worth finding.
 */
export class MemorySearchKeys {
  private readonly statements;

  constructor(db: Db) {
    this.statements = {
      units: db.prepare<[number], { rowid: number; id: string; scope: string; content: string }>(
        "SELECT rowid, id, scope, content FROM memory_units WHERE status = 'active' AND origin != 'raw_turn' ORDER BY rowid DESC LIMIT ?",
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

  /** Units without keys in some of `languages` (other than their own) for their content and prompt version. */
  pending(languages: readonly ScriptLanguage[], promptVersion: number, limit: number): PendingUnitKeys[] {
    const result: PendingUnitKeys[] = [];
    for (const unit of this.statements.units.all(UNITS_SCANNED)) {
      const own = languageOf(unit.content);
      const hash = contentHash(unit.content);
      const done = new Map(this.statements.ofHash.all(hash).map((row) => [row.language, row.prompt_version]));
      const missing = languages.filter((language) => language !== own && (done.get(language) ?? -1) < promptVersion);
      if (missing.length > 0) result.push({ ...unit, hash, languages: missing });
      if (result.length === limit) break;
    }
    return result;
  }

  /** Every key of a text, in every language (what is indexed with the unit). */
  keysOf(content: string): string[] {
    return this.statements.ofHash.all(contentHash(content)).flatMap((row) => z.array(z.string()).catch([]).parse(JSON.parse(row.keys)));
  }

  save(hash: string, language: string, keys: readonly string[], promptVersion: number, model: string): void {
    const unique = [...new Set(keys.map((key) => key.trim()).filter((key) => key !== ''))];
    this.statements.upsert.run(hash, language, JSON.stringify(unique), promptVersion, model, Date.now());
  }
}

export function contentHash(content: string): string {
  return createHash('sha256').update(content).digest('hex').slice(0, 24);
}
