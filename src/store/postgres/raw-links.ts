import type pg from 'pg';
import { z } from 'zod';
import { clarifyingQuestion, rawLink, survivingPrevious, type LinkedTurn } from '../../memory/keyword-index.js';
import { reindexWithKeys } from './memory-key-jobs.js';
import type { PgMemorySearch } from './memory-search.js';

const sequence = z.coerce.number();
const followerRows = z.array(z.object({ rowid: sequence, id: z.string(), previous_raw: sequence }));
const linkedTurn = z.object({ rowid: sequence, terms: z.string(), content: z.string(), speaker: z.string().nullable(), neighbour_terms: z.string() });
const linkedRows = z.array(linkedTurn);
const chainRows = z.array(linkedTurn.extend({ id: z.string(), previous_raw: sequence }));

/** A deleted unit as its DELETE … RETURNING gives it: its sequence and the raw turn before it. */
export interface DeletedUnit {
  readonly rowid: number;
  readonly previous_raw: number | null;
}

/**
 * After units are deleted (forgetting, retention, a scope's cap), inside the caller's transaction
 * and under their scopes' locks: a raw turn that followed a deleted one now follows the nearest
 * earlier turn that stays (or none), is indexed with that turn's words instead of the deleted
 * one's, and its entry is rewritten; so is the turn after such a turn when that turn is a
 * clarifying question (it lent the deleted words through it). What MemoryStore.removeRow does on
 * SQLite, for a batch, with the same rules (`survivingPrevious`, `rawLink`).
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
  // Turns as stored (terms with NUL as its stand-in): the words lent are written back in the same form.
  const turns = new Map<number, LinkedTurn>(
    linkedRows
      .parse(
        (
          await client.query('SELECT rowid, terms, content, speaker, neighbour_terms FROM memory_units WHERE rowid = ANY($1::bigint[])', [
            [...kept, ...relinked.map((follower) => follower.rowid)],
          ])
        ).rows,
      )
      .map((row) => [row.rowid, row]),
  );
  // In rowid order, each follower's new words known before a later one that follows it reads them.
  const links = relinked.map((follower) => {
    const link = rawLink(follower.previous === null ? undefined : turns.get(follower.previous));
    const turn = turns.get(follower.rowid);
    if (turn) turn.neighbour_terms = link.neighbour_terms;
    return link;
  });
  // A relinked clarifying question lends what it was lent (`rawLink`): the turn after it is relinked
  // too, and so on while that turn is a question as well (two questions in a row pass the words on).
  const moved = new Set(relinked.map((follower) => follower.rowid));
  let questions = relinked.flatMap((follower) => {
    const turn = turns.get(follower.rowid);
    return turn !== undefined && clarifyingQuestion(turn) ? [follower.rowid] : [];
  });
  while (questions.length > 0) {
    const after = chainRows.parse(
      (
        await client.query(
          'SELECT rowid, id, previous_raw, terms, content, speaker, neighbour_terms FROM memory_units WHERE previous_raw = ANY($1::bigint[]) ORDER BY rowid',
          [questions],
        )
      ).rows,
    );
    questions = [];
    for (const turn of after) {
      if (moved.has(turn.rowid)) continue;
      moved.add(turn.rowid);
      const link = rawLink(turns.get(turn.previous_raw));
      turns.set(turn.rowid, { ...turn, neighbour_terms: link.neighbour_terms });
      relinked.push({ rowid: turn.rowid, id: turn.id, previous_raw: turn.previous_raw, previous: turn.previous_raw });
      links.push(link);
      if (clarifyingQuestion(turn)) questions.push(turn.rowid);
    }
  }
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
