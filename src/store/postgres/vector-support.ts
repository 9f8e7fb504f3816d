import type pg from 'pg';
import { z } from 'zod';

/**
 * Whether the team store's database could hold memory vectors with pgvector: the extension
 * installed in this database, only available on the server (its files are there, CREATE EXTENSION
 * not run), or absent. Team nodes recall by keyword whatever the answer in this version (vector
 * recall on PostgreSQL is not built); the notice says so, so an operator who installs pgvector is
 * not left expecting semantic recall.
 */
export type VectorSupport =
  | { readonly state: 'installed'; readonly version: string; readonly notice: string }
  | { readonly state: 'available'; readonly version: string; readonly notice: string }
  | { readonly state: 'absent'; readonly notice: string };

const row = z.object({ installed: z.string().nullable(), available: z.string().nullable() });

/** Two catalog reads, no extension needed and nothing changed: for `metaclaw doctor`, `store status` and a node's /status. */
export async function readVectorSupport(db: Pick<pg.Pool, 'query'>): Promise<VectorSupport> {
  const result = await db.query(
    `SELECT (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS installed,
            (SELECT default_version FROM pg_available_extensions WHERE name = 'vector') AS available`,
  );
  const { installed, available } = row.parse(result.rows[0]);
  if (installed !== null)
    return {
      state: 'installed',
      version: installed,
      notice: `keyword-only recall: pgvector ${installed} is installed in this database, but team nodes recall memories by keyword only in this version`,
    };
  if (available !== null)
    return {
      state: 'available',
      version: available,
      notice: `keyword-only recall: pgvector ${available} is available on this server but not installed in this database (CREATE EXTENSION vector installs it; team nodes recall by keyword only in this version either way)`,
    };
  return {
    state: 'absent',
    notice:
      'keyword-only recall: the pgvector extension is not available on this PostgreSQL server (team nodes recall memories by keyword only in this version either way)',
  };
}
