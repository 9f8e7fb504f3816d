import { readFileSync } from 'node:fs';
import type { Skill, SkillMirror, SkillsService } from '../skills/index.js';
import type { SkillRetriever } from '../skills/retrieval.js';
import type { McpSkills } from './server.js';

/** The personal library: the watched SKILL.md folder and the service's retriever. */
export function folderSkills(service: SkillsService): McpSkills {
  return {
    retrieve: (query) => service.retriever.retrieve(query),
    all: () => service.library.all(),
    text: (name) => {
      const skill = service.library.get(name);
      return skill ? fileText(skill) : undefined;
    },
    onChange: (listener) => service.library.onChange(() => listener()),
  };
}

/**
 * The team store's library, as a node holds it: a mirror kept in step by the skills channel and
 * keyword retrieval over it. A skill's text is read from the store, as stored (frontmatter and body).
 */
export function mirroredSkills(mirror: SkillMirror, retriever: SkillRetriever, storedText: (name: string) => Promise<string | undefined>): McpSkills {
  return {
    retrieve: (query) => retriever.retrieve(query),
    all: () => mirror.all(),
    text: async (name) => (mirror.get(name) ? storedText(name) : undefined),
    onChange: (listener) => mirror.onChange(() => listener()),
  };
}

/** The SKILL.md as it is on disk (frontmatter and body); the body alone if the file went away meanwhile. */
function fileText(skill: Skill): string {
  try {
    return readFileSync(skill.path, 'utf8');
  } catch {
    return skill.body;
  }
}
