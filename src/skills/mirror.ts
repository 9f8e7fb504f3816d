import type { LibraryChange } from './library.js';
import type { Logger } from '../logging/index.js';
import { EmbeddingClient, type EmbeddingEndpoint } from '../embeddings/index.js';
import { SkillRetriever, type RetrievalMode, type SkillSource } from './retrieval.js';
import { SkillVectors } from './vectors.js';
import { SkillSearchIndex } from './search-index.js';
import type { Skill } from './types.js';

/**
 * A node's in-memory copy of a library it does not own on disk (the team store's skills table):
 * the skills by name and the search index retrieval reads, kept in step by whoever follows the
 * store (`SkillSubscription`), with the library generation it reflects. Retrieval stays in memory,
 * as with the folder library: the request path never waits for the database.
 */
export class SkillMirror implements SkillSource {
  readonly index: SkillSearchIndex;
  private readonly skills = new Map<string, Skill>();
  private seen = 0;
  private readonly listeners: Array<(change: LibraryChange, generation: number) => void> = [];

  constructor(searchKeys?: (skill: Skill) => string) {
    this.index = new SkillSearchIndex(searchKeys);
  }

  /** The library generation this copy has caught up to. */
  get generation(): number {
    return this.seen;
  }

  get size(): number {
    return this.skills.size;
  }

  get(name: string): Skill | undefined {
    return this.skills.get(name);
  }

  all(): Skill[] {
    return [...this.skills.values()];
  }

  onChange(listener: (change: LibraryChange, generation: number) => void): void {
    this.listeners.push(listener);
  }

  /** Applies the changes up to `generation` (an older generation than seen changes nothing). */
  apply(change: LibraryChange, generation: number): void {
    if (generation < this.seen) return;
    for (const name of change.removed) this.skills.delete(name);
    for (const skill of change.changed) this.skills.set(skill.name, skill);
    this.index.update(change.changed, change.removed);
    this.seen = generation;
    if (change.changed.length === 0 && change.removed.length === 0) return;
    for (const listener of this.listeners) listener(change, generation);
  }
}

/**
 * Retrieval over a mirror as a node's config decides it: with an embeddings endpoint (`embedding`),
 * the library is embedded in memory as the mirror fills and changes (no vectors are stored: a team's
 * library is small), and a skill not embedded yet is found by keywords; without one, keywords alone.
 */
export function configuredMirrorRetrieval(
  mirror: SkillMirror,
  settings: { topK: number; minRelevance: number; retrievalMode: RetrievalMode },
  embedding: EmbeddingEndpoint | undefined,
  logger: Logger,
): { retriever: SkillRetriever; vectors: SkillVectors | undefined } {
  const client = embedding && new EmbeddingClient(embedding);
  const vectors = client && new SkillVectors(undefined, client, logger);
  if (vectors)
    mirror.onChange((change) => {
      for (const name of change.removed) vectors.forget(name);
      if (change.changed.length > 0) vectors.refresh(() => mirror.all());
    });
  return { retriever: mirrorRetriever(mirror, settings, logger, vectors && client && { store: vectors, client }), vectors };
}

/**
 * Retrieval over a mirror: keywords, as the personal library's `template` mode ranks, and with
 * `vectors` (a node with skills.embedding.* set) the mode configured, fused as the personal one does.
 */
export function mirrorRetriever(
  mirror: SkillMirror,
  settings: { topK: number; minRelevance: number; retrievalMode: RetrievalMode },
  logger: Logger,
  vectors?: { store: SkillVectors; client: EmbeddingClient },
): SkillRetriever {
  const mode = vectors ? settings.retrievalMode : 'template';
  return new SkillRetriever(mirror, mirror.index, vectors?.store, vectors?.client, { mode, topK: settings.topK, minRelevance: settings.minRelevance }, logger);
}
