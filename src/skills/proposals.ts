import { scrubJsonText, scrubNeedles } from '../shared/forget-text.js';
import type { Db } from '../store/index.js';
import type { PlannedChange } from './evolution/apply.js';
import type { SkillDraft } from './types.js';

export interface ProposalRow {
  id: number;
  session_id: string | null;
  action: 'create' | 'update';
  name: string;
  draft: string;
  evidence: string;
  reason: string | null;
  status: 'pending' | 'approved' | 'rejected' | 'superseded';
  created_at: number;
  decided_at: number | null;
}

/** Evolution proposals waiting for a person (skills.review: manual). */
export class ProposalStore {
  private readonly statements;

  constructor(db: Db) {
    this.statements = {
      add: db.prepare<[string, string, string, string, string, string | null, number]>(
        "INSERT INTO skill_proposals (session_id, action, name, draft, evidence, reason, status, created_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?)",
      ),
      pending: db.prepare<[], ProposalRow>("SELECT * FROM skill_proposals WHERE status = 'pending' ORDER BY id"),
      count: db.prepare<[], { count: number }>("SELECT COUNT(*) AS count FROM skill_proposals WHERE status = 'pending'"),
      get: db.prepare<[number], ProposalRow>('SELECT * FROM skill_proposals WHERE id = ?'),
      decide: db.prepare<[string, number, number]>('UPDATE skill_proposals SET status = ?, decided_at = ? WHERE id = ?'),
      quotes: db.prepare<[], QuotingRow>('SELECT id, evidence, reason FROM skill_proposals ORDER BY id'),
      setQuotes: db.prepare<[string, string | null, number]>('UPDATE skill_proposals SET evidence = ?, reason = ? WHERE id = ?'),
    };
  }

  /** Scrubs forgotten texts (`forgetNeedles`) from every proposal's evidence and reason; returns how many changed. */
  scrub(needles: readonly string[]): number {
    let changed = 0;
    for (const row of this.statements.quotes.all()) {
      const scrubbed = scrubbedQuotes(needles, row);
      if (!scrubbed) continue;
      this.statements.setQuotes.run(scrubbed.evidence, scrubbed.reason, row.id);
      changed++;
    }
    return changed;
  }

  add(sessionId: string, change: PlannedChange): number {
    const result = this.statements.add.run(
      sessionId,
      change.action,
      change.draft.name,
      JSON.stringify(change.draft),
      JSON.stringify(change.evidence),
      change.reason ?? null,
      Date.now(),
    );
    return Number(result.lastInsertRowid);
  }

  pending(): ProposalRow[] {
    return this.statements.pending.all();
  }

  countPending(): number {
    return this.statements.count.get()!.count;
  }

  get(id: number): ProposalRow | undefined {
    return this.statements.get.get(id);
  }

  decide(id: number, status: 'approved' | 'rejected'): void {
    this.statements.decide.run(status, Date.now(), id);
  }
}

/** What of a proposal quotes the session: the evidence (a JSON list) and the evolver's reason. */
export interface QuotingRow {
  id: number;
  evidence: string;
  reason: string | null;
}

/** A proposal's evidence and reason with forgotten texts scrubbed (the evidence stays a JSON list); undefined when they hold none. */
export function scrubbedQuotes(needles: readonly string[], row: QuotingRow): { evidence: string; reason: string | null } | undefined {
  const evidence = scrubJsonText(needles, row.evidence);
  const reason = row.reason === null ? null : scrubNeedles(needles, row.reason);
  return evidence === row.evidence && reason === row.reason ? undefined : { evidence, reason };
}

/** A proposal as the HTTP API and the dashboard show it: the drafted skill and why. */
export function presentProposal(row: ProposalRow) {
  const draft = JSON.parse(row.draft) as SkillDraft;
  return {
    id: row.id,
    action: row.action,
    name: row.name,
    session_id: row.session_id,
    description: draft.description,
    category: draft.category ?? 'general',
    body: draft.body,
    evidence: JSON.parse(row.evidence) as string[],
    reason: row.reason,
    created_at: new Date(row.created_at).toISOString(),
  };
}
