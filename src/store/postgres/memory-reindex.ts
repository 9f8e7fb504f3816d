import type pg from 'pg';
import { z } from 'zod';
import type { TeamJobHandler } from '../../learning/team-job.js';
import { indexWordsVersion, rawLink, type LinkedTurn } from '../../memory/keyword-index.js';
import { REINDEX_JOB } from '../../memory/service.js';
import { termsOf } from '../../memory/store.js';
import type { PgJobQueue } from './job-queue.js';
import { reindexWithKeys } from './memory-key-jobs.js';
import { sqliteRowOf } from './memory-units.js';
import { lockScope } from './memory-workspace.js';
import type { PgMemorySearch } from './memory-search.js';
import { fromPostgresText } from './text.js';
import { DB_CLOCK_MS } from './transaction.js';

/** Units re-indexed per job (each job's effect is one transaction; the rest goes on in the next job). */
const REINDEX_BATCH = 200;

/**
 * Entries written with older bundled words than this node's: none (written before versions were
 * kept), or a version first seen before this node's ($1). A version first seen later is newer:
 * a node of the old version during a rolling upgrade leaves its entries alone.
 */
const OLDER_ENTRIES = `FROM memory_search_docs d LEFT JOIN memory_index_words w ON w.version = d.words_version
  WHERE d.words_version IS NULL OR w.first_seen IS NULL
     OR w.first_seen < (SELECT first_seen FROM memory_index_words WHERE version = $1)`;

/**
 * Whether any entry is older (as `OLDER_ENTRIES` says), by index lookups on words_version (migration
 * 25): one for entries without a version, then one per version the entries hold, walked in order
 * (a team holds a few). `SELECT 1 ${OLDER_ENTRIES} LIMIT 1` read every entry when none was older,
 * which is the case at nearly every start.
 */
const ANY_OLDER = `WITH RECURSIVE versions (version) AS (
    SELECT min(words_version) FROM memory_search_docs
    UNION ALL
    SELECT (SELECT min(words_version) FROM memory_search_docs WHERE words_version > versions.version) FROM versions WHERE version IS NOT NULL
  )
  SELECT EXISTS (SELECT 1 FROM memory_search_docs WHERE words_version IS NULL)
      OR EXISTS (SELECT 1 FROM versions v LEFT JOIN memory_index_words w ON w.version = v.version
                  WHERE v.version IS NOT NULL
                    AND (w.first_seen IS NULL OR w.first_seen < (SELECT first_seen FROM memory_index_words WHERE version = $1))) AS older`;

const idRows = z.array(z.object({ unit_id: z.string() }));
const sequence = z.coerce.number();
const linkedRows = z.array(z.object({ rowid: sequence, terms: z.string(), content: z.string(), speaker: z.string().nullable(), neighbour_terms: z.string() }));
const olderRow = z.object({ older: z.boolean() });
/** Which batch a job is: the next one is queued under the other dedupe key (a job's own key is held while it runs). */
const payloadSchema = z.object({ round: z.number().int().nonnegative() }).catch({ round: 0 });

/**
 * At a node's start: records when its bundled words' version was first seen, and queues
 * memory.reindex (one job for the team, by its dedupe key) when entries of older versions exist.
 * So the index converges as nodes upgrade, as a personal install re-indexes once after an upgrade.
 */
export async function queueTeamReindex(pool: pg.Pool, queue: PgJobQueue): Promise<number | undefined> {
  const version = indexWordsVersion();
  await pool.query(`INSERT INTO memory_index_words (version, first_seen) VALUES ($1, ${DB_CLOCK_MS}) ON CONFLICT (version) DO NOTHING`, [version]);
  const { older } = olderRow.parse((await pool.query(ANY_OLDER, [version])).rows[0]);
  if (!older) return undefined;
  return queue.enqueue(REINDEX_JOB, {}, { dedupeKey: REINDEX_JOB });
}

/**
 * memory.reindex on the team store: a batch of the entries older than this node's words is
 * rewritten with them (and the units' search keys, as the keys job writes them), under their
 * scopes' locks; while older entries remain, the job queues the next batch.
 */
export function pgReindexHandler(queue: PgJobQueue, search: PgMemorySearch): TeamJobHandler {
  return {
    kind: REINDEX_JOB,
    usesLlm: false,
    run: async (payload, context) => async (client) => {
      const version = indexWordsVersion();
      const batch = idRows.parse((await client.query(`SELECT d.unit_id ${OLDER_ENTRIES} ORDER BY d.seq LIMIT $2`, [version, REINDEX_BATCH + 1])).rows);
      const ids = batch.slice(0, REINDEX_BATCH).map((row) => row.unit_id);
      await retokenize(client, ids);
      await reindexWithKeys(client, search, ids);
      if (batch.length > REINDEX_BATCH) {
        const round = payloadSchema.parse(payload).round + 1;
        await queue.enqueue(REINDEX_JOB, { round }, { dedupeKey: round % 2 === 0 ? REINDEX_JOB : `${REINDEX_JOB}:more` }, client);
      }
      context.logger.info({ units: ids.length, more: batch.length > REINDEX_BATCH }, 'memory index entries rewritten with the bundled glossary and thesaurus');
    },
  };
}

/**
 * The units' stored terms made again with this node's tokenizer (from their text and search keys),
 * and the words a raw turn among them borrows from the turn before it, under their scopes' locks:
 * what MemoryStore.reindexAfter does on SQLite. A turn before one of them has an earlier sequence,
 * so it was made again in this batch or an earlier one.
 */
async function retokenize(client: pg.PoolClient, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  const scopes = await client.query<{ scope: string }>('SELECT DISTINCT scope FROM memory_units WHERE id = ANY($1::text[]) ORDER BY scope', [ids]);
  for (const { scope } of scopes.rows) await lockScope(client, fromPostgresText(scope));
  const rows = (await client.query('SELECT * FROM memory_units WHERE id = ANY($1::text[]) ORDER BY rowid', [ids])).rows.map(sqliteRowOf);
  const terms = rows.map((row) => termsOf(row.content, JSON.parse(row.search_keys) as string[]).join(' '));
  await client.query(
    'UPDATE memory_units AS unit SET terms = made.terms FROM unnest($1::bigint[], $2::text[]) AS made(rowid, terms) WHERE unit.rowid = made.rowid',
    [rows.map((row) => row.rowid), terms],
  );
  const followers = rows.filter((row) => row.previous_raw !== null);
  if (followers.length === 0) return;
  const turns = new Map<number, LinkedTurn>(
    linkedRows
      .parse(
        (
          await client.query('SELECT rowid, terms, content, speaker, neighbour_terms FROM memory_units WHERE rowid = ANY($1::bigint[])', [
            [...followers.map((row) => row.previous_raw!), ...followers.map((row) => row.rowid)],
          ])
        ).rows,
      )
      .map((row) => [row.rowid, row]),
  );
  // In sequence order: a follower's new words are known before a later one that follows it reads them.
  const links = followers.map((row) => {
    const link = rawLink(turns.get(row.previous_raw!));
    const turn = turns.get(row.rowid);
    if (turn) turn.neighbour_terms = link.neighbour_terms;
    return link;
  });
  await client.query(
    `UPDATE memory_units AS unit SET previous_raw = link.previous_raw, neighbour_terms = link.neighbour_terms
       FROM unnest($1::bigint[], $2::bigint[], $3::text[]) AS link(rowid, previous_raw, neighbour_terms)
      WHERE unit.rowid = link.rowid`,
    [followers.map((row) => row.rowid), links.map((link) => link.previous_raw), links.map((link) => link.neighbour_terms)],
  );
}
