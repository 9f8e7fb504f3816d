import type { Db } from '../store/index.js';
import { ListChains } from './list-chains.js';
import { encodeTurnBodies } from './payload-codec.js';
import { loadRedactionRules, redactTurnForStorage } from './redact-turn.js';
import { SegmentTable } from './segment-table.js';
import { learnsFrom, mainTurnIncrement, payloadSideColumns, sessionEndedEvent, turnRecordedEvent, turnRowValues } from './turn-rows.js';
import type { ConversationListener, FinishedTurn, SessionEndReason, SessionRow } from './types.js';
import type { TurnRecordSink } from '../store/ports.js';

/** Turns are written in batches: one commit for the turns of BATCH_WINDOW_MS, not one per request. */
export const BATCH_WINDOW_MS = 20;
/** At most this many turns per transaction, so other writers are never held up long. */
export const MAX_CHUNK_TURNS = 64;

/**
 * The write side of the conversation record: a finished turn becomes its session's counters, a
 * turn row and its bodies, and the listeners (credit, learning triggers) run in the same
 * transaction, so a turn and the jobs it causes are committed together. It holds nothing but
 * statements, so it runs on the proxy's thread or on the turn writer's own (writer-thread.ts).
 */
export class TurnWriter implements TurnRecordSink {
  private readonly statements;
  private readonly segments: SegmentTable;
  /** The message lists each session stored last, so a turn stores only its new messages. */
  private readonly chains = new ListChains();
  private seenGeneration = 0;

  constructor(
    private readonly db: Db,
    private readonly listeners: readonly ConversationListener[],
    /** Bumped (slot 0) when stored parts were deleted whatever used them (forgetting): the remembered lists are then dropped. */
    private readonly segmentGeneration?: Int32Array,
    /** store.redact_turns: secrets in the turn are redacted before it is stored. */
    private readonly redactTurns = true,
  ) {
    if (redactTurns) loadRedactionRules();
    this.statements = {
      upsertSession: db.prepare<
        [string, string, string, string, string, number, number, number, number, number],
        { turn_count: number; main_turn_count: number; learning: number }
      >(`
        INSERT INTO sessions (id, identity_source, lineage, scope, client_format, started_at, last_turn_at, turn_count, main_turn_count, learning)
        VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?)
        ON CONFLICT(id) DO UPDATE SET
          last_turn_at = excluded.last_turn_at,
          scope = excluded.scope,
          turn_count = turn_count + 1,
          main_turn_count = main_turn_count + ?,
          ended_at = NULL,
          end_reason = NULL
        RETURNING turn_count, main_turn_count, learning`),
      insertTurn: db.prepare(`
        INSERT INTO turns (id, session_id, seq, turn_type, client_profile, side_request, client_format, upstream_name, upstream_format, model, stream, query,
          response_text, tool_calls, finish_reason, input_tokens, output_tokens, status, outcome, error, attempts, started_at, first_byte_ms, duration_ms, response_id)
        VALUES (@id, @session_id, @seq, @turn_type, @client_profile, @side_request, @client_format, @upstream_name, @upstream_format, @model, @stream, @query,
          @response_text, @tool_calls, @finish_reason, @input_tokens, @output_tokens, @status, @outcome, @error, @attempts, @started_at, @first_byte_ms, @duration_ms,
          @response_id)`),
      insertPayload: db.prepare(
        'INSERT INTO turn_payloads (turn_id, received, injected, forwarded, received_headers, stripped_keys) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      endSession: db.prepare<[number, string, string], SessionRow>(
        'UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL RETURNING *',
      ),
      openInLineage: db.prepare<[string, string], { id: string }>('SELECT id FROM sessions WHERE lineage = ? AND id != ? AND ended_at IS NULL'),
      idleSessions: db.prepare<[number], { id: string }>('SELECT id FROM sessions WHERE ended_at IS NULL AND last_turn_at < ?'),
    };
    this.segments = new SegmentTable(db);
  }

  /**
   * Writes turns in one transaction. One bad turn must not take the others with it: on failure
   * they are retried one by one. Returns each turn's error (undefined when written).
   */
  write(turns: readonly FinishedTurn[]): unknown[] {
    if (turns.length === 0) return [];
    // Before the transaction: the scan must not hold the write lock.
    if (this.redactTurns) turns = turns.map(redactTurnForStorage);
    this.checkSegmentGeneration();
    try {
      this.db
        .transaction(() => {
          for (const turn of turns) this.writeTurn(turn);
        })
        .immediate();
      return turns.map(() => undefined);
    } catch (error) {
      if (turns.length === 1) return [error];
      return turns.map((turn) => {
        try {
          this.db.transaction(() => this.writeTurn(turn)).immediate();
          return undefined;
        } catch (single) {
          return single;
        }
      });
    }
  }

  /** Stored parts were deleted whatever used them (forgetting): lists are not extended from what may hold them. */
  forgetWrittenSegments(): void {
    this.chains.clear();
  }

  /** Ends a session once (later calls do nothing) and tells learning. Returns whether it ended now. */
  endSession(sessionId: string, reason: SessionEndReason, now = Date.now()): boolean {
    return this.db
      .transaction(() => {
        const row = this.statements.endSession.get(now, reason, sessionId);
        if (!row) return false;
        const event = sessionEndedEvent(row, reason);
        if (event) for (const listener of this.listeners) listener.sessionEnded?.(event);
        return true;
      })
      .immediate();
  }

  /** An agent started a new conversation: the other open sessions of the same lineage are over. */
  private endOtherSessionsInLineage(lineage: string, currentSessionId: string): string[] {
    const ended: string[] = [];
    for (const { id } of this.statements.openInLineage.all(lineage, currentSessionId)) {
      if (this.endSession(id, 'reset')) ended.push(id);
    }
    return ended;
  }

  /** Ends every open session idle since before `cutoff`. */
  endIdleSessions(cutoff: number): string[] {
    const ended: string[] = [];
    for (const { id } of this.statements.idleSessions.all(cutoff)) {
      if (this.endSession(id, 'idle')) ended.push(id);
    }
    return ended;
  }

  private checkSegmentGeneration(): void {
    if (!this.segmentGeneration) return;
    const generation = Atomics.load(this.segmentGeneration, 0);
    if (generation === this.seenGeneration) return;
    this.seenGeneration = generation;
    this.chains.clear();
  }

  private writeTurn(turn: FinishedTurn): void {
    if (turn.startsNewConversation) this.endOtherSessionsInLineage(turn.lineage, turn.sessionId);
    const isMain = mainTurnIncrement(turn);
    const counts = this.statements.upsertSession.get(
      turn.sessionId,
      turn.identitySource,
      turn.lineage,
      turn.scope,
      turn.clientFormat,
      turn.startedAt,
      Date.now(),
      isMain,
      turn.learning ? 1 : 0,
      isMain,
    )!;
    this.statements.insertTurn.run(turnRowValues(turn, counts.turn_count));
    const { received, forwarded } = encodeTurnBodies(turn.payload, this.segments, this.chains.of(turn.sessionId));
    const side = payloadSideColumns(turn);
    this.statements.insertPayload.run(turn.id, received, side.injected, forwarded, side.received_headers, side.stripped_keys);
    if (learnsFrom(turn, counts)) {
      const event = turnRecordedEvent(turn, counts);
      for (const listener of this.listeners) listener.turnRecorded?.(event);
    }
    if (turn.endsSession) this.endSession(turn.sessionId, 'done_header');
  }
}
