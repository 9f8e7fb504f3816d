import type pg from 'pg';
import { z } from 'zod';
import type { TeamJobHandler } from '../../learning/team-job.js';
import { CONSOLIDATION_CANDIDATES, DAY, nearDuplicates, STALE_DAYS, type HousekeepingReport } from '../../memory/housekeeping.js';
import { HOUSEKEEPING_JOB, type MemorySettings } from '../../memory/service.js';
import type { PgJobQueue } from './job-queue.js';
import type { PgMemorySearch } from './memory-search.js';
import { lockScope } from './memory-workspace.js';
import { relinkAfterDeleting } from './raw-links.js';
import { fromPostgresText } from './text.js';
import { DB_CLOCK_MS } from './transaction.js';

type HousekeepingSettings = Pick<MemorySettings, 'retentionDays' | 'maxUnitsPerScope' | 'autoConsolidate'>;

const candidateRows = z.array(z.object({ id: z.string(), type: z.string(), core: z.coerce.number(), importance: z.coerce.number(), terms: z.string() }));
const rowids = z.array(z.object({ rowid: z.coerce.number() }));

/**
 * memory.housekeeping on the team store: what `housekeep` (memory/housekeeping.ts) does to a
 * personal install — near-duplicates consolidated and stale episodes decayed (memory.auto_consolidate),
 * raw turns and superseded units past retention deleted, every scope held under its cap — in SQL,
 * with the same near-duplicate rule (`nearDuplicates`) and the database's clock. All of it is the
 * job's effect, under every scope's lock (taken in one order), so it is written once per job key:
 * nodes queue one job a day under the day's key (`scheduleTeamHousekeeping`), and a second node's
 * job of the same day completes as a duplicate without touching anything.
 */
export function pgHousekeepingHandler(pool: pg.Pool, search: PgMemorySearch, settings: HousekeepingSettings): TeamJobHandler {
  return {
    kind: HOUSEKEEPING_JOB,
    usesLlm: false,
    run: async (_payload, context) => async (client) => {
      const report = await housekeepTeam(client, search, settings);
      context.logger.info({ report }, 'memory housekeeping done');
    },
  };
}

async function housekeepTeam(client: pg.PoolClient, search: PgMemorySearch, settings: HousekeepingSettings): Promise<HousekeepingReport> {
  const report: HousekeepingReport = { consolidated: 0, decayed: 0, deleted: 0, capped: 0 };
  const now = Number(z.object({ now: z.coerce.number() }).parse((await client.query(`SELECT ${DB_CLOCK_MS} AS now`)).rows[0]).now);
  const scopes = (await client.query<{ scope: string }>('SELECT DISTINCT scope FROM memory_units ORDER BY scope')).rows.map((row) => row.scope);
  for (const scope of scopes) await lockScope(client, fromPostgresText(scope));
  if (settings.autoConsolidate) {
    for (const scope of scopes) {
      const candidates = candidateRows
        .parse(
          (
            await client.query(
              "SELECT id, type, core, importance, terms FROM memory_units WHERE scope = $1 AND status = 'active' AND origin <> 'raw_turn' ORDER BY observed_at DESC LIMIT $2",
              [scope, CONSOLIDATION_CANDIDATES],
            )
          ).rows,
        )
        .map((row) => ({ unit: { id: row.id, type: row.type, core: row.core === 1, importance: row.importance }, terms: new Set(row.terms.split(' ')) }));
      for (const { loser, winner } of nearDuplicates(candidates)) {
        const superseded = await client.query(
          "UPDATE memory_units SET status = 'superseded', superseded_by = $2, updated_at = $3 WHERE id = $1 AND status = 'active' RETURNING rowid",
          [loser, winner, now],
        );
        for (const { rowid } of rowids.parse(superseded.rows)) {
          await client.query('UPDATE memory_search_docs SET active = false WHERE seq = $1', [rowid]);
          report.consolidated++;
        }
      }
    }
    const decayed = await client.query(
      `UPDATE memory_units SET importance = GREATEST(0.05, importance * 0.9), updated_at = $1
       WHERE type = 'episodic' AND status = 'active' AND pinned = 0 AND COALESCE(last_accessed_at, observed_at) < $2`,
      [now, now - STALE_DAYS * DAY],
    );
    report.decayed = decayed.rowCount ?? 0;
  }
  if (settings.retentionDays > 0) {
    const cutoff = now - settings.retentionDays * DAY;
    const expired = await client.query(
      "SELECT rowid FROM memory_units WHERE pinned = 0 AND ((origin = 'raw_turn' AND observed_at < $1) OR (status = 'superseded' AND updated_at < $1))",
      [cutoff],
    );
    report.deleted = await deleteUnits(
      client,
      search,
      rowids.parse(expired.rows).map((row) => row.rowid),
    );
  }
  const over = await client.query<{ scope: string; count: string }>(
    "SELECT scope, count(*) AS count FROM memory_units WHERE status = 'active' GROUP BY scope HAVING count(*) > $1",
    [settings.maxUnitsPerScope],
  );
  const excess: number[] = [];
  for (const { scope, count } of over.rows) {
    const least = await client.query(
      `SELECT rowid FROM memory_units WHERE scope = $1 AND status = 'active' AND pinned = 0 AND core = 0 AND type = 'episodic'
       ORDER BY importance ASC, observed_at ASC LIMIT $2`,
      [scope, Number(count) - Math.floor(settings.maxUnitsPerScope * 0.95)],
    );
    excess.push(...rowids.parse(least.rows).map((row) => row.rowid));
  }
  report.capped = await deleteUnits(client, search, excess);
  report.deleted += report.capped;
  return report;
}

/**
 * Deletes units with their index entries (vectors go with them); links to them are cleared and the
 * raw turns after them linked again (raw-links.ts), as SQLite's `deleteMany` does.
 */
async function deleteUnits(client: pg.PoolClient, search: PgMemorySearch, sequences: readonly number[]): Promise<number> {
  if (sequences.length === 0) return 0;
  const deleted = await client.query('DELETE FROM memory_units WHERE rowid = ANY($1::bigint[]) RETURNING rowid, id, previous_raw', [sequences]);
  const gone = z.array(z.object({ rowid: z.coerce.number(), id: z.string(), previous_raw: z.coerce.number().nullable() })).parse(deleted.rows);
  await search.remove(
    gone.map((row) => row.rowid),
    client,
  );
  await client.query('UPDATE memory_units SET superseded_by = NULL WHERE superseded_by = ANY($1::text[])', [gone.map((row) => row.id)]);
  await relinkAfterDeleting(client, search, gone);
  return gone.length;
}

/**
 * Queues today's housekeeping (today by the database's clock, so nodes agree on the day): one job
 * a day for the whole team whichever nodes ask, its effect keyed by the day. Every node calls
 * this at start and then hourly; a day already done is not queued again.
 */
export async function scheduleTeamHousekeeping(pool: pg.Pool, queue: PgJobQueue): Promise<number | undefined> {
  const day = z.object({ day: z.string() }).parse((await pool.query("SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day")).rows[0]).day;
  const key = `${HOUSEKEEPING_JOB}:${day}`;
  const done = await pool.query('SELECT 1 FROM job_effects WHERE idempotency_key = $1', [key]);
  if ((done.rowCount ?? 0) > 0) return undefined;
  return queue.enqueue(HOUSEKEEPING_JOB, { day }, { dedupeKey: HOUSEKEEPING_JOB, idempotencyKey: key });
}
