import { missingOpdTeacherKeys, type LoadedConfig } from '../config/index.js';
import type { MemorySettings } from '../memory/index.js';
import type { JudgeSettings, RlEngineSettings, TeacherEndpoint } from '../rl/index.js';
import { selectBackend } from '../rl/tinker/index.js';
import type { SkillsSettings } from '../skills/index.js';
import type { ForwarderOptions } from '../upstream/index.js';
import { VERSION } from '../version.js';

/** How requests are forwarded upstream (the same on a personal proxy and a team node). */
export function forwarderOptions(config: LoadedConfig): ForwarderOptions {
  const values = config.values;
  return {
    maxRetries: values['llm.max_retries'],
    timeoutMs: values['llm.timeout_seconds'] * 1000,
    maxRetryWaitMs: values['llm.max_retry_wait_seconds'] * 1000,
    defaultMaxTokens: values['llm.default_max_tokens'],
    userAgent: `metaclaw-ts/${VERSION}`,
  };
}

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
    searchKeys: values['skills.search_keys'],
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
    searchKeys: values['memory.search_keys'],
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
 * Whether memory is embedded with these settings on a team node: an embeddings endpoint set for
 * memory (a team node does not probe the provider's) and a retrieval mode that reads vectors.
 */
export function embedsMemory(settings: MemorySettings): boolean {
  return settings.enabled && settings.embedding.apiBase !== '' && settings.embedding.model !== '' && settings.retrievalMode !== 'keyword';
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

/**
 * The training engine's settings (modes rl and auto with a backend). The base model is `rl.model`,
 * else `llm.model_id`; the backend's key and URL are chosen as `decideMode` chose them.
 */
export function rlEngineSettings(config: LoadedConfig, env: NodeJS.ProcessEnv): RlEngineSettings {
  const values = config.values;
  return {
    backend: selectBackend({ backend: values['rl.backend'], apiKey: values['rl.api_key'], baseUrl: values['rl.base_url'], env }),
    baseModel: values['rl.model'] || values['llm.model_id'],
    loraRank: values['rl.lora_rank'],
    batchSize: values['rl.batch_size'],
    learningRate: values['rl.learning_rate'],
    lossFn: values['rl.loss_fn'],
    resumeFrom: values['rl.resume_from_ckpt'],
    manualOnly: values['rl.manual_train_trigger'],
    tokenizerPath: values['rl.tokenizer_path'],
    home: config.paths.home,
    samplingBudgetMs: values['rl.sampling_timeout_seconds'] * 1000,
    defaultMaxTokens: values['llm.default_max_tokens'],
    checkIntervalMs: 5_000,
    opd: opdSettings(config),
  };
}

/**
 * On-policy distillation (opd.*): the teacher when `opd.enabled` and both its URL and model are set
 * (`missingOpdTeacherKeys`; the config warns when one is missing, `config/effect.ts`).
 */
function opdSettings(config: LoadedConfig): { teacher: TeacherEndpoint; klPenaltyCoef: number } | undefined {
  const values = config.values;
  if (!values['opd.enabled'] || missingOpdTeacherKeys(values).length > 0) return undefined;
  return {
    teacher: { baseUrl: values['opd.teacher_url'], model: values['opd.teacher_model'], apiKey: values['opd.teacher_api_key'] },
    klPenaltyCoef: values['opd.kl_penalty_coef'],
  };
}
