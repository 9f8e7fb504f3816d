import { NotFoundError } from '../errors.js';
import { presentProposal, revertDraft, type Skill } from '../skills/index.js';
import type { PgSkillProposals, PgSkillStore } from '../store/postgres/index.js';
import { asDecisionError, checkedName, editedDraft, HTTP_EDIT, presentChange, proposalId, revertTarget } from './skill-change-routes.js';
import { presentSkillSummary } from './skills-routes.js';
import { readJson } from './route-body.js';
import type { ProxyApp } from './types.js';

export interface TeamSkillsRoutesDeps {
  /** The node's mirror of the team's skills (what it serves from). */
  library: { get(name: string): Skill | undefined; all(): Skill[]; readonly generation: number };
  store: PgSkillStore;
  proposals: PgSkillProposals;
  /** Brings the node's mirror up to the store now (other nodes hear of a write by LISTEN/NOTIFY). */
  refresh: () => Promise<void>;
}

/**
 * The skills routes a node of a team store serves (the proxy key's, like on one proxy): the
 * team's library as this node holds it, one skill with its versions, the review of the evolver's
 * proposals (skills.review: manual), decided once across every node, and a person's changes (edit,
 * revert, remove) with the personal routes' checks. A change is written over the version the store
 * holds as the request reads it; if another node writes the skill in between, the store refuses it
 * (409 skill_conflict) rather than overwrite what the person never saw. Every node's mirror hears of
 * a write by LISTEN/NOTIFY; this node's is brought up to it before the answer.
 */
export function teamSkillsRoutes(deps: TeamSkillsRoutesDeps): (app: ProxyApp) => void {
  /** A write's effect, or the store's refusal as the personal routes word it (409, or 404 for a missing skill). */
  const written = async <T>(write: Promise<T>): Promise<T> => {
    const result = await write.catch((error: unknown) => {
      throw asDecisionError(error);
    });
    // The write is committed; a mirror that cannot catch up now does so on the notification or its poll.
    await deps.refresh().catch(() => undefined);
    return result;
  };

  return (app) => {
    app.get('/v1/skills/proposals', async (c) => c.json({ object: 'list', data: (await deps.proposals.pending()).map(presentProposal) }));

    app.post('/v1/skills/proposals/:id/approve', async (c) => {
      const id = proposalId(c.req.param('id'));
      // Merged into the skill when it changed after the proposal was written, as on one proxy.
      const result = await written(deps.proposals.approve(id));
      return c.json({ id, status: 'approved', ...presentChange(result), ...(result.mergedInto !== undefined ? { merged_into: result.mergedInto } : {}) });
    });

    app.post('/v1/skills/proposals/:id/reject', async (c) => {
      const id = proposalId(c.req.param('id'));
      const proposal = await deps.proposals.get(id);
      if (!proposal || !(await deps.proposals.decide(id, 'rejected'))) throw new NotFoundError(`no pending proposal #${id}.`, 'proposal_not_found');
      return c.json({ id, status: 'rejected', action: proposal.action, name: proposal.name });
    });

    app.put('/v1/skills/:name', async (c) => {
      const name = checkedName(c.req.param('name'));
      const body = await readJson(c.req.raw);
      const current = await deps.store.get(name);
      const draft = editedDraft(name, body, current?.skill);
      // Saved unchanged: no version, no generation, as on one proxy; the store checks it under the write's locks.
      const result = await written(deps.store.save(draft, { basedOn: current?.version ?? 0, source: HTTP_EDIT, action: 'manual' }));
      return c.json(presentChange(result), current || result.action === 'unchanged' ? 200 : 201);
    });

    app.delete('/v1/skills/:name', async (c) => {
      const name = c.req.param('name');
      const current = await deps.store.get(name);
      if (!current) throw new NotFoundError(`No skill named ${name}.`, 'skill_not_found');
      const { generation } = await written(deps.store.remove(name, { basedOn: current.version, source: 'http remove' }));
      return c.json({ action: 'remove', name, generation });
    });

    app.post('/v1/skills/:name/revert', async (c) => {
      const name = c.req.param('name');
      const to = await revertTarget(c.req.raw);
      const [current, versions] = await Promise.all([deps.store.get(name), deps.store.versions(name)]);
      if (!current && versions.length === 0) throw new NotFoundError(`No skill named ${name}.`, 'skill_not_found');
      const result = await written(
        (async () => {
          const { draft, source } = revertDraft(name, current?.version, versions, to);
          return deps.store.write(draft, { basedOn: current?.version ?? 0, source, action: 'revert' });
        })(),
      );
      return c.json(presentChange(result));
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
