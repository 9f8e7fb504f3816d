import type { ContextProvider, ContextRequest, ContextSection } from '../context/index.js';
import { chooseCore, coreRules, type CoreRule } from './core-selection.js';
import type { MemoryRetriever, RecallRequest } from './retrieval.js';
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
export interface ScopeCore {
  rules: CoreRule[];
  tokens: number;
  replaced: Set<string>;
}

/** The core of a scope from its active core units and the turns of its replaced rules (a turn a current rule still cites holds). */
export function scopeCore(units: readonly MemoryUnit[], replaced: Set<string>): ScopeCore {
  const current = units.filter((unit) => !unit.flagged);
  for (const unit of current) for (const turn of unit.sourceTurns) replaced.delete(turn);
  return { ...coreRules(current), replaced };
}

/**
 * Whole sections by scope and request: an agent's tool loop resends the same request with every
 * step, and recalling it again each time was most of the proxy's per-request cost. Kept until the
 * scope changes (or the hour turns, for recency).
 */
export class SectionCache {
  private readonly sections = new Map<string, Map<string, ContextSection | undefined>>();

  /** The cached section (`found`), or how to remember the one about to be made for this request. */
  lookup(
    request: ContextRequest,
  ): { found: true; section: ContextSection | undefined } | { found: false; remember: (section: ContextSection | undefined) => ContextSection | undefined } {
    const key = `${request.sessionId}\u0000${Math.floor(Date.now() / HOUR_MS)}\u0000${request.userRequest.text}`;
    let cached = this.sections.get(request.scope);
    if (cached?.has(key)) return { found: true, section: cached.get(key) };
    if (!cached || cached.size >= SECTIONS_PER_SCOPE) {
      cached = new Map();
      this.sections.set(request.scope, cached);
    }
    const scopeCache = cached;
    return {
      found: false,
      remember: (section) => {
        // a change meanwhile replaced this scope's cache: do not put a stale section into the new one
        if (this.sections.get(request.scope) === scopeCache) scopeCache.set(key, section);
        return section;
      },
    };
  }

  /** A scope's units changed: every scope's sections hold the shared scope's memories too. */
  changed(scope: string): void {
    if (scope === SHARED_SCOPE) this.sections.clear();
    else this.sections.delete(scope);
  }

  clear(): void {
    this.sections.clear();
  }
}

/** The recall a request's section makes in one of its scopes. */
export function sectionRecall(request: ContextRequest, scope: string, settings: MemoryInjectionSettings): RecallRequest {
  return {
    scope,
    query: request.userRequest.text,
    limit: settings.topK,
    excludeSession: request.sessionId,
    excludeCore: true,
    minRelevance: settings.minRelevance,
    onRequestPath: true,
  };
}

/** The words that taught a rule since replaced are not recalled either: they no longer hold. */
export function withoutReplaced(hits: readonly MemoryHit[], replaced: ReadonlySet<string>): readonly MemoryHit[] {
  return replaced.size === 0 ? hits : hits.filter((hit) => !hit.unit.sourceTurns.some((turn) => replaced.has(turn)));
}

/** The scopes' recalls as one list: ranked together by score, the best `topK`. */
export function mergeRecalls(lists: ReadonlyArray<readonly MemoryHit[]>, topK: number): readonly MemoryHit[] {
  return lists.length === 1
    ? lists[0]!
    : lists
        .flat()
        .sort((a, b) => b.score - a.score)
        .slice(0, topK);
}

/** The rendered memory section (undefined when there is nothing to show). */
export function memorySection(
  core: readonly MemoryUnit[],
  recalled: readonly MemoryHit[],
  scope: string,
  settings: MemoryInjectionSettings,
): ContextSection | undefined {
  const rendered = renderMemory(core, recalled, { coreMaxTokens: settings.coreMaxTokens, maxTokens: settings.maxTokens });
  if (!rendered) return undefined;
  return { provider: 'memory', text: rendered.text, tokens: rendered.tokens, details: { scope, core: rendered.core, recalled: rendered.recalled } };
}

/**
 * The memory part of each main turn's context: the scope's standing instructions (every turn,
 * cached per scope until its units change) and the memories recalled for the user's real request.
 * The whole section is also kept until the scope changes (SectionCache).
 */
export class MemoryContextProvider implements ContextProvider {
  readonly name = 'memory';
  private readonly coreCache = new Map<string, ScopeCore>();
  private readonly sections = new SectionCache();

  constructor(
    private readonly store: MemoryStore,
    private readonly retriever: MemoryRetriever,
    private readonly settings: MemoryInjectionSettings,
    /** Called first on every request: notices memory changed by another process (`SharedMemoryRevision.look`). */
    private readonly lookForChanges: () => void = () => undefined,
  ) {
    store.onChange((scope) => {
      this.coreCache.delete(scope);
      this.sections.changed(scope);
    });
  }

  provide(request: ContextRequest): ContextSection | undefined | Promise<ContextSection | undefined> {
    this.lookForChanges();
    const cached = this.sections.lookup(request);
    if (cached.found) return cached.section;
    const { remember } = cached;
    // The shared scope (`team`) is read beside the caller's own, once it holds anything: its rules after theirs, its memories ranked with theirs.
    const scopes = request.scope !== SHARED_SCOPE && this.store.scopeSize(SHARED_SCOPE) > 0 ? [request.scope, SHARED_SCOPE] : [request.scope];
    const budget = { maxTokens: this.settings.coreMaxTokens, minRelevance: this.settings.minRelevance };
    const cores = scopes.map((scope) => this.core(scope));
    const core = scopes.flatMap((scope, index) => chooseCore(this.store, scope, cores[index]!, request.userRequest.text, budget));
    if (request.userRequest.text === '' || this.settings.topK === 0) return remember(this.section(core, [], request.scope));
    const recalls = scopes.map((scope, index) => {
      const recalled = this.retriever.recall(sectionRecall(request, scope, this.settings));
      const current = (hits: readonly MemoryHit[]) => withoutReplaced(hits, cores[index]!.replaced);
      return Array.isArray(recalled) ? current(recalled) : recalled.then(current);
    });
    return recalls.every((recalled) => Array.isArray(recalled))
      ? remember(this.section(core, mergeRecalls(recalls as ReadonlyArray<readonly MemoryHit[]>, this.settings.topK), request.scope))
      : Promise.all(recalls.map(async (recalled) => recalled)).then((lists) =>
          remember(this.section(core, mergeRecalls(lists, this.settings.topK), request.scope)),
        );
  }

  private core(scope: string): ScopeCore {
    let core = this.coreCache.get(scope);
    if (!core) {
      core = scopeCore(this.store.coreUnits(scope), this.store.replacedRuleTurns(scope));
      this.coreCache.set(scope, core);
    }
    return core;
  }

  private section(core: readonly MemoryUnit[], recalled: readonly MemoryHit[], scope: string): ContextSection | undefined {
    return memorySection(core, recalled, scope, this.settings);
  }
}
