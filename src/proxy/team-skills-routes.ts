import { NotFoundError } from '../errors.js';
import { presentProposal, type Skill } from '../skills/index.js';
import type { PgSkillProposals, PgSkillStore } from '../store/postgres/index.js';
import { asDecisionError, presentChange } from './skill-change-routes.js';
import { presentSkillSummary } from './skills-routes.js';
import { parse } from './route-body.js';
import type { ProxyApp } from './types.js';
import { z } from 'zod';

const idSchema = z.coerce.number().int().positive();

export interface TeamSkillsRoutesDeps {
  /** The node's mirror of the team's skills (what it serves from). */
  library: { get(name: string): Skill | undefined; all(): Skill[]; readonly generation: number };
  store: PgSkillStore;
  proposals: PgSkillProposals;
}

/**
 * The skills routes a node of a team store serves (the proxy key's, like on one proxy): the
 * team's library as this node holds it, one skill with its versions, and the review of the
 * evolver's proposals (skills.review: manual), decided once across every node. Editing a skill
 * over HTTP is not served on a node yet (501, see team-app.ts).
 */
export function teamSkillsRoutes(deps: TeamSkillsRoutesDeps): (app: ProxyApp) => void {
  return (app) => {
    app.get('/v1/skills/proposals', async (c) => c.json({ object: 'list', data: (await deps.proposals.pending()).map(presentProposal) }));

    app.post('/v1/skills/proposals/:id/approve', async (c) => {
      const id = parse(idSchema, c.req.param('id'));
      const proposal = await deps.proposals.get(id);
      if (!proposal || proposal.status !== 'pending') throw new NotFoundError(`no pending proposal #${id}.`, 'proposal_not_found');
      // Approved over the skill as it is now, as on one proxy.
      const current = await deps.store.get(proposal.name);
      const written = await deps.proposals.approve(id, current?.version ?? 0).catch((error: unknown) => {
        throw asDecisionError(error);
      });
      return c.json({ id, status: 'approved', ...presentChange(written) });
    });

    app.post('/v1/skills/proposals/:id/reject', async (c) => {
      const id = parse(idSchema, c.req.param('id'));
      const proposal = await deps.proposals.get(id);
      if (!proposal || !(await deps.proposals.decide(id, 'rejected'))) throw new NotFoundError(`no pending proposal #${id}.`, 'proposal_not_found');
      return c.json({ id, status: 'rejected', action: proposal.action, name: proposal.name });
    });

    app.get('/v1/skills', (c) =>
      c.json({
        object: 'list',
        generation: deps.library.generation,
        data: deps.library.all().map((skill) => ({ ...presentSkillSummary(skill), credit: null })),
      }),
    );

    app.get('/v1/skills/:name', async (c) => {
      const name = c.req.param('name');
      const skill = deps.library.get(name);
      if (!skill) throw new NotFoundError(`No skill named ${name}.`, 'skill_not_found');
      return c.json({
        ...presentSkillSummary(skill),
        created_at: skill.createdAt ?? null,
        source_sessions: skill.sourceSessions,
        body: skill.body,
        tokens: skill.bodyTokens,
        versions: (await deps.store.versions(name)).map((row) => ({
          version: row.version,
          action: row.action,
          generation: row.generation,
          source: row.source,
          created_at: new Date(row.created_at).toISOString(),
        })),
      });
    });
  };
}
