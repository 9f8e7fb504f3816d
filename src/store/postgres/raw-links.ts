import type pg from 'pg';
import { z } from 'zod';
import { rawLink, survivingPrevious } from '../../memory/keyword-index.js';
import { reindexWithKeys } from './memory-key-jobs.js';
import type { PgMemorySearch } from './memory-search.js';

const sequence = z.coerce.number();
const followerRows = z.array(z.object({ rowid: sequence, id: z.string(), previous_raw: sequence }));
const termRows = z.array(z.object({ rowid: sequence, terms: z.string() }));

/** A deleted unit as its DELETE … RETURNING gives it: its sequence and the raw turn before it. */
export interface DeletedUnit {
  readonly rowid: number;
  readonly previous_raw: number | null;
}

/**
 * After units are deleted (forgetting, retention, a scope's cap), inside the caller's transaction
 * and under their scopes' locks: a raw turn that followed a deleted one now follows the nearest
 * earlier turn that stays (or none), is indexed with that turn's words instead of the deleted
 * one's, and its entry is rewritten. What MemoryStore.removeRow does on SQLite, for a batch, with
 * the same rules (`survivingPrevious`, `rawLink`).
 */
export async function relinkAfterDeleting(client: pg.PoolClient, search: PgMemorySearch, deleted: readonly DeletedUnit[]): Promise<void> {
  if (deleted.length === 0) return;
  const gone = new Map(deleted.map((unit) => [unit.rowid, unit.previous_raw]));
  const followers = followerRows.parse(
    (await client.query('SELECT rowid, id, previous_raw FROM memory_units WHERE previous_raw = ANY($1::bigint[]) ORDER BY rowid', [[...gone.keys()]])).rows,
  );
  if (followers.length === 0) return;
  const relinked = followers.map((follower) => ({ ...follower, previous: survivingPrevious(follower.previous_raw, gone) }));
  const kept = relinked.flatMap((follower) => (follower.previous === null ? [] : [follower.previous]));
  // Terms as stored (NUL as its stand-in): the words lent are written back in the same form.
  const terms = new Map(
    termRows
      .parse((await client.query('SELECT rowid, terms FROM memory_units WHERE rowid = ANY($1::bigint[])', [kept])).rows)
      .map((row) => [row.rowid, row.terms]),
  );
  const links = relinked.map((follower) => {
    const previousTerms = follower.previous === null ? undefined : terms.get(follower.previous);
    return rawLink(follower.previous === null || previousTerms === undefined ? undefined : { rowid: follower.previous, terms: previousTerms });
  });
  // One statement for every follower, not a round trip each (a retention sweep can relink thousands).
  await client.query(
    `UPDATE memory_units AS unit SET previous_raw = link.previous_raw, neighbour_terms = link.neighbour_terms
       FROM unnest($1::bigint[], $2::bigint[], $3::text[]) AS link(rowid, previous_raw, neighbour_terms)
      WHERE unit.rowid = link.rowid`,
    [relinked.map((follower) => follower.rowid), links.map((link) => link.previous_raw), links.map((link) => link.neighbour_terms)],
  );
  await reindexWithKeys(
    client,
    search,
    relinked.map((follower) => follower.id),
  );
}
