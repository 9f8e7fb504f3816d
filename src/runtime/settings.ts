import type { LoadedConfig } from '../config/index.js';
import type { MemorySettings } from '../memory/index.js';
import type { JudgeSettings } from '../rl/index.js';
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

/** The memory part's settings (MetaClaw's max_injected_* names and ours: the smaller applies). */
export function memorySettings(config: LoadedConfig): MemorySettings {
  const values = config.values;
  return {
    enabled: values['memory.enabled'],
    defaultScope: values['memory.scope'],
    topK: Math.min(values['memory.top_k'], values['memory.max_injected_units']),
    maxTokens: Math.min(values['memory.max_tokens'], values['memory.max_injected_tokens']),
    coreMaxTokens: values['memory.core_max_tokens'],
    minRelevance: values['memory.min_relevance'],
    retrievalMode: values['memory.retrieval_mode'],
    flushEveryNTurns: values['memory.flush_every_n_turns'],
    autoExtract: values['memory.auto_extract'],
    manualTrigger: values['memory.manual_trigger'],
    ignoreTurnType: values['memory.ignore_turn_type'],
    autoConsolidate: values['memory.auto_consolidate'],
    retentionDays: values['memory.retention_days'],
    maxUnitsPerScope: values['memory.max_units_per_scope'],
    embedding: { apiBase: values['memory.embedding.api_base'], apiKey: values['memory.embedding.api_key'], model: values['memory.embedding.model'] },
    extractor: { apiBase: values['memory.extractor_api_base'], apiKey: values['memory.extractor_api_key'], model: values['memory.extractor_model'] },
  };
}

/**
 * The RL judge's endpoint: rl.prm_url with rl.prm_api_key and rl.prm_model when either the URL or
 * the key is set; otherwise the main upstream, with rl.prm_model only when it was set (MetaClaw's
 * default, gpt-5.2, means nothing to most upstreams) and else the model of the judged session.
 */
export function judgeSettings(config: LoadedConfig): JudgeSettings {
  const values = config.values;
  const own = config.explicitKeys.has('rl.prm_url') || values['rl.prm_api_key'] !== '';
  return {
    endpoint: {
      name: 'RL judge',
      apiBase: own ? values['rl.prm_url'] : '',
      apiKey: own ? values['rl.prm_api_key'] : '',
      model: own || config.explicitKeys.has('rl.prm_model') ? values['rl.prm_model'] : '',
    },
    votes: values['rl.prm_m'],
  };
}
