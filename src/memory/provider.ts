import type { ContextProvider, ContextRequest, ContextSection } from '../context/index.js';
import { chooseCore, coreRules, type CoreRule } from './core-selection.js';
import type { MemoryRetriever } from './retrieval.js';
import { renderMemory } from './render.js';
import type { MemoryStore } from './store.js';
import { SHARED_SCOPE, type MemoryHit, type MemoryUnit } from './types.js';

export interface MemoryInjectionSettings {
  topK: number;
  maxTokens: number;
  coreMaxTokens: number;
  minRelevance: number;
}

const SECTIONS_PER_SCOPE = 256;
const HOUR_MS = 3_600_000;

/** A scope's standing instructions, and the turns of rules replaced since (cached until the scope changes). */
interface ScopeCore {
  rules: CoreRule[];
  tokens: number;
  replaced: Set<string>;
}

/**
 * The memory part of each main turn's context: the scope's standing instructions (every turn,
 * cached per scope until its units change) and the memories recalled for the user's real request.
 * The whole section is also kept until the scope changes (or the hour turns, for recency): an
 * agent's tool loop resends the same request with every step, and recalling it again each time
 * was most of the proxy's per-request cost.
 */
export class MemoryContextProvider implements ContextProvider {
  readonly name = 'memory';
  private readonly coreCache = new Map<string, ScopeCore>();
  private readonly sections = new Map<string, Map<string, ContextSection | undefined>>();

  constructor(
    private readonly store: MemoryStore,
    private readonly retriever: MemoryRetriever,
    private readonly settings: MemoryInjectionSettings,
    /** Called first on every request: notices memory changed by another process (`SharedMemoryRevision.look`). */
    private readonly lookForChanges: () => void = () => undefined,
  ) {
    store.onChange((scope) => {
      this.coreCache.delete(scope);
      // Every scope's sections hold the shared scope's memories too.
      if (scope === SHARED_SCOPE) this.sections.clear();
      else this.sections.delete(scope);
    });
  }

  provide(request: ContextRequest): ContextSection | undefined | Promise<ContextSection | undefined> {
    this.lookForChanges();
    const key = `${request.sessionId}\u0000${Math.floor(Date.now() / HOUR_MS)}\u0000${request.userRequest.text}`;
    let cached = this.sections.get(request.scope);
    if (cached?.has(key)) return cached.get(key);
    if (!cached || cached.size >= SECTIONS_PER_SCOPE) {
      cached = new Map();
      this.sections.set(request.scope, cached);
    }
    const remember = (section: ContextSection | undefined) => {
      // a change meanwhile replaced this scope's cache: do not put a stale section into the new one
      if (this.sections.get(request.scope) === cached) cached.set(key, section);
      return section;
    };
    // The shared scope (`team`) is read beside the caller's own, once it holds anything: its rules after theirs, its memories ranked with theirs.
    const scopes = request.scope !== SHARED_SCOPE && this.store.scopeSize(SHARED_SCOPE) > 0 ? [request.scope, SHARED_SCOPE] : [request.scope];
    const budget = { maxTokens: this.settings.coreMaxTokens, minRelevance: this.settings.minRelevance };
    const cores = scopes.map((scope) => this.core(scope));
    const core = scopes.flatMap((scope, index) => chooseCore(this.store, scope, cores[index]!, request.userRequest.text, budget));
    if (request.userRequest.text === '' || this.settings.topK === 0) return remember(this.section(core, [], request.scope));
    const recalls = scopes.map((scope, index) => {
      const recalled = this.retriever.recall({
        scope,
        query: request.userRequest.text,
        limit: this.settings.topK,
        excludeSession: request.sessionId,
        excludeCore: true,
        minRelevance: this.settings.minRelevance,
        onRequestPath: true,
      });
      // The words that taught a rule since replaced are not recalled either: they no longer hold.
      const replaced = cores[index]!.replaced;
      const current = (hits: readonly MemoryHit[]) =>
        replaced.size === 0 ? hits : hits.filter((hit) => !hit.unit.sourceTurns.some((turn) => replaced.has(turn)));
      return Array.isArray(recalled) ? current(recalled) : recalled.then(current);
    });
    const merged = (lists: ReadonlyArray<readonly MemoryHit[]>) =>
      lists.length === 1
        ? lists[0]!
        : lists
            .flat()
            .sort((a, b) => b.score - a.score)
            .slice(0, this.settings.topK);
    return recalls.every((recalled) => Array.isArray(recalled))
      ? remember(this.section(core, merged(recalls as ReadonlyArray<readonly MemoryHit[]>), request.scope))
      : Promise.all(recalls.map(async (recalled) => recalled)).then((lists) => remember(this.section(core, merged(lists), request.scope)));
  }

  private core(scope: string): ScopeCore {
    let core = this.coreCache.get(scope);
    if (!core) {
      const units = this.store.coreUnits(scope).filter((unit) => !unit.flagged);
      const replaced = this.store.replacedRuleTurns(scope);
      for (const unit of units) for (const turn of unit.sourceTurns) replaced.delete(turn);
      core = { ...coreRules(units), replaced };
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
