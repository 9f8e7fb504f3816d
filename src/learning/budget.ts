import { localDay } from '../shared/local-day.js';
import type { Db } from '../store/index.js';
import type { LearningBudgetStore } from '../store/ports.js';

export interface SpendSummary {
  tokensToday: number;
  tokensTotal: number;
  callsToday: number;
  callsTotal: number;
  byKindToday: Record<string, number>;
}

/**
 * What learning costs the user: tokens every learning LLM call spent, per local day and job kind.
 * Serving never consults this; only learning jobs pause when the daily budget is reached.
 */
export class LearningBudget implements LearningBudgetStore {
  private readonly statements;

  constructor(
    db: Db,
    private readonly dailyTokenBudget: number,
  ) {
    this.statements = {
      add: db.prepare<[string, string, number, number]>(`
        INSERT INTO learning_spend (day, kind, tokens, calls) VALUES (?, ?, ?, ?)
        ON CONFLICT(day, kind) DO UPDATE SET tokens = tokens + excluded.tokens, calls = calls + excluded.calls`),
      day: db.prepare<[string], { kind: string; tokens: number; calls: number }>('SELECT kind, tokens, calls FROM learning_spend WHERE day = ?'),
      total: db.prepare<[], { tokens: number | null; calls: number | null }>('SELECT SUM(tokens) AS tokens, SUM(calls) AS calls FROM learning_spend'),
    };
  }

  record(kind: string, tokens: number, calls = 1, now = new Date()): void {
    this.statements.add.run(localDay(now), kind, Math.max(0, Math.round(tokens)), calls);
  }

  summary(now = new Date()): SpendSummary {
    const rows = this.statements.day.all(localDay(now));
    const total = this.statements.total.get()!;
    const byKindToday: Record<string, number> = {};
    for (const row of rows) byKindToday[row.kind] = row.tokens;
    return {
      tokensToday: rows.reduce((sum, row) => sum + row.tokens, 0),
      callsToday: rows.reduce((sum, row) => sum + row.calls, 0),
      tokensTotal: total.tokens ?? 0,
      callsTotal: total.calls ?? 0,
      byKindToday,
    };
  }

  get dailyLimit(): number {
    return this.dailyTokenBudget;
  }

  /** Why learning is paused right now, or undefined when it may run. */
  pauseReason(now = new Date()): string | undefined {
    return this.dailyTokenBudget <= 0 ? undefined : budgetPauseReason(this.summary(now).tokensToday, this.dailyTokenBudget);
  }
}

/** Why learning is paused with `spent` of a daily budget of `limit` tokens used (limit ≤ 0: no budget), or undefined. */
export function budgetPauseReason(spent: number, limit: number): string | undefined {
  if (limit <= 0 || spent < limit) return undefined;
  return `daily learning budget reached (${spent} of ${limit} tokens today; learning.daily_token_budget); resumes tomorrow`;
}

export { localDay };
