import { readFileSync } from 'node:fs';
import { SEARCH_EMBED_TIMEOUT_MS } from '../embeddings/index.js';
import type { Skill, SkillMirror, SkillsService } from '../skills/index.js';
import type { SkillRetriever } from '../skills/retrieval.js';
import type { McpSkills } from './server.js';

/** The personal library: the watched SKILL.md folder and the service's retriever (`keywordsOnly` hears when a search could not use vectors). */
export function folderSkills(service: SkillsService, keywordsOnly: (why: string) => void): McpSkills {
  return {
    search: (query) => service.retriever.search(query, SEARCH_EMBED_TIMEOUT_MS, keywordsOnly),
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
 * retrieval over it as a node with this config would search it. A skill's text is read from the store, as stored (frontmatter and body).
 */
export function mirroredSkills(
  mirror: SkillMirror,
  retriever: SkillRetriever,
  storedText: (name: string) => Promise<string | undefined>,
  keywordsOnly: (why: string) => void,
): McpSkills {
  return {
    search: (query) => retriever.search(query, SEARCH_EMBED_TIMEOUT_MS, keywordsOnly),
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
