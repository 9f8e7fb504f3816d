import type { LoadedConfig } from '../config/index.js';
import type { SkillsSettings } from '../skills/index.js';

/** The skills part's settings, read from the config (the skills module never reads config files). */
export function skillsSettings(config: LoadedConfig): SkillsSettings {
  const values = config.values;
  return {
    enabled: values['skills.enabled'],
    dir: config.paths.skillsDir,
    retrievalMode: values['skills.retrieval_mode'],
    topK: values['skills.top_k'],
    fullBodyTopN: values['skills.full_body_top_n'],
    maxTokens: values['skills.max_tokens'],
    minRelevance: values['skills.min_relevance'],
    autoEvolve: values['skills.auto_evolve'],
    evolveEveryNTurns: values['skills.evolution_every_n_turns'],
    review: values['skills.review'],
    maxNewSkills: values['skills.max_new_skills'],
    embedding: { apiBase: values['skills.embedding.api_base'], apiKey: values['skills.embedding.api_key'], model: values['skills.embedding.model'] },
    evolver: { apiBase: values['rl.evolver_api_base'], apiKey: values['rl.evolver_api_key'], model: values['rl.evolver_model'] },
  };
}
