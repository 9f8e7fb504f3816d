import type pg from 'pg';
import { creditOf, FIGURES, RECENT_SESSIONS, type FigureRow, type SkillCredit } from '../../skills/credit.js';
import { sharedRows } from './shared-rows.js';

/** The team's skill credit (SkillCreditStore's figures, read from every node's recorded usage), for the dashboard and `metaclaw skills`. */
export class PgSkillCredit {
  constructor(private readonly pool: Pick<pg.Pool, 'query'>) {}

  /** Every credited skill's figures, by name. */
  async figures(): Promise<Map<string, SkillCredit>> {
    return new Map((await sharedRows<FigureRow>(this.pool, `${FIGURES} GROUP BY u.skill`)).map((row) => [row.skill, creditOf(row)]));
  }

  async figuresOf(name: string): Promise<SkillCredit | undefined> {
    const [row] = await sharedRows<FigureRow>(this.pool, `${FIGURES} WHERE u.skill = ? GROUP BY u.skill`, [name]);
    return row && creditOf(row);
  }

  /** The sessions the skill was shown in lately, newest first. */
  async recentSessions(name: string, limit: number): Promise<string[]> {
    return (await sharedRows<{ session_id: string }>(this.pool, RECENT_SESSIONS, [name, limit])).map((row) => row.session_id);
  }
}
