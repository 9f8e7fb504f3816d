import type { Pool, PoolClient } from 'pg';
import { SkillError } from '../../errors.js';
import { approvalOf, approvalSource } from '../../skills/approval.js';
import type { PlannedChange } from '../../skills/evolution/apply.js';
import type { ProposalRow } from '../../skills/proposals.js';
import type { PgSkillStore, SkillWrite } from './skill-store.js';

const COLUMNS =
  'id::float8 AS id, session_id, action, name, draft, evidence, reason, status, created_at::float8 AS created_at, decided_at::float8 AS decided_at';

/**
 * Evolution proposals waiting for a person (skills.review: manual), as rows of `skill_proposals`
 * shared by every node. A decision is a conditional update (`WHERE status = 'pending'`), so when two
 * people approve or reject one proposal on two nodes at once, one decides it and the other is told
 * it is no longer pending.
 */
export class PgSkillProposals {
  constructor(
    private readonly pool: Pool,
    private readonly skills: PgSkillStore,
  ) {}

  /** Adds a pending proposal (on `db`: a transaction's client, to add it with the job that proposed it). */
  async add(sessionId: string, change: PlannedChange, now = Date.now(), db: Pick<Pool, 'query'> | PoolClient = this.pool): Promise<number> {
    const result = await db.query<{ id: string }>(
      "INSERT INTO skill_proposals (session_id, action, name, draft, evidence, reason, status, created_at) VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7) RETURNING id",
      [sessionId, change.action, change.draft.name, JSON.stringify(change.draft), JSON.stringify(change.evidence), change.reason ?? null, now],
    );
    return Number(result.rows[0]!.id);
  }

  async pending(): Promise<ProposalRow[]> {
    return (await this.pool.query<ProposalRow>(`SELECT ${COLUMNS} FROM skill_proposals WHERE status = 'pending' ORDER BY id`)).rows;
  }

  async get(id: number): Promise<ProposalRow | undefined> {
    return (await this.pool.query<ProposalRow>(`SELECT ${COLUMNS} FROM skill_proposals WHERE id = $1`, [id])).rows[0];
  }

  /** Marks a pending proposal decided; false when it was not pending (another node decided it). */
  async decide(id: number, status: 'approved' | 'rejected', now = Date.now()): Promise<boolean> {
    const result = await this.pool.query("UPDATE skill_proposals SET status = $1, decided_at = $2 WHERE id = $3 AND status = 'pending'", [status, now, id]);
    return result.rowCount === 1;
  }

  /**
   * Applies a pending proposal as a personal install does (see approvalOf): as drafted, or merged
   * into the skill when it changed after the proposal was written. When another node writes the
   * skill in between, the approval is made again over that node's version, so both are kept.
   * `mergedInto`: the version it was merged into.
   */
  async approve(id: number): Promise<SkillWrite & { mergedInto?: number }> {
    const proposal = await this.get(id);
    if (!proposal || proposal.status !== 'pending') throw new SkillError(`no pending proposal #${id}`, 'proposal_not_found');
    if (!(await this.decide(id, 'approved'))) throw new SkillError(`no pending proposal #${id}`, 'proposal_not_found');
    try {
      let held: SkillWrite | undefined;
      let mergedInto: number | undefined;
      const written = await this.skills.editWithRetry(
        proposal.name,
        async (current) => {
          const approval = approvalOf(proposal, current?.skill, current && (await this.skills.lastChangeAt(proposal.name)));
          mergedInto = approval.kind === 'as-proposed' ? undefined : current!.version;
          if (approval.kind !== 'already-held') return approval.draft;
          held = { skill: current!.skill, text: current!.text, action: proposal.action, version: current!.version, generation: await this.skills.generation() };
          return undefined;
        },
        { source: approvalSource(proposal), action: proposal.action },
      );
      const result = written ?? held!;
      return mergedInto === undefined ? result : { ...result, mergedInto };
    } catch (error) {
      // Not written: the proposal goes back to waiting for a decision.
      await this.pool.query("UPDATE skill_proposals SET status = 'pending', decided_at = NULL WHERE id = $1", [id]);
      throw error;
    }
  }
}
