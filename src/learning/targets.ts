import { detectFormat, type UpstreamTarget } from '../config/index.js';
import type { CredentialMemory } from '../upstream/credential-memory.js';
import type { LlmTarget } from './llm-client.js';

export interface LearningEndpointConfig {
  /** A dedicated endpoint (rl.evolver_api_base, memory.extractor_api_base…); empty: the main upstream. */
  apiBase: string;
  apiKey: string;
  model: string;
  name: string;
}

/**
 * Where a learning job sends its LLM calls: its own endpoint when configured, else the user's main
 * upstream with the main model (or the model the agent itself used in that session).
 */
export function resolveLearningTarget(
  endpoint: LearningEndpointConfig,
  main: UpstreamTarget,
  credentials: CredentialMemory,
  sessionModel: string | undefined,
): LlmTarget | undefined {
  if (endpoint.apiBase) {
    const model = endpoint.model || main.model || sessionModel;
    if (!model) return undefined;
    return {
      name: endpoint.name,
      baseUrl: endpoint.apiBase.replace(/\/+$/, ''),
      format: detectFormat('auto', endpoint.apiBase, ''),
      apiKey: endpoint.apiKey || undefined,
      model,
      credentials: {},
    };
  }
  const model = endpoint.model || main.model || sessionModel;
  if (!model) return undefined;
  return {
    name: `${endpoint.name} via ${main.name} upstream`,
    baseUrl: main.baseUrl,
    format: main.format,
    apiKey: main.apiKey,
    model,
    credentials: main.apiKey ? {} : credentials.recall(main.name),
  };
}
