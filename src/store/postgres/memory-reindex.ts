import type pg from 'pg';
import { z } from 'zod';
import type { TeamJobHandler } from '../../learning/team-job.js';
import { indexWordsVersion } from '../../memory/keyword-index.js';
import { REINDEX_JOB } from '../../memory/service.js';
import type { PgJobQueue } from './job-queue.js';
import { reindexWithKeys } from './memory-key-jobs.js';
import type { PgMemorySearch } from './memory-search.js';
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
      await reindexWithKeys(client, search, ids);
      if (batch.length > REINDEX_BATCH) {
        const round = payloadSchema.parse(payload).round + 1;
        await queue.enqueue(REINDEX_JOB, { round }, { dedupeKey: round % 2 === 0 ? REINDEX_JOB : `${REINDEX_JOB}:more` }, client);
      }
      context.logger.info({ units: ids.length, more: batch.length > REINDEX_BATCH }, 'memory index entries rewritten with the bundled glossary and thesaurus');
    },
  };
}
