import { blobToVector, dot, vectorToBlob, type EmbeddingClient } from '../embeddings/index.js';
import type { Logger } from '../logging/index.js';
import type { Db } from '../store/index.js';
import type { Skill } from './types.js';

/**
 * Skill embeddings, kept in memory and, on a personal install, in SQLite. Skills are embedded in the
 * background when they change; a skill not embedded yet is simply found by keywords only. A node of
 * a team keeps them in memory only: a team's library is small, and each node embeds it at start.
 */
export class SkillVectors {
  private readonly vectors = new Map<string, { hash: string; vector: Float32Array }>();
  private readonly statements;
  private refreshing: Promise<void> | undefined;
  private queued = false;

  constructor(
    db: Db | undefined,
    private readonly client: EmbeddingClient,
    private readonly logger: Logger,
  ) {
    this.statements = db && {
      all: db.prepare<[string], { name: string; content_hash: string; vector: Buffer }>('SELECT name, content_hash, vector FROM skill_vectors WHERE model = ?'),
      upsert: db.prepare<[string, string, string, Buffer]>(
        'INSERT INTO skill_vectors (name, content_hash, model, vector) VALUES (?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET content_hash = excluded.content_hash, model = excluded.model, vector = excluded.vector',
      ),
      remove: db.prepare<[string]>('DELETE FROM skill_vectors WHERE name = ?'),
    };
    for (const row of this.statements?.all.all(client.model) ?? []) this.vectors.set(row.name, { hash: row.content_hash, vector: blobToVector(row.vector) });
  }

  get count(): number {
    return this.vectors.size;
  }

  /** Embeds the skills whose text changed (in batches), in the background. */
  refresh(skills: () => readonly Skill[]): void {
    if (this.refreshing) {
      this.queued = true;
      return;
    }
    this.refreshing = this.embedMissing(skills())
      .catch((error: unknown) => this.logger.warn({ err: error }, 'embedding skills failed; keyword retrieval still works'))
      .finally(() => {
        this.refreshing = undefined;
        if (this.queued) {
          this.queued = false;
          this.refresh(skills);
        }
      });
  }

  async whenIdle(): Promise<void> {
    while (this.refreshing) await this.refreshing;
  }

  forget(name: string): void {
    this.vectors.delete(name);
    this.statements?.remove.run(name);
  }

  /** The `limit` skills closest to the query vector, with their cosine similarity. */
  nearest(query: Float32Array, limit: number): Array<{ name: string; cosine: number }> {
    const scored: Array<{ name: string; cosine: number }> = [];
    for (const [name, entry] of this.vectors) scored.push({ name, cosine: dot(query, entry.vector) });
    scored.sort((a, b) => b.cosine - a.cosine);
    return scored.slice(0, limit);
  }

  cosine(query: Float32Array, name: string): number | undefined {
    const entry = this.vectors.get(name);
    return entry ? dot(query, entry.vector) : undefined;
  }

  private async embedMissing(skills: readonly Skill[]): Promise<void> {
    const missing = skills.filter((skill) => this.vectors.get(skill.name)?.hash !== skill.contentHash);
    for (let start = 0; start < missing.length; start += 32) {
      const batch = missing.slice(start, start + 32);
      const { vectors } = await this.client.embed(batch.map(embeddingText));
      batch.forEach((skill, index) => {
        const vector = vectors[index]!;
        this.vectors.set(skill.name, { hash: skill.contentHash, vector });
        this.statements?.upsert.run(skill.name, skill.contentHash, this.client.model, vectorToBlob(vector));
      });
    }
  }
}

function embeddingText(skill: Skill): string {
  return `${skill.name.replaceAll('-', ' ')}: ${skill.description}\n\n${skill.body.slice(0, 1500)}`;
}
