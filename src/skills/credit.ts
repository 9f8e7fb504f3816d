import type { Db } from '../store/index.js';

/** Phrases that open a correction: the previous answer missed what the user wanted. */
const CORRECTION = [
  /^\s*(no|nope|wrong|incorrect)\b[,.!:]?/i,
  /^\s*(that'?s|that is|this is|it'?s) (not|wrong|incorrect)\b/i,
  /^\s*not (what|quite|right)\b/i,
  /\bi (meant|said|asked( for)?)\b/i,
  /^\s*(actually|instead)[, ]/i,
  /\byou (didn'?t|did not|forgot|missed|ignored)\b/i,
  /^\s*(don'?t|do not|stop|never)\b/i,
  /^\s*(不对|不是|错了|我是说|我说的是|我的意思是|别|不要|重新)/,
  /^\s*(違います|ちがう|そうじゃなく)/,
];

export function isCorrection(text: string): boolean {
  return CORRECTION.some((pattern) => pattern.test(text));
}

export interface SkillCredit {
  name: string;
  injected: number;
  fullBody: number;
  sessions: number;
  corrected: number;
  accepted: number;
  judged: number;
  judgeMean: number | null;
  lastUsedAt: number | null;
  /** Kept being injected into turns that went badly. */
  flagged: boolean;
}

/** Flag a skill once it has this many judged or followed-up turns and half or more went badly. */
const FLAG_MIN_EVIDENCE = 4;
const FLAG_BAD_SHARE = 0.5;

export interface FigureRow {
  skill: string;
  injected: number;
  full_body: number;
  sessions: number;
  corrected: number;
  accepted: number;
  judged: number;
  judge_mean: number | null;
  last_used_at: number | null;
}

/** Each skill's usage and outcomes; callers add a WHERE for one skill and the GROUP BY (the team store has the same tables). */
export const FIGURES = `
  SELECT u.skill AS skill,
         COUNT(*) AS injected,
         SUM(u.full_body) AS full_body,
         COUNT(DISTINCT u.session_id) AS sessions,
         SUM(CASE WHEN o.outcome = 'corrected' THEN 1 ELSE 0 END) AS corrected,
         SUM(CASE WHEN o.outcome = 'accepted' THEN 1 ELSE 0 END) AS accepted,
         SUM(CASE WHEN o.judge_score IS NOT NULL THEN 1 ELSE 0 END) AS judged,
         AVG(o.judge_score) AS judge_mean,
         MAX(u.created_at) AS last_used_at
    FROM skill_usage u LEFT JOIN turn_outcomes o ON o.turn_id = u.turn_id`;

/** The sessions a skill was shown in lately (skill, limit), newest first. */
export const RECENT_SESSIONS = 'SELECT session_id, MAX(created_at) AS last FROM skill_usage WHERE skill = ? GROUP BY session_id ORDER BY last DESC LIMIT ?';

export function creditOf(row: FigureRow): SkillCredit {
  const followed = row.corrected + row.accepted;
  const badByJudge = row.judged >= FLAG_MIN_EVIDENCE && (row.judge_mean ?? 0) < 0;
  const badByCorrections = followed >= FLAG_MIN_EVIDENCE && row.corrected / followed >= FLAG_BAD_SHARE;
  return {
    name: row.skill,
    injected: row.injected,
    fullBody: row.full_body,
    sessions: row.sessions,
    corrected: row.corrected,
    accepted: row.accepted,
    judged: row.judged,
    judgeMean: row.judge_mean,
    lastUsedAt: row.last_used_at,
    flagged: badByJudge || badByCorrections,
  };
}

/** A skill's credit as the HTTP API and the dashboard show it (snake_case, times in ISO 8601, like every other field). */
export function presentCredit(credit: SkillCredit | undefined) {
  if (!credit) return null;
  return {
    injected: credit.injected,
    full_body: credit.fullBody,
    sessions: credit.sessions,
    corrected: credit.corrected,
    accepted: credit.accepted,
    judged: credit.judged,
    judge_mean: credit.judgeMean,
    last_used_at: credit.lastUsedAt === null ? null : new Date(credit.lastUsedAt).toISOString(),
    flagged: credit.flagged,
  };
}

/**
 * Credit assignment: which skill was shown in which turn, and how those turns went — the RL
 * judge's score where RL runs, else whether the user's next message corrected the answer.
 */
export class SkillCreditStore {
  private readonly statements;

  constructor(db: Db) {
    this.statements = {
      usage: db.prepare<[string, string, string, number, number, number, number]>(
        'INSERT OR IGNORE INTO skill_usage (turn_id, session_id, skill, rank, relevance, full_body, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      previousMain: db.prepare<[string, number], { id: string }>(
        "SELECT id FROM turns WHERE session_id = ? AND turn_type = 'main' AND seq < ? ORDER BY seq DESC LIMIT 1",
      ),
      outcome: db.prepare<[string, string, string, string | null, number]>(
        'INSERT INTO turn_outcomes (turn_id, session_id, outcome, evidence, updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT(turn_id) DO UPDATE SET outcome = excluded.outcome, evidence = excluded.evidence, updated_at = excluded.updated_at',
      ),
      judge: db.prepare<[string, string, number, number]>(
        'INSERT INTO turn_outcomes (turn_id, session_id, judge_score, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT(turn_id) DO UPDATE SET judge_score = excluded.judge_score, updated_at = excluded.updated_at',
      ),
      figures: db.prepare<[], FigureRow>(`${FIGURES} GROUP BY u.skill`),
      figuresOf: db.prepare<[string], FigureRow>(`${FIGURES} WHERE u.skill = ? GROUP BY u.skill`),
      sessionsOf: db.prepare<[string, number], { session_id: string; last: number }>(RECENT_SESSIONS),
      forget: db.prepare<[string]>('DELETE FROM skill_usage WHERE skill = ?'),
      outcomesOfSession: db.prepare<[string], { turn_id: string; outcome: string | null; judge_score: number | null }>(
        'SELECT turn_id, outcome, judge_score FROM turn_outcomes WHERE session_id = ?',
      ),
    };
  }

  /** Records the skills shown in a turn (from the turn's injection record). */
  recordUsage(turnId: string, sessionId: string, shown: ReadonlyArray<{ name: string; relevance: number; full: boolean }>): void {
    const now = Date.now();
    shown.forEach((skill, rank) => this.statements.usage.run(turnId, sessionId, skill.name, rank, skill.relevance, skill.full ? 1 : 0, now));
  }

  /** A new main turn judges the previous one: a correction means it went badly, anything else that it was accepted. */
  recordFollowUp(sessionId: string, seq: number, query: string): void {
    const previous = this.statements.previousMain.get(sessionId, seq);
    if (!previous) return;
    const corrected = isCorrection(query);
    this.statements.outcome.run(previous.id, sessionId, corrected ? 'corrected' : 'accepted', corrected ? query.slice(0, 300) : null, Date.now());
  }

  recordJudgeScore(turnId: string, sessionId: string, score: number): void {
    this.statements.judge.run(turnId, sessionId, score, Date.now());
  }

  outcomesOfSession(sessionId: string): Map<string, { outcome: string | null; judgeScore: number | null }> {
    return new Map(this.statements.outcomesOfSession.all(sessionId).map((row) => [row.turn_id, { outcome: row.outcome, judgeScore: row.judge_score }]));
  }

  figures(): Map<string, SkillCredit> {
    return new Map(this.statements.figures.all().map((row) => [row.skill, creditOf(row)]));
  }

  /** One skill's figures (an index search: a skill page need not aggregate the whole library). */
  figuresOf(skill: string): SkillCredit | undefined {
    const row = this.statements.figuresOf.get(skill);
    return row && creditOf(row);
  }

  recentSessions(skill: string, limit = 10): string[] {
    return this.statements.sessionsOf.all(skill, limit).map((row) => row.session_id);
  }
}
