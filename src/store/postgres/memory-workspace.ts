import type pg from 'pg';
import { z } from 'zod';
import type { UpstreamTarget } from '../../config/index.js';
import type { EnqueueOptions } from '../../learning/job-model.js';
import { LearningError } from '../../learning/runner.js';
import type { TeamJobEffect } from '../../learning/team-job.js';
import type { Logger } from '../../logging/index.js';
import { indexTokens } from '../../memory/keyword-index.js';
import { inSlices } from '../../shared/event-loop.js';
import { contentHash } from '../../memory/search-keys.js';
import { withSearchKeyTerms } from '../../memory/store.js';
import {
  languagesKey,
  MemoryService,
  SEARCH_KEYS_JOB,
  watermarkKey,
  type MemoryConversation,
  type MemorySettings,
  type RelatedRecall,
} from '../../memory/service.js';
import type { UnitRow } from '../../memory/store.js';
import type { CredentialMemory } from '../../upstream/index.js';
import { openDatabase, type Db } from '../database.js';
import type { PgJobQueue } from './job-queue.js';
import type { PgMemoryVectors } from './memory-vectors.js';
import type { IndexEntry, PgMemorySearch } from './memory-search.js';
import { sqliteRowOf } from './memory-units.js';
import { searchKeysOf } from './memory-key-jobs.js';
import { toPostgresText } from './text.js';
import { DB_CLOCK_MS, setState } from './transaction.js';

/**
 * Where a team node runs a memory job: a private in-memory SQLite database, seeded from the team
 * store with every row the job can read, in which the personal install's MemoryService runs the
 * job unchanged. What the job wrote there is then the difference between the workspace and its
 * seed, which is written to PostgreSQL in the transaction that completes the job. So the team
 * store learns exactly as a personal install does, from one copy of the logic.
 *
 * The rows an extraction of a scope and session reads (memory/service.ts: extract, applyCandidates,
 * addStandingInstruction, storeSummary): the session's raw turns; the scope's learned units that
 * are active; its standing instructions of any status (a replaced rule is never brought back); the
 * session's working summaries of any status; and the units it recalls (from the whole team store,
 * see `RelatedRecall`, added as they are recalled). State: the session's extraction watermark and
 * the scope's languages. Recording a turn reads fewer (TURN_READ_SET).
 *
 * Two nodes may run jobs of one scope at once; every write takes a per-scope transaction lock
 * (`lockScope`). A turn is recorded whole under that lock (`write`). An extraction, whose LLM call
 * is not made under a lock, writes through `effect`: it re-reads the fingerprint (sequence,
 * updated_at, status) of everything the job read, and the state keys, and if anything was added,
 * removed or changed since the seed it throws StaleMemoryError and writes nothing; the job is
 * retried, and reads the new rows. Rows it changes are updated only while they still have the
 * seeded updated_at and status.
 */

/** The units a job of scope $1 and session $2 reads (see above). */
const READ_SET = `scope = $1 AND (
  (origin = 'raw_turn' AND source_session = $2)
  OR (origin <> 'raw_turn' AND (status = 'active' OR core = 1 OR (type = 'working_summary' AND source_session = $2))))`;

/**
 * The units recording the turn whose stored words are $3 reads (recordTurn, storeTurns,
 * captureRules, addStandingInstruction): the session's raw turns, standing instructions of any
 * status, the active rules stated for named things, and of the other learned units only those a
 * sentence of the turn repeats word for word (a stated rule is quoted verbatim, so a unit it
 * repeats is part of the turn's text). A scope's many facts are not read for each turn.
 */
const TURN_READ_SET = `scope = $1 AND (
  (origin = 'raw_turn' AND source_session = $2)
  OR core = 1
  OR (origin = 'rule' AND status = 'active')
  OR (origin <> 'raw_turn' AND status = 'active' AND content <> '' AND strpos($3, content) > 0))`;

/** Class of the per-scope advisory lock (its other key is the scope's hash): memory writes of one scope, one node at a time. */
const SCOPE_LOCK = 0x6d656d; // "mem"

/** Takes the transaction-long lock on a scope's memory writes (every memory job's effect takes it first). */
export async function lockScope(client: pg.PoolClient, scope: string): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [SCOPE_LOCK, toPostgresText(scope)]);
}

/** The team store changed what a job read while it ran: retried, it reads the new rows. */
export class StaleMemoryError extends LearningError {
  constructor(message: string) {
    super('memory_changed_meanwhile', message, true);
  }
}

export interface WorkspaceOptions {
  readonly pool: pg.Pool;
  readonly scope: string;
  readonly sessionId: string;
  readonly settings: MemorySettings;
  readonly logger: Logger;
  /** The conversation rows the job reads, already read from the team store. */
  readonly conversation: MemoryConversation;
  readonly mainUpstream?: UpstreamTarget;
  readonly credentials?: CredentialMemory;
  /** Recall over the whole team store (extraction shows the extractor what it recalls). */
  readonly recall?: RelatedRecall;
  /**
   * The stored words of the turn a record_turn job records: it then reads only the learned units
   * those words can repeat (TURN_READ_SET). Such a workspace is seeded under the scope's lock and
   * written with `write`, never checked by `effect`.
   */
  readonly turnText?: string;
  /** The job reads the session's turns up to a point: turns stored after the seed do not make it stale (see `checkUnchanged`). */
  readonly laterTurns?: boolean;
  /**
   * A person's edit over HTTP (memory-api.ts) rather than a job: the units it reads, as a condition
   * on memory_units with its parameters, instead of the job's read set; no state is seeded. Such a
   * workspace, like one for a turn, is seeded under the scope's lock and written with `write`.
   */
  readonly units?: { readonly where: string; readonly params: readonly unknown[] };
  /** The store's memory vectors, when in use: units the job adds are embedded by the job this queues with its writes. */
  readonly vectors?: PgMemoryVectors;
}

interface QueuedJob {
  kind: string;
  payload: unknown;
  options: EnqueueOptions | undefined;
}

/** What a job changed, computed from the workspace before it is closed (the effect holds no SQLite handle). */
interface Changes {
  added: UnitRow[];
  /** Index entries of the added units, by their workspace sequence. */
  entries: Map<number, IndexEntry>;
  updated: Array<{ before: UnitRow; after: UnitRow; entry: IndexEntry | undefined }>;
  state: Array<[string, string]>;
  jobs: QueuedJob[];
}

const fingerprintSchema = z.object({ rowid: z.coerce.number(), updated_at: z.coerce.number(), status: z.string(), session_turn: z.boolean() });
const stateRowSchema = z.object({ key: z.string(), value: z.string() });

export class MemoryWorkspace {
  readonly service: MemoryService;
  private readonly db: Db;
  /** Seeded units as they were seeded, by sequence (the team store's). */
  private readonly seeded = new Map<number, UnitRow>();
  /** Units seeded because recall found them, not by the read set: checked by sequence. */
  private readonly recalled = new Set<number>();
  /** State keys the job may read, with the team store's value (null: unset). */
  private readonly seedState = new Map<string, string | null>();
  private readonly queued: QueuedJob[] = [];
  private readonly insertUnit: (row: UnitRow) => void;

  private constructor(private readonly options: WorkspaceOptions) {
    this.db = openDatabase(':memory:');
    const { settings } = options;
    this.service = new MemoryService({
      db: this.db,
      logger: options.logger,
      // Recall comes from the team store; the workspace embeds nothing.
      settings: { ...settings, retrievalMode: 'keyword', embedding: { apiBase: '', apiKey: '', model: '' } },
      conversation: options.conversation,
      ...(options.mainUpstream ? { mainUpstream: options.mainUpstream } : {}),
      ...(options.credentials ? { credentials: options.credentials } : {}),
      ...(options.recall ? { recall: (request) => this.recallAndSeed(request) } : {}),
    });
    this.service.attachQueue((kind, payload, enqueueOptions) => {
      this.queued.push({ kind, payload, options: enqueueOptions });
      return 0;
    });
    const insert = (columns: readonly string[]) =>
      this.db.prepare(`INSERT INTO memory_units (${columns.join(', ')}) VALUES (${columns.map((column) => `@${column}`).join(', ')})`);
    let statement: ReturnType<typeof insert> | undefined;
    // No keyword index entries for seeded units: the job's recall reads the team store's index.
    this.insertUnit = (row) => void (statement ??= insert(Object.keys(row))).run(row);
  }

  /**
   * A workspace for a job of `scope` and `sessionId`, seeded from the team store; `db`: where the
   * seed is read (default the pool; a transaction holding the scope's lock, see `write`).
   */
  static async open(options: WorkspaceOptions, db: Pick<pg.Pool, 'query'> = options.pool): Promise<MemoryWorkspace> {
    const workspace = new MemoryWorkspace(options);
    try {
      const { scope, sessionId } = options;
      const { turnText } = options;
      if (options.units) {
        workspace.seed((await db.query(`SELECT * FROM memory_units WHERE ${options.units.where} ORDER BY rowid`, [...options.units.params])).rows);
        return workspace;
      }
      const units =
        turnText === undefined
          ? await db.query(`SELECT * FROM memory_units WHERE ${READ_SET} ORDER BY rowid`, [toPostgresText(scope), toPostgresText(sessionId)])
          : await db.query(`SELECT * FROM memory_units WHERE ${TURN_READ_SET} ORDER BY rowid`, [
              toPostgresText(scope),
              toPostgresText(sessionId),
              toPostgresText(turnText),
            ]);
      workspace.seed(units.rows);
      const keys = [watermarkKey(scope, sessionId), languagesKey(scope)];
      const values = await readState(db, keys);
      const state = workspace.db.prepare('INSERT INTO state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value');
      for (const key of keys) {
        const value = values.get(key);
        workspace.seedState.set(key, value ?? null);
        if (value !== undefined) state.run(key, value);
      }
      return workspace;
    } catch (error) {
      workspace.close();
      throw error;
    }
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  /**
   * What the job changed, and the effect that writes it to the team store; undefined when it
   * changed nothing. Call once the job has run, before `close`.
   */
  async effect(queue: PgJobQueue, search: PgMemorySearch): Promise<TeamJobEffect | undefined> {
    if (this.options.turnText !== undefined || this.options.units)
      throw new Error('a workspace seeded under the scope lock is written under the lock it was seeded with (write)');
    const changes = await this.changes();
    if (changes.added.length === 0 && changes.updated.length === 0 && changes.state.length === 0 && changes.jobs.length === 0) return undefined;
    return async (client) => {
      await lockScope(client, this.options.scope);
      await this.checkUnchanged(client);
      await writeChanges(client, changes, search, queue, this.options.vectors);
    };
  }

  /**
   * Writes what the job changed on `client`, now: for a workspace seeded on `client` by a
   * transaction that took the scope's lock first (`lockScope`), so nothing it read can have changed.
   * Returns the ids of the jobs it queued, in order (undefined: one of the same dedupe key was waiting).
   */
  async write(client: pg.PoolClient, queue: PgJobQueue, search: PgMemorySearch): Promise<Array<number | undefined>> {
    return writeChanges(client, await this.changes(), search, queue, this.options.vectors);
  }

  /** Rows as the team store returned them, into the workspace (as SQLite holds them). */
  private seed(rows: readonly unknown[]): void {
    this.db.transaction(() => {
      for (const raw of rows) {
        const row = sqliteRowOf(raw);
        if (this.seeded.has(row.rowid)) continue;
        this.insertUnit(row);
        this.seeded.set(row.rowid, row);
      }
    })();
  }

  /** The team store's recall; the units it found are added to the workspace, so the job can read and change them. */
  private async recallAndSeed(request: Parameters<RelatedRecall>[0]): Promise<Awaited<ReturnType<RelatedRecall>>> {
    const hits = await this.options.recall!(request);
    const missing = hits.map((hit) => hit.unit.sequence).filter((sequence) => !this.seeded.has(sequence));
    if (missing.length > 0) {
      const rows = await this.options.pool.query('SELECT * FROM memory_units WHERE rowid = ANY($1::bigint[]) ORDER BY rowid', [missing]);
      this.seed(rows.rows);
      for (const sequence of missing) this.recalled.add(sequence);
    }
    return hits;
  }

  /** What the job changed; each added unit's index entry is made again, a slice of the event loop at a time (an ingest adds thousands). */
  private async changes(): Promise<Changes> {
    const rows = this.db.prepare<[], UnitRow>('SELECT * FROM memory_units ORDER BY rowid').all();
    const store = this.service.store;
    const entryOf = (row: UnitRow): IndexEntry => ({ ...store.indexEntry(row.id)!, id: row.id, active: row.status === 'active' });
    const changes: Changes = { added: [], entries: new Map(), updated: [], state: [], jobs: [...this.queued] };
    await inSlices(rows.length, (index) => {
      const row = rows[index]!;
      const before = this.seeded.get(row.rowid);
      if (!before) {
        changes.added.push(row);
        changes.entries.set(row.rowid, entryOf(row));
      } else if (changedColumns(before, row).length > 0) {
        // A changed text or key changes the index entry; a changed status only the entry's flag.
        const reindex = before.terms !== row.terms || before.search_keys !== row.search_keys || before.neighbour_terms !== row.neighbour_terms;
        changes.updated.push({ before, after: row, entry: reindex ? entryOf(row) : undefined });
      }
    });
    const kept = new Set(rows.map((row) => row.rowid));
    const gone = [...this.seeded.keys()].filter((rowid) => !kept.has(rowid));
    if (gone.length > 0) throw new Error(`a memory job deleted units (${gone.join(', ')}): not supported on the team store`);
    const state = this.db.prepare<[string], { value: string }>('SELECT value FROM state WHERE key = ?');
    for (const [key, before] of this.seedState) {
      const value = state.get(key)?.value;
      if (value !== undefined && value !== before) changes.state.push([key, value]);
    }
    return changes;
  }

  /**
   * Throws StaleMemoryError unless every row and state key the job read is as seeded. With
   * `laterTurns`, raw turns of the session stored since the seed are no change: the job read the
   * session's turns up to a point (extraction: its watermark is the last turn it read), and
   * those stored after it are as they would be had the job run before them.
   */
  private async checkUnchanged(client: pg.PoolClient): Promise<void> {
    const { scope, sessionId, laterTurns = false } = this.options;
    const current = await client.query(
      `SELECT rowid, updated_at, status, (origin = 'raw_turn' AND source_session = $2) AS session_turn FROM memory_units
       WHERE (${READ_SET}) OR rowid = ANY($3::bigint[])`,
      [toPostgresText(scope), toPostgresText(sessionId), [...this.recalled]],
    );
    let seen = 0;
    for (const raw of current.rows) {
      const row = fingerprintSchema.parse(raw);
      const seeded = this.seeded.get(row.rowid);
      if (!seeded && laterTurns && row.session_turn) continue;
      if (!seeded) throw new StaleMemoryError(`memory of scope ${scope} gained a unit while the job ran (sequence ${row.rowid})`);
      if (seeded.updated_at !== row.updated_at || seeded.status !== row.status)
        throw new StaleMemoryError(`memory unit ${seeded.id} changed while the job ran`);
      seen++;
    }
    if (seen !== this.seeded.size) throw new StaleMemoryError(`memory of scope ${scope} lost units while the job ran`);
    const state = await readState(client, [...this.seedState.keys()]);
    for (const [key, value] of this.seedState)
      if ((state.get(key) ?? null) !== value) throw new StaleMemoryError(`memory state ${key.split('\u0000')[0]} changed while the job ran`);
  }
}

/** Columns whose values differ (access counts are the request path's, never a job's). */
function changedColumns(before: UnitRow, after: UnitRow): Array<keyof UnitRow> {
  return (Object.keys(after) as Array<keyof UnitRow>).filter((column) => column !== 'rowid' && before[column] !== after[column]);
}

async function readState(db: Pick<pg.Pool, 'query'>, keys: readonly string[]): Promise<Map<string, string>> {
  const result = await db.query('SELECT key, value FROM state WHERE key = ANY($1::text[])', [keys.map(toPostgresText)]);
  const byStored = new Map(keys.map((key) => [toPostgresText(key), key]));
  return new Map(
    result.rows
      .map((raw) => stateRowSchema.parse(raw))
      .flatMap((row) => {
        const key = byStored.get(row.key);
        return key === undefined ? [] : [[key, row.value] as [string, string]];
      }),
  );
}

const postgresValue = (value: unknown): unknown => (typeof value === 'string' ? toPostgresText(value) : value);

/** The job's writes, inside the completing transaction (the scope is locked and unchanged since the seed). */
async function writeChanges(
  client: pg.PoolClient,
  changes: Changes,
  search: PgMemorySearch,
  queue: PgJobQueue,
  vectors: PgMemoryVectors | undefined,
): Promise<Array<number | undefined>> {
  // Times are the database's: nodes whose clocks disagree write units that agree (retention and decay read them).
  const now = Number(z.object({ now: z.coerce.number() }).parse((await client.query(`SELECT ${DB_CLOCK_MS} AS now`)).rows[0]).now);
  for (const row of changes.added) Object.assign(row, { created_at: now, updated_at: now });
  for (const { before, after } of changes.updated) if (after.updated_at !== before.updated_at) after.updated_at = now;
  await addStoredKeys(client, changes);
  // Added units get the team store's sequences; links between them (a raw turn to the one before) follow.
  const sequences = new Map<number, number>();
  const sequenceOf = (rowid: number | null): number | null => (rowid === null ? null : (sequences.get(rowid) ?? rowid));
  for (const row of changes.added) {
    const columns = Object.keys(row).filter((column) => column !== 'rowid') as Array<keyof UnitRow>;
    const values = columns.map((column) => postgresValue(column === 'previous_raw' ? sequenceOf(row.previous_raw) : row[column]));
    const inserted = await client.query(
      `INSERT INTO memory_units (${columns.join(', ')}) VALUES (${columns.map((_, index) => `$${index + 1}`).join(', ')})
       ON CONFLICT (raw_key) DO NOTHING RETURNING rowid`,
      values,
    );
    // The session's raw turns were all seeded and the scope is locked: a raw turn stored meanwhile came from elsewhere.
    if (inserted.rows.length === 0) throw new StaleMemoryError(`raw turn ${row.raw_key?.split('\u0000')[2] ?? row.id} was stored meanwhile`);
    sequences.set(row.rowid, Number(z.object({ rowid: z.coerce.number() }).parse(inserted.rows[0]).rowid));
  }
  const entries: IndexEntry[] = [];
  for (const row of changes.added) {
    const entry = changes.entries.get(row.rowid)!;
    entries.push({ ...entry, sequence: sequenceOf(row.rowid)!, previous: sequenceOf(entry.previous ?? null) });
  }
  for (const { before, after, entry } of changes.updated) {
    const columns = changedColumns(before, after);
    const values = columns.map((column) => postgresValue(column === 'previous_raw' ? sequenceOf(after.previous_raw) : after[column]));
    const updated = await client.query(
      `UPDATE memory_units SET ${columns.map((column, index) => `${column} = $${index + 4}`).join(', ')} WHERE rowid = $1 AND updated_at = $2 AND status = $3`,
      [before.rowid, before.updated_at, before.status, ...values],
    );
    if (updated.rowCount !== 1) throw new StaleMemoryError(`memory unit ${before.id} changed while the job ran`);
    // An edited (or scrubbed) text is embedded again: the old vector would find it by what it no longer says.
    if (after.content !== before.content) await client.query('DELETE FROM memory_vectors WHERE rowid = $1', [before.rowid]);
    if (entry) entries.push({ ...entry, sequence: before.rowid, previous: sequenceOf(entry.previous ?? null) });
    else if (before.status !== after.status)
      await client.query('UPDATE memory_search_docs SET active = $2 WHERE seq = $1', [before.rowid, after.status === 'active']);
  }
  await search.index(entries, client);
  for (const [key, value] of changes.state) await setState(client, toPostgresText(key), toPostgresText(value));
  const jobs: Array<number | undefined> = [];
  for (const job of changes.jobs) jobs.push(await queue.enqueue(job.kind, job.payload, job.options, client));
  // As a personal install queues memory.embed after adding units (MemoryService's attachQueue).
  if (changes.added.length > 0 || changes.updated.some(({ before, after }) => after.content !== before.content)) await vectors?.queueEmbed(queue, client);
  // Learned text in other languages than the team writes gets search keys in them (the personal install queues this on every change).
  const learned = [...changes.added, ...changes.updated.filter((change) => change.entry).map((change) => change.after)];
  if (learned.some((row) => row.origin !== 'raw_turn' && row.status === 'active'))
    await queue.enqueue(SEARCH_KEYS_JOB, {}, { dedupeKey: SEARCH_KEYS_JOB, delayMs: 2_000, rerunIfRunning: true }, client);
  return jobs;
}

/**
 * The workspace indexed units without search keys (they live in the team store): a learned unit
 * whose text already has keys there (the same words in another scope) is indexed with them, as on SQLite.
 */
async function addStoredKeys(client: pg.PoolClient, changes: Changes): Promise<void> {
  const learned = [
    ...changes.added.map((row) => ({ row, entry: changes.entries.get(row.rowid) })),
    ...changes.updated.map((change) => ({ row: change.after, entry: change.entry })),
  ].filter((item): item is { row: UnitRow; entry: IndexEntry } => item.entry !== undefined && item.row.origin !== 'raw_turn');
  const keys = await searchKeysOf(
    client,
    learned.map(({ row }) => row.content),
  );
  for (const { row, entry } of learned) {
    const found = keys.get(contentHash(row.content));
    if (found) entry.tokens = indexTokens(row.scope, withSearchKeyTerms(row, found));
  }
}
