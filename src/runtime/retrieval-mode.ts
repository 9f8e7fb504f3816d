import { z } from 'zod';
import { presetFor, resolveUpstreams, type LoadedConfig } from '../config/index.js';
import { probeEmbeddings, type EmbeddingEndpoint } from '../embeddings/index.js';
import type { MemorySettings } from '../memory/index.js';
import type { SkillsSettings } from '../skills/index.js';
import { StateStore, type Db } from '../store/index.js';

/**
 * Embeddings on by default where the configured provider offers them: the presets with an
 * embeddings endpoint (OpenAI, Qwen/DashScope, Volcengine, Ollama) are probed once by `metaclaw
 * setup` and once at each start (in the background, after the proxy listens), and while the last
 * probe answered, hybrid retrieval is the default for skills and memory. A mode or endpoint set in
 * config.yaml always wins.
 */

const PROBE_KEY = 'embeddings.provider_probe';
const PROBE_TIMEOUT_MS = 5_000;

/** What the last probe found (stored in the state table, read back at start and by `doctor`). */
const probeSchema = z.union([
  z.object({ apiBase: z.string(), model: z.string(), ok: z.boolean(), detail: z.string(), at: z.string(), source: z.string() }),
  z.object({ reason: z.string() }),
]);

/** An embeddings probe's outcome, or why there was nothing to probe. */
export type ProviderProbe = z.infer<typeof probeSchema>;

/** The provider's endpoint (with why it is used), or why it cannot be used. */
type ProviderEndpoint = { endpoint: EmbeddingEndpoint; reason: string } | { reason: string };

export interface RetrievalDecision {
  /** What `doctor` and /status show: keyword, embedding or hybrid. */
  mode: 'keyword' | 'embedding' | 'hybrid';
  embedding: EmbeddingEndpoint;
  reason: string;
}

const NO_ENDPOINT: EmbeddingEndpoint = { apiBase: '', apiKey: '', model: '' };

/** The provider's embeddings endpoint to probe, or why there is none. */
function providerEndpoint(config: LoadedConfig, env: NodeJS.ProcessEnv): ProviderEndpoint {
  const provider = config.values['llm.provider'];
  const preset = presetFor(provider);
  if (!preset?.embeddingModel)
    return {
      reason:
        provider === 'custom'
          ? 'llm.provider is custom, so no embeddings endpoint is known (set skills.embedding.* and memory.embedding.* to use one)'
          : `the provider (${preset?.label ?? provider}) has no embeddings endpoint`,
    };
  let main;
  try {
    main = resolveUpstreams(config, env)[0];
  } catch {
    main = undefined;
  }
  if (!main) return { reason: 'no upstream is configured' };
  if (!main.apiKey && preset.needsKey)
    return { reason: "no API key is configured for the provider (the agent's own key is passed through), so its embeddings endpoint cannot be called" };
  const endpoint = { apiBase: main.baseUrl, apiKey: main.apiKey ?? '', model: preset.embeddingModel };
  return { endpoint, reason: `${endpoint.model} at ${endpoint.apiBase}` };
}

/** Probes the provider's embeddings endpoint once (or says why there is nothing to probe). */
export async function probeProviderEmbeddings(
  config: LoadedConfig,
  env: NodeJS.ProcessEnv,
  source: 'setup' | 'start',
  signal?: AbortSignal,
): Promise<ProviderProbe> {
  const found = providerEndpoint(config, env);
  if (!('endpoint' in found)) return found;
  return probeEmbeddings(found.endpoint, PROBE_TIMEOUT_MS, source, signal);
}

export function saveProbe(db: Db, probe: ProviderProbe): void {
  new StateStore(db).set(PROBE_KEY, JSON.stringify(probe));
}

export function storedProbe(db: Db): ProviderProbe | undefined {
  const text = new StateStore(db).get(PROBE_KEY);
  if (text === undefined) return undefined;
  try {
    const parsed = probeSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The provider's endpoint when the last probe of it (this base URL and model) answered, else why not. */
function probedEndpoint(config: LoadedConfig, env: NodeJS.ProcessEnv, probe: ProviderProbe | undefined): ProviderEndpoint {
  const found = providerEndpoint(config, env);
  if (!('endpoint' in found)) return found;
  if (!probe) return { reason: `${found.reason} has not been probed yet (setup and each start probe it)` };
  if (!('ok' in probe) || probe.apiBase !== found.endpoint.apiBase || probe.model !== found.endpoint.model)
    return { reason: `${found.reason} has not been probed since the provider changed (each start probes it)` };
  return probe.ok ? { endpoint: found.endpoint, reason: probe.detail } : { reason: probe.detail };
}

/** One part's decision: an explicit mode in config wins, then an endpoint in config, then the provider's. */
function decide(
  part: 'skills' | 'memory',
  config: LoadedConfig,
  provider: ProviderEndpoint,
  keywordName: string,
  fallbackMode: 'embedding' | 'hybrid',
): RetrievalDecision {
  const values = config.values;
  const explicit = config.explicitKeys.has(`${part}.retrieval_mode`) ? values[`${part}.retrieval_mode`] : undefined;
  const apiBase = values[`${part}.embedding.api_base`];
  const apiKey = values[`${part}.embedding.api_key`];
  const model = values[`${part}.embedding.model`];
  const configured = apiBase && model ? { apiBase, apiKey, model } : undefined;
  const endpoint = configured ?? ('endpoint' in provider ? provider.endpoint : undefined);
  if (explicit === keywordName) return { mode: 'keyword', embedding: NO_ENDPOINT, reason: `${part}.retrieval_mode is ${keywordName} in config` };
  if (!endpoint)
    return {
      mode: 'keyword',
      embedding: NO_ENDPOINT,
      reason: explicit ? `${part}.retrieval_mode is ${explicit} in config, but no embeddings endpoint answers: ${provider.reason}` : provider.reason,
    };
  const mode = explicit === 'embedding' ? 'embedding' : explicit === 'hybrid' ? 'hybrid' : fallbackMode;
  const reason = explicit ? `${part}.retrieval_mode is ${explicit} in config` : configured ? `${part}.embedding is configured` : provider.reason;
  return { mode, embedding: endpoint, reason };
}

/** Which retrieval skills and memory use, with the endpoint and why. */
export function retrievalModes(
  config: LoadedConfig,
  env: NodeJS.ProcessEnv,
  probe: ProviderProbe | undefined,
): { skills: RetrievalDecision; memory: RetrievalDecision } {
  const provider = probedEndpoint(config, env, probe);
  // memory.retrieval_mode defaults to hybrid, so only its explicit `embedding` changes the default.
  const memoryMode = config.values['memory.retrieval_mode'] === 'embedding' ? 'embedding' : 'hybrid';
  return { skills: decide('skills', config, provider, 'template', 'hybrid'), memory: decide('memory', config, provider, 'keyword', memoryMode) };
}

/**
 * A node of a team's skill retrieval: a node does not probe the provider (every node must embed with
 * the same model, so the endpoint is named in config), so only skills.embedding.* turns vectors on.
 */
export function teamSkillsRetrieval(config: LoadedConfig): RetrievalDecision {
  const unprobed = {
    reason:
      'a node of a team does not probe the provider (every node must embed with the same model): set skills.embedding.api_base and skills.embedding.model',
  };
  return decide('skills', config, unprobed, 'template', 'hybrid');
}

/** The skills settings with the decided mode and endpoint. */
export function withSkillsRetrieval(settings: SkillsSettings, decision: RetrievalDecision): SkillsSettings {
  return { ...settings, retrievalMode: skillsMode(decision), embedding: decision.embedding };
}

/** The memory settings with the decided mode and endpoint. */
export function withMemoryRetrieval(settings: MemorySettings, decision: RetrievalDecision): MemorySettings {
  return { ...settings, retrievalMode: decision.mode, embedding: decision.embedding };
}

/** Skills call keyword retrieval `template` (MetaClaw's name). */
export function skillsMode(decision: RetrievalDecision): SkillsSettings['retrievalMode'] {
  return decision.mode === 'keyword' ? 'template' : decision.mode;
}

/** A decision as /status and `doctor` show it. */
export function describeRetrieval(decision: RetrievalDecision): { mode: string; reason: string; model: string | null } {
  return { mode: decision.mode, reason: decision.reason, model: decision.embedding.model || null };
}
