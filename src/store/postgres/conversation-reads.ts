import type pg from 'pg';
import { z } from 'zod';
import { nodeChildren } from '../../conversation/list-chains.js';
import { decodeDocument, documentReferences } from '../../conversation/payload-codec.js';
import type { SegmentSource } from '../../conversation/segment-table.js';
import { turnDetail } from '../../conversation/turn-rows.js';
import type { SessionEndReason, SessionRow, TurnDetail, TurnRow } from '../../conversation/types.js';
import { parseSessionRow, parseTurnRow, payloadRowSchema, type PayloadRow } from './conversation-rows.js';
import { fromPostgresText, toPostgresText } from './text.js';
import type { ConversationReadStore } from '../ports.js';

/** What ends a session and tells learning (PgTurnSink). */
export interface SessionEnder {
  endSession(id: string, reason: SessionEndReason, now?: number): Promise<boolean>;
}

/** A body whose parts were not all loaded after this many reads is decoded with what is missing marked (it never should be). */
const MAX_PART_READS = 16;

/**
 * The read side of the conversation record in the team store, with conversation/store.ts's
 * shapes: sessions, turn summaries, and turns with their bodies decoded from the stored
 * documents and parts (payload-codec.ts).
 */
export class PgConversationReads implements ConversationReadStore {
  constructor(
    private readonly pool: pg.Pool,
    /** Ends sessions for endSession: the node's PgTurnSink, whose listeners tell learning. */
    private readonly sessions?: SessionEnder,
  ) {}

  /**
   * Ends a session once (later calls, from any node, do nothing) and tells learning, through the
   * turn sink given at construction. Without one it refuses rather than end the session unheard:
   * the session's learning jobs (evolve, extract) would never be queued.
   */
  endSession(id: string, reason: SessionEndReason, now = Date.now()): Promise<boolean> {
    if (!this.sessions)
      return Promise.reject(new Error('PgConversationReads was built without a turn sink: pass the PgTurnSink so that ending a session tells learning'));
    return this.sessions.endSession(id, reason, now);
  }

  async getSession(id: string): Promise<SessionRow | undefined> {
    const result = await this.pool.query('SELECT * FROM sessions WHERE id = $1', [toPostgresText(id)]);
    return result.rows[0] === undefined ? undefined : parseSessionRow(result.rows[0]);
  }

  /** The sessions with the most recent last turn first (ConversationStore.listSessions: `metaclaw sessions list`). */
  async listSessions(limit: number): Promise<SessionRow[]> {
    const result = await this.pool.query('SELECT * FROM sessions ORDER BY last_turn_at DESC LIMIT $1', [limit]);
    return result.rows.map(parseSessionRow);
  }

  /** A turn's summary row, without its bodies. */
  async getTurnSummary(id: string): Promise<TurnRow | undefined> {
    const result = await this.pool.query('SELECT * FROM turns WHERE id = $1', [toPostgresText(id)]);
    return result.rows[0] === undefined ? undefined : parseTurnRow(result.rows[0]);
  }

  /** The model the agent last used in a session (ConversationStore.lastModelOf: learning calls default to it). */
  async lastModelOf(sessionId: string): Promise<string | undefined> {
    const result = await this.pool.query('SELECT model FROM turns WHERE session_id = $1 AND model IS NOT NULL ORDER BY seq DESC LIMIT 1', [
      toPostgresText(sessionId),
    ]);
    const model = z.array(z.object({ model: z.string() })).parse(result.rows)[0]?.model;
    return model === undefined ? undefined : fromPostgresText(model);
  }

  /** The model the team's agents last used (ConversationStore.latestModel: learning calls that belong to no session default to it). */
  async latestModel(): Promise<string | undefined> {
    const result = await this.pool.query("SELECT model FROM turns WHERE turn_type = 'main' AND model IS NOT NULL ORDER BY started_at DESC LIMIT 1");
    const model = z.array(z.object({ model: z.string() })).parse(result.rows)[0]?.model;
    return model === undefined ? undefined : fromPostgresText(model);
  }

  /** A session's turn summaries, in order. */
  async turnsOfSession(sessionId: string): Promise<TurnRow[]> {
    const result = await this.pool.query('SELECT * FROM turns WHERE session_id = $1 ORDER BY seq', [toPostgresText(sessionId)]);
    return result.rows.map(parseTurnRow);
  }

  /** The turn that answered a Responses API request with this response id. */
  async turnOfResponse(responseId: string): Promise<TurnRow | undefined> {
    const result = await this.pool.query('SELECT * FROM turns WHERE response_id = $1 LIMIT 1', [toPostgresText(responseId)]);
    return result.rows[0] === undefined ? undefined : parseTurnRow(result.rows[0]);
  }

  async getTurn(id: string): Promise<TurnDetail | undefined> {
    const row = await this.getTurnSummary(id);
    if (!row) return undefined;
    const payload = await this.payload(id);
    const documents = [payload?.received ?? null, payload?.forwarded ?? null];
    const { received, forwarded } = await decodeWithParts(this.pool, documents, (source) => {
      const receivedBody = payload?.received ? decodeDocument(payload.received, source) : null;
      return { received: receivedBody, forwarded: payload?.forwarded ? decodeDocument(payload.forwarded, source, receivedBody) : null };
    });
    return turnDetail(row, payload, { received, forwarded });
  }

  /** The request body a turn was received with, parsed (learning workers read conversations from it). */
  async receivedBody(turnId: string): Promise<unknown> {
    const stored = (await this.payload(turnId))?.received;
    if (!stored) return null;
    return decodeWithParts(this.pool, [stored], (source) => decodeDocument(stored, source));
  }

  async counts(): Promise<{ sessions: number; openSessions: number; turns: number }> {
    const result = await this.pool.query(`
      SELECT (SELECT count(*) FROM sessions) AS sessions,
             (SELECT count(*) FROM sessions WHERE ended_at IS NULL) AS open_sessions,
             (SELECT count(*) FROM turns) AS turns`);
    const row = countsRow.parse(result.rows[0]);
    return { sessions: row.sessions, openSessions: row.open_sessions, turns: row.turns };
  }

  private async payload(turnId: string): Promise<PayloadRow | undefined> {
    const result = await this.pool.query('SELECT * FROM turn_payloads WHERE turn_id = $1', [toPostgresText(turnId)]);
    return result.rows[0] === undefined ? undefined : payloadRowSchema.parse(result.rows[0]);
  }
}

const countsRow = z.object({ sessions: z.coerce.number(), open_sessions: z.coerce.number(), turns: z.coerce.number() });
const partRow = z.object({ hash: z.string(), json: z.string() });

/**
 * Decodes stored documents, reading their parts first: a message list is a chain of nodes, read in
 * one recursive query, then the nodes' items and the other parts in one more. The decoder reads
 * parts synchronously, so should it still ask for one not read (it should not), that part is read
 * and the decoding runs again.
 */
async function decodeWithParts<T>(db: Pick<pg.Pool, 'query'>, documents: ReadonlyArray<string | null>, decode: (source: SegmentSource) => T): Promise<T> {
  const source = new LoadedParts();
  const parts: string[] = [];
  const lists: string[] = [];
  for (const document of documents) {
    const references = documentReferences(document);
    parts.push(...references.parts);
    lists.push(...references.lists);
  }
  if (lists.length > 0) {
    const nodes = await db.query(
      `WITH RECURSIVE chain(hash, json) AS (
         SELECT hash, json FROM payload_segments WHERE hash = ANY($1::text[])
         UNION
         SELECT s.hash, s.json FROM chain c JOIN payload_segments s ON s.hash = (c.json::jsonb ->> 'p')
       ) SELECT hash, json FROM chain`,
      [[...new Set(lists)]],
    );
    for (const node of z.array(partRow).parse(nodes.rows)) {
      source.add(node.hash, node.json);
      parts.push(...nodeChildren(node.json).items);
    }
  }
  await source.load(db, parts);
  for (let reads = 0; ; reads++) {
    const result = decode(source);
    if (source.misses.size === 0 || reads >= MAX_PART_READS) return result;
    await source.load(db, [...source.misses]);
  }
}

/** Parts read so far (null: not stored); what the decoder asked for beyond them is noted. */
class LoadedParts implements SegmentSource {
  private readonly parts = new Map<string, string | null>();
  readonly misses = new Set<string>();

  get(hash: string): string | undefined {
    const json = this.parts.get(hash);
    if (json === undefined) this.misses.add(hash);
    return json ?? undefined;
  }

  add(hash: string, json: string | null): void {
    this.parts.set(hash, json);
  }

  async load(db: Pick<pg.Pool, 'query'>, hashes: readonly string[]): Promise<void> {
    this.misses.clear();
    const wanted = [...new Set(hashes)].filter((hash) => !this.parts.has(hash));
    if (wanted.length === 0) return;
    const result = await db.query('SELECT hash, json FROM payload_segments WHERE hash = ANY($1::text[])', [wanted]);
    for (const hash of wanted) this.parts.set(hash, null);
    for (const row of z.array(partRow).parse(result.rows)) this.parts.set(row.hash, row.json);
  }
}
