import type { Pool } from 'pg';
import { z } from 'zod';
import { evolutionLine } from '../../skills/history.js';
import type { Queryable } from './job-queue.js';
import { toPostgresText } from './text.js';

/**
 * The team's evolution log (table skill_evolutions, migration 30): one row per evolution a node's
 * skills.evolve job finished, holding the line a personal install appends to its
 * evolution_history.jsonl, so `metaclaw skills log` reads the same lines from either store.
 */
export class PgSkillEvolutions {
  constructor(private readonly pool: Pool) {}

  /** Logs an evolution on `db`: the evolve job's effect transaction, so it is logged once, with the changes it made. */
  static async record(db: Queryable, sessionId: string, event: Record<string, unknown>, at = new Date()): Promise<void> {
    await db.query('INSERT INTO skill_evolutions (session_id, record, created_at) VALUES ($1, $2, $3)', [
      toPostgresText(sessionId),
      evolutionLine(event, at),
      at.getTime(),
    ]);
  }

  /** Every logged evolution's line, oldest first. */
  async lines(): Promise<string[]> {
    const result = await this.pool.query('SELECT record FROM skill_evolutions ORDER BY id');
    return z
      .array(z.object({ record: z.string() }))
      .parse(result.rows)
      .map((row) => row.record);
  }
}
