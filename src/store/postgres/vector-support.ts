import type pg from 'pg';
import { z } from 'zod';
import { readVectorModel, type PgMemoryVectors, type VectorModel } from './memory-vectors.js';

/**
 * Whether the team store's database holds memory vectors with pgvector: the extension installed in
 * this database (and, once the first vectors are stored, which model they are of), only available
 * on the server (its files are there, CREATE EXTENSION not run), or absent. With pgvector
 * installed, nodes whose memory.embedding is configured embed memories and recall hybrid; otherwise
 * recall is keyword-only, and the notice says why, so an operator knows what to install or set.
 */
export type VectorSupport =
  | { readonly state: 'installed'; readonly version: string; readonly model: VectorModel | undefined; readonly notice: string }
  | { readonly state: 'available'; readonly version: string; readonly notice: string }
  | { readonly state: 'absent'; readonly notice: string };

const row = z.object({ installed: z.string().nullable(), available: z.string().nullable() });

/** Catalog reads (and the vectors' model record), nothing changed: for `metaclaw doctor`, `store status` and a node's /status. */
export async function readVectorSupport(db: Pick<pg.Pool, 'query'>): Promise<VectorSupport> {
  const result = await db.query(
    `SELECT (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS installed,
            (SELECT default_version FROM pg_available_extensions WHERE name = 'vector') AS available`,
  );
  const { installed, available } = row.parse(result.rows[0]);
  if (installed !== null) {
    // A store not migrated yet has no state table: no model recorded.
    const model = await readVectorModel(db).catch(() => undefined);
    return {
      state: 'installed',
      version: installed,
      model,
      notice: model
        ? `vector recall: pgvector ${installed}, memory vectors of ${model.model} (${model.dimensions} dimensions); nodes whose memory.embedding.model is ${model.model} recall hybrid (keywords and vectors)`
        : `vector recall ready: pgvector ${installed} is installed; nodes with memory.embedding.api_base and memory.embedding.model set embed memories and recall hybrid (keyword-only until the first vectors are stored)`,
    };
  }
  if (available !== null)
    return {
      state: 'available',
      version: available,
      notice: `keyword-only recall: pgvector ${available} is available on this server but not installed in this database (\`metaclaw store migrate\` installs it when the store's role may create extensions; or CREATE EXTENSION vector)`,
    };
  return {
    state: 'absent',
    notice: 'keyword-only recall: the pgvector extension is not available on this PostgreSQL server (memory vectors need it; team nodes recall by keyword)',
  };
}

/**
 * Whether memory vectors are in use, decided as a node decides at start and `metaclaw memory` on a
 * team decides too: `vectors` (made when memory.embedding is configured, runtime/settings.ts
 * embedsMemory) are enabled when the store's database has pgvector installed. What was found;
 * undefined when it could not be read (keyword-only, as without pgvector).
 */
export async function enableVectorsIfInstalled(
  pool: pg.Pool,
  vectors: PgMemoryVectors | undefined,
  options: { makeIndex?: boolean } = {},
): Promise<VectorSupport | undefined> {
  const support = await readVectorSupport(pool).catch(() => undefined);
  if (vectors && support?.state === 'installed') await vectors.enable(options);
  return support;
}
