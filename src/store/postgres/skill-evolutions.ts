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

  /**
   * Logs lines written elsewhere (a personal install's evolution_history.jsonl), in order, on `db`;
   * a line already logged word for word is skipped. Returns how many were added.
   */
  static async insertNew(db: Queryable, events: ReadonlyArray<{ line: string; sessionId: string; at: number }>): Promise<number> {
    const result = await db.query(
      `INSERT INTO skill_evolutions (session_id, record, created_at)
       SELECT t.session_id, t.record, t.created_at FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY AS t(session_id, record, created_at, n)
       WHERE NOT EXISTS (SELECT 1 FROM skill_evolutions e WHERE e.record = t.record) ORDER BY t.n`,
      [events.map((event) => toPostgresText(event.sessionId)), events.map((event) => event.line), events.map((event) => event.at)],
    );
    return result.rowCount ?? 0;
  }

  /** Every logged evolution's line (or the last `count`), oldest first. */
  async lines(count?: number): Promise<string[]> {
    const result =
      count === undefined
        ? await this.pool.query('SELECT record FROM skill_evolutions ORDER BY id')
        : await this.pool.query('SELECT record FROM (SELECT id, record FROM skill_evolutions ORDER BY id DESC LIMIT $1) t ORDER BY id', [count]);
    return z
      .array(z.object({ record: z.string() }))
      .parse(result.rows)
      .map((row) => row.record);
  }
}
