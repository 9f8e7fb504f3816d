import type pg from 'pg';
import { budgetPauseReason, localDay, type SpendSummary } from '../../learning/budget.js';
import { DB_CLOCK_MS as CLOCK, inTransaction } from './transaction.js';
import type { LearningBudgetStore } from '../ports.js';

/**
 * One daily learning budget for a whole team: every node's learning LLM calls count against the
 * same `learning.daily_token_budget`. Spend is kept per day and kind in learning_spend, as in
 * the personal store (LearningBudget), so summaries read alike.
 *
 * Checking the budget and then spending is a race once several nodes do it: each sees room for one
 * more call and all of them make it. So a node reserves the tokens a call may spend before it
 * makes it, and settles the reservation with what the call really spent afterwards. Reservations
 * of one day are granted one at a time (a transaction-level advisory lock per day) and a grant
 * reads spend and live reservations in one snapshot, so granted reservations never add up past
 * the budget. A reservation a node never settles (it died) expires instead of holding the budget
 * all day.
 *
 * The day is the node's local day, as in the personal store: nodes of one team should share a
 * time zone, or their days (and budgets) turn over at different hours.
 */

export interface BudgetReservation {
  readonly id: number;
  readonly day: string;
  readonly kind: string;
  readonly tokens: number;
}

export interface TeamSpendSummary extends SpendSummary {
  /** Tokens reserved today by calls still under way. */
  reservedToday: number;
}

/** The advisory lock key reservations are granted under, with the day's hash as the second key ('mcbg' in ASCII). */
const BUDGET_LOCK = 0x6d636267;
export class PgLearningBudget implements LearningBudgetStore {
  constructor(
    private readonly pool: pg.Pool,
    private readonly dailyTokenBudget: number,
    private readonly nodeId: string,
  ) {}

  get dailyLimit(): number {
    return this.dailyTokenBudget;
  }

  /**
   * Sets `tokens` aside for a call of `kind` (reserve what the call may spend at most). Undefined
   * when today's spend plus live reservations leave no room for them. `ttlMs`: how long the
   * reservation holds if never settled.
   */
  async reserve(kind: string, tokens: number, options: { ttlMs?: number; now?: Date } = {}): Promise<BudgetReservation | undefined> {
    const day = localDay(options.now ?? new Date());
    const amount = Math.max(0, Math.round(tokens));
    return inTransaction(this.pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [BUDGET_LOCK, day]);
      // One statement, so spend and reservations are read in one snapshot: a settle committing
      // meanwhile is seen whole (reservation gone, spend in) or not at all.
      const granted = await client.query<{ id: string }>(
        `INSERT INTO learning_reservations (day, kind, tokens, node_id, created_at, expires_at)
         SELECT $1::text, $2::text, $3::bigint, $4::text, clock.now, clock.now + $6::bigint FROM (SELECT ${CLOCK} AS now) clock
         WHERE $5::bigint <= 0
            OR (SELECT COALESCE(sum(tokens), 0) FROM learning_spend WHERE day = $1)
             + (SELECT COALESCE(sum(tokens), 0) FROM learning_reservations WHERE day = $1 AND expires_at > clock.now)
             + $3 <= $5
         RETURNING id`,
        [day, kind, amount, this.nodeId, this.dailyTokenBudget, options.ttlMs ?? 15 * 60_000],
      );
      // Reservations a day past their expiry count for nothing: cleared here, under the lock, by whoever reserves next.
      await client.query(`DELETE FROM learning_reservations WHERE expires_at <= ${CLOCK} - 86400000`);
      const id = granted.rows[0]?.id;
      return id === undefined ? undefined : { id: Number(id), day, kind, tokens: amount };
    });
  }

  /**
   * Replaces a reservation with what the call spent (0 and no call: it was not made), on the
   * reservation's day. False when it was settled already (the spend is not counted twice).
   */
  async settle(reservation: BudgetReservation, spentTokens: number, calls = 1): Promise<boolean> {
    const result = await this.pool.query(
      `WITH gone AS (DELETE FROM learning_reservations WHERE id = $1 RETURNING day, kind)
       INSERT INTO learning_spend (day, kind, tokens, calls) SELECT day, kind, $2, $3 FROM gone
       ON CONFLICT (day, kind) DO UPDATE SET tokens = learning_spend.tokens + excluded.tokens, calls = learning_spend.calls + excluded.calls`,
      [reservation.id, Math.max(0, Math.round(spentTokens)), calls],
    );
    return result.rowCount === 1;
  }

  /** Records spend without a reservation (as LearningBudget.record). */
  async record(kind: string, tokens: number, calls = 1, now = new Date()): Promise<void> {
    await this.pool.query(
      `INSERT INTO learning_spend (day, kind, tokens, calls) VALUES ($1, $2, $3, $4)
       ON CONFLICT (day, kind) DO UPDATE SET tokens = learning_spend.tokens + excluded.tokens, calls = learning_spend.calls + excluded.calls`,
      [localDay(now), kind, Math.max(0, Math.round(tokens)), calls],
    );
  }

  async summary(now = new Date()): Promise<TeamSpendSummary> {
    const day = localDay(now);
    const [rows, total, reserved] = await Promise.all([
      this.pool.query<{ kind: string; tokens: string; calls: string }>('SELECT kind, tokens, calls FROM learning_spend WHERE day = $1', [day]),
      this.pool.query<{ tokens: string | null; calls: string | null }>('SELECT sum(tokens) AS tokens, sum(calls) AS calls FROM learning_spend'),
      this.pool.query<{ tokens: string }>(`SELECT COALESCE(sum(tokens), 0) AS tokens FROM learning_reservations WHERE day = $1 AND expires_at > ${CLOCK}`, [
        day,
      ]),
    ]);
    const byKindToday: Record<string, number> = {};
    for (const row of rows.rows) byKindToday[row.kind] = Number(row.tokens);
    return {
      tokensToday: rows.rows.reduce((sum, row) => sum + Number(row.tokens), 0),
      callsToday: rows.rows.reduce((sum, row) => sum + Number(row.calls), 0),
      tokensTotal: Number(total.rows[0]?.tokens ?? 0),
      callsTotal: Number(total.rows[0]?.calls ?? 0),
      byKindToday,
      reservedToday: Number(reserved.rows[0]?.tokens ?? 0),
    };
  }

  /** Why learning is paused for the team right now (today's spend and live reservations fill the budget), or undefined. */
  async pauseReason(now = new Date()): Promise<string | undefined> {
    if (this.dailyTokenBudget <= 0) return undefined;
    const summary = await this.summary(now);
    return budgetPauseReason(summary.tokensToday + summary.reservedToday, this.dailyTokenBudget);
  }
}
