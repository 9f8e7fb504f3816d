import type { ContextProvider, ContextRequest, ContextSection } from '../context/index.js';
import type { MemoryRetriever } from './retrieval.js';
import { renderMemory } from './render.js';
import type { MemoryStore } from './store.js';
import type { MemoryHit, MemoryUnit } from './types.js';

export interface MemoryInjectionSettings {
  topK: number;
  maxTokens: number;
  coreMaxTokens: number;
  minRelevance: number;
}

/**
 * The memory part of each main turn's context: the scope's standing instructions (every turn,
 * cached per scope until its units change) and the memories recalled for the user's real request.
 */
export class MemoryContextProvider implements ContextProvider {
  readonly name = 'memory';
  private readonly coreCache = new Map<string, MemoryUnit[]>();

  constructor(
    private readonly store: MemoryStore,
    private readonly retriever: MemoryRetriever,
    private readonly settings: MemoryInjectionSettings,
  ) {
    store.onChange((scope) => this.coreCache.delete(scope));
  }

  provide(request: ContextRequest): ContextSection | undefined | Promise<ContextSection | undefined> {
    const core = this.core(request.scope);
    if (request.userRequest.text === '' || this.settings.topK === 0) return this.section(core, [], request.scope);
    const recalled = this.retriever.recall({ scope: request.scope, query: request.userRequest.text, limit: this.settings.topK, excludeSession: request.sessionId, excludeCore: true, minRelevance: this.settings.minRelevance });
    return Array.isArray(recalled) ? this.section(core, recalled, request.scope) : recalled.then((hits) => this.section(core, hits, request.scope));
  }

  private core(scope: string): MemoryUnit[] {
    let core = this.coreCache.get(scope);
    if (!core) {
      core = this.store.coreUnits(scope).filter((unit) => !unit.flagged);
      this.coreCache.set(scope, core);
    }
    return core;
  }

  private section(core: readonly MemoryUnit[], recalled: readonly MemoryHit[], scope: string): ContextSection | undefined {
    const rendered = renderMemory(core, recalled, { coreMaxTokens: this.settings.coreMaxTokens, maxTokens: this.settings.maxTokens });
    if (!rendered) return undefined;
    return { provider: this.name, text: rendered.text, tokens: rendered.tokens, details: { scope, core: rendered.core, recalled: rendered.recalled } };
  }
}
