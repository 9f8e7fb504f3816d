import { NotFoundError } from '../errors.js';
import { presentCredit, type Skill, type SkillsService } from '../skills/index.js';
import { skillChangeRoutes } from './skill-change-routes.js';
import type { ProxyApp } from './types.js';

/** A skill as GET /v1/skills lists it (without its credit figures). */
export function presentSkillSummary(skill: Skill) {
  return {
    name: skill.name,
    description: skill.description,
    category: skill.category,
    origin: skill.origin,
    version: skill.version,
    updated_at: skill.updatedAt ?? null,
  };
}

/** GET /v1/skills and GET /v1/skills/{name}: the library with each skill's credit figures; and the changes (edit, review). */
export function skillsRoutes(skills: SkillsService): (app: ProxyApp) => void {
  return (app) => {
    skillChangeRoutes(skills)(app);
    app.get('/v1/skills', (c) => {
      const items = skills.list().map(({ skill, credit }) => ({ ...presentSkillSummary(skill), credit: presentCredit(credit) }));
      return c.json({ object: 'list', generation: skills.history.generation, data: items, invalid_files: skills.library.problems() });
    });
    app.get('/v1/skills/:name', (c) => {
      const name = c.req.param('name');
      const skill = skills.library.get(name);
      if (!skill) throw new NotFoundError(`No skill named ${name}.`, 'skill_not_found');
      return c.json({
        name: skill.name,
        description: skill.description,
        category: skill.category,
        origin: skill.origin,
        version: skill.version,
        created_at: skill.createdAt ?? null,
        updated_at: skill.updatedAt ?? null,
        source_sessions: skill.sourceSessions,
        body: skill.body,
        tokens: skill.bodyTokens,
        search_keys: skills.searchKeys.keysOf(skill),
        credit: presentCredit(skills.credit.figuresOf(name)),
        recent_sessions: skills.credit.recentSessions(name),
        versions: skills.history.versions(name).map((row) => ({
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
