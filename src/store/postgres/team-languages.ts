import type pg from 'pg';
import { z } from 'zod';
import { RECENT_TURNS, requestLanguages } from '../../conversation/languages.js';
import type { ScriptLanguage } from '../../text/index.js';

/**
 * The languages the team writes requests in, from the latest main turns of the team store (what
 * `UserLanguages` reads from a personal install's turns, with the same rule): the search keys jobs
 * write keys in them. Read by learning jobs, never on the request path.
 */
export class PgUserLanguages {
  private seen: readonly ScriptLanguage[] = [];

  constructor(private readonly pool: pg.Pool) {}

  /** The languages found by the last `refresh`. */
  get current(): readonly ScriptLanguage[] {
    return this.seen;
  }

  async refresh(): Promise<readonly ScriptLanguage[]> {
    const result = await this.pool.query(
      "SELECT query FROM turns WHERE turn_type = 'main' AND query IS NOT NULL AND query <> '' ORDER BY started_at DESC LIMIT $1",
      [RECENT_TURNS],
    );
    this.seen = requestLanguages(
      z
        .array(z.object({ query: z.string() }))
        .parse(result.rows)
        .map((row) => row.query),
    );
    return this.seen;
  }
}
