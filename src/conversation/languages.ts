import type { Db } from '../store/index.js';
import { languageOf, type ScriptLanguage } from '../text/index.js';

/** Requests read to tell a user's languages: the latest main turns. */
export const RECENT_TURNS = 300;
/** A language counts once this many of those requests were written in it (one pasted error message is not a language). */
const LEAST_TURNS = 2;

/**
 * The languages the user has been seen writing requests in, from the recorded turns (the user's
 * real requests, wrappers removed), most used first. Read off the request path: at start and by
 * learning jobs.
 */
export class UserLanguages {
  private readonly recent;
  private seen: readonly ScriptLanguage[] = [];

  constructor(db: Db) {
    this.recent = db
      .prepare<[number], string>("SELECT query FROM turns WHERE turn_type = 'main' AND query IS NOT NULL AND query != '' ORDER BY started_at DESC LIMIT ?")
      .pluck();
  }

  /** The languages found by the last `refresh`. */
  get current(): readonly ScriptLanguage[] {
    return this.seen;
  }

  /** Reads the latest requests again. */
  refresh(): readonly ScriptLanguage[] {
    this.seen = requestLanguages(this.recent.all(RECENT_TURNS));
    return this.seen;
  }
}

/** The languages a user's requests are written in, most used first (a language needs LEAST_TURNS of them). */
export function requestLanguages(queries: readonly string[]): ScriptLanguage[] {
  const counts = new Map<ScriptLanguage, number>();
  for (const query of queries) {
    const language = languageOf(query);
    if (language) counts.set(language, (counts.get(language) ?? 0) + 1);
  }
  return [...counts]
    .filter(([, count]) => count >= LEAST_TURNS)
    .sort((a, b) => b[1] - a[1])
    .map(([language]) => language);
}
