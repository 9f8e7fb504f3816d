import type pg from 'pg';
import { z } from 'zod';
import { ListChains, type ChainEnd } from '../../conversation/list-chains.js';
import { encodeTurnBodies } from '../../conversation/payload-codec.js';
import { loadRedactionRules, redactTurnForStorage } from '../../conversation/redact-turn.js';
import { learnsFrom, mainTurnIncrement, payloadSideColumns, sessionEndedEvent, turnRecordedEvent, turnRowValues } from '../../conversation/turn-rows.js';
import type { FinishedTurn, SessionEndReason } from '../../conversation/types.js';
import { isUnreachable } from './connect.js';
import { parseSessionRow } from './conversation-rows.js';
import type { PgConversationListener } from './recording.js';
import { SegmentRaceError, StagedSegments } from './segment-stage.js';
import { fromPostgresText, toPostgresText } from './text.js';
import { inTransaction } from './transaction.js';
import type { TurnRecordSink } from '../ports.js';

export interface PgTurnSinkOptions {
  /** Run in every recording transaction, in order (pgRecordingListeners); none: turns are recorded and nothing learns. */
  listeners?: readonly PgConversationListener[];
  /** store.redact_turns: secrets in a turn are redacted before it is stored (default true). */
  redactTurns?: boolean;
  /** Tries per transaction when it lost a race with another node (deadlock, a part changed, the same turn stored at once); default 5. */
  attempts?: number;
}

/** The columns of a turns row, in the order turnRowValues gives them. */
type TurnColumns = ReturnType<typeof turnRowValues>;

/**
 * The write side of the conversation record in the team store: what conversation/turn-writer.ts
 * writes to SQLite (the same session counters, turn rows, body documents and parts, and the
 * recording listeners in the same transaction), written to PostgreSQL by any number of nodes.
 *
 * - Turns of one session written by several nodes at once are counted one after another: the
 *   session row's upsert locks it until commit, so each turn reads the counter the last one left
 *   and seq stays unique.
 * - A turn whose id is stored already is skipped and reported written: after an outage the spool
 *   of turns is replayed, and some of them may have been committed before the database went away.
 * - A transaction that lost a race with another node (a deadlock, a body part created or deleted
 *   meanwhile, the same turn replayed by two nodes) is run again, a few times.
 */
export class PgTurnSink implements TurnRecordSink {
  /** The message lists each session stored last from this node, so a turn stores only its new messages. */
  private readonly chains = new ListChains();
  private readonly listeners: readonly PgConversationListener[];
  private readonly redactTurns: boolean;
  private readonly attempts: number;

  constructor(
    private readonly pool: pg.Pool,
    options: PgTurnSinkOptions = {},
  ) {
    this.listeners = options.listeners ?? [];
    this.redactTurns = options.redactTurns ?? true;
    this.attempts = options.attempts ?? 5;
    if (this.redactTurns) loadRedactionRules();
  }

  /**
   * Writes turns in one transaction. One bad turn must not take the others with it: on failure
   * they are written one by one (unless the store cannot be reached at all). Resolves with each
   * turn's error (undefined when written or stored already).
   */
  async write(turns: readonly FinishedTurn[]): Promise<unknown[]> {
    if (turns.length === 0) return [];
    if (this.redactTurns) turns = turns.map(redactTurnForStorage);
    try {
      await this.transaction(async (client, segments) => {
        for (const turn of turns) await this.writeTurn(client, segments, turn);
      });
      return turns.map(() => undefined);
    } catch (error) {
      // Unreachable, the store fails every turn alike: trying them one by one would only wait out a connect timeout per turn.
      if (turns.length === 1 || isUnreachable(error)) return turns.map(() => error);
      const errors: unknown[] = [];
      for (const turn of turns) {
        errors.push(
          await this.transaction((client, segments) => this.writeTurn(client, segments, turn)).then(
            () => undefined,
            (single: unknown) => single,
          ),
        );
      }
      return errors;
    }
  }

  /** Stored parts were deleted whatever used them (forgetting): lists are not extended from what may hold them. */
  forgetWrittenSegments(): void {
    this.chains.clear();
  }

  /** Ends a session once (later calls, from any node, do nothing) and tells learning. Resolves with whether it ended now. */
  endSession(sessionId: string, reason: SessionEndReason, now = Date.now()): Promise<boolean> {
    return this.transaction((client) => this.endSessionOn(client, sessionId, reason, now));
  }

  /** Ends every open session idle since before `cutoff`; the ids of those this call ended. */
  async endIdleSessions(cutoff: number): Promise<string[]> {
    const idle = await this.pool.query('SELECT id FROM sessions WHERE ended_at IS NULL AND last_turn_at < $1', [cutoff]);
    const ended: string[] = [];
    for (const { id } of z.array(idRow).parse(idle.rows)) {
      if (await this.endSession(id, 'idle')) ended.push(id);
    }
    return ended;
  }

  private async transaction<T>(work: (client: pg.PoolClient, segments: StagedSegments) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        // What the parts stage knows holds for its transaction only: a new one each try.
        return await inTransaction(this.pool, (client) => work(client, new StagedSegments(client)));
      } catch (error) {
        if (attempt >= this.attempts || !lostRace(error)) throw error;
        // A short random wait: two nodes that deadlocked do not meet again at once.
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt));
      }
    }
  }

  private async writeTurn(client: pg.PoolClient, segments: StagedSegments, turn: FinishedTurn): Promise<void> {
    const stored = await client.query('SELECT 1 FROM turns WHERE id = $1', [toPostgresText(turn.id)]);
    if (stored.rowCount !== 0) return;
    if (turn.startsNewConversation) await this.endOtherSessionsInLineage(client, turn.lineage, turn.sessionId);
    const isMain = mainTurnIncrement(turn);
    const upserted = await client.query(
      `INSERT INTO sessions (id, identity_source, lineage, scope, client_format, started_at, last_turn_at, turn_count, main_turn_count, learning)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, $9)
       ON CONFLICT (id) DO UPDATE SET
         last_turn_at = excluded.last_turn_at,
         scope = excluded.scope,
         turn_count = sessions.turn_count + 1,
         main_turn_count = sessions.main_turn_count + $8,
         ended_at = NULL,
         end_reason = NULL
       RETURNING turn_count, main_turn_count, learning`,
      texts([turn.sessionId, turn.identitySource, turn.lineage, turn.scope, turn.clientFormat, turn.startedAt, Date.now(), isMain, turn.learning ? 1 : 0]),
    );
    const counts = countsRow.parse(upserted.rows[0]);
    await insertTurn(client, turnRowValues(turn, counts.turn_count));
    const { received, forwarded } = await this.encodeBodies(segments, turn);
    const side = payloadSideColumns(turn);
    await client.query(
      'INSERT INTO turn_payloads (turn_id, received, injected, forwarded, received_headers, stripped_keys) VALUES ($1, $2, $3, $4, $5, $6)',
      texts([turn.id, received, side.injected, forwarded, side.received_headers, side.stripped_keys]),
    );
    if (learnsFrom(turn, counts)) {
      const event = turnRecordedEvent(turn, counts);
      for (const listener of this.listeners) await listener.turnRecorded?.(client, event);
    }
    if (turn.endsSession) await this.endSessionOn(client, turn.sessionId, 'done_header', Date.now());
  }

  /** The turn's bodies as documents (payload-codec.ts), their parts counted in this transaction. */
  private async encodeBodies(segments: StagedSegments, turn: FinishedTurn): Promise<{ received: string; forwarded: string | null }> {
    const remembered = this.chains.of(turn.sessionId);
    // Each pass works on a copy of the session's remembered lists: a pass that is thrown away must not leave its guesses in them.
    let chains: ChainEnd[][] = [];
    const bodies = await segments.encode((sink) => {
      chains = remembered.map((chain) => [...chain]);
      return encodeTurnBodies(turn.payload, sink, chains);
    });
    remembered.splice(0, remembered.length, ...chains);
    return bodies;
  }

  private async endSessionOn(client: pg.PoolClient, sessionId: string, reason: SessionEndReason, now: number): Promise<boolean> {
    const result = await client.query('UPDATE sessions SET ended_at = $1, end_reason = $2 WHERE id = $3 AND ended_at IS NULL RETURNING *', [
      now,
      reason,
      toPostgresText(sessionId),
    ]);
    if (result.rowCount === 0) return false;
    const event = sessionEndedEvent(parseSessionRow(result.rows[0]), reason);
    if (event) for (const listener of this.listeners) await listener.sessionEnded?.(client, event);
    return true;
  }

  /** An agent started a new conversation: the other open sessions of the same lineage are over. */
  private async endOtherSessionsInLineage(client: pg.PoolClient, lineage: string, currentSessionId: string): Promise<void> {
    const open = await client.query('SELECT id FROM sessions WHERE lineage = $1 AND id <> $2 AND ended_at IS NULL', texts([lineage, currentSessionId]));
    for (const { id } of z.array(idRow).parse(open.rows)) await this.endSessionOn(client, id, 'reset', Date.now());
  }
}

const idRow = z.object({ id: z.string().transform(fromPostgresText) });
const countsRow = z.object({ turn_count: z.coerce.number(), main_turn_count: z.coerce.number(), learning: z.coerce.number() });

async function insertTurn(client: pg.PoolClient, row: TurnColumns): Promise<void> {
  const columns = Object.keys(row);
  await client.query(`INSERT INTO turns (${columns.join(', ')}) VALUES (${columns.map((_, index) => `$${index + 1}`).join(', ')})`, texts(Object.values(row)));
}

/** Parameters with U+0000 held as the team store holds it (text.ts). */
function texts(values: readonly unknown[]): unknown[] {
  return values.map((value) => (typeof value === 'string' ? toPostgresText(value) : value));
}

/** SQLSTATEs of a transaction that lost to a concurrent one and may well succeed when run again. */
const RACE_CODES = new Set(['40P01', '40001']);

function lostRace(error: unknown): boolean {
  if (error instanceof SegmentRaceError) return true;
  const { code, constraint } = (error ?? {}) as { code?: unknown; constraint?: unknown };
  if (typeof code !== 'string') return false;
  // The same turn stored by another node since this one looked: the next try finds it and skips it.
  return RACE_CODES.has(code) || (code === '23505' && constraint === 'turns_pkey');
}
