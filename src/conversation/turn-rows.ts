import type { FinishedTurn, SessionEndedEvent, SessionEndReason, SessionRow, TurnDetail, TurnRecordedEvent, TurnRow } from './types.js';

/**
 * What a finished turn becomes in the turns table, the session row and the events learning hears:
 * one definition for every engine that records turns (turn-writer.ts on SQLite, the team store's
 * turn sink on PostgreSQL), so the two cannot drift apart.
 */

/** The turns row of a turn that became its session's `seq`-th. */
export function turnRowValues(turn: FinishedTurn, seq: number) {
  const response = turn.response;
  return {
    id: turn.id,
    session_id: turn.sessionId,
    seq,
    turn_type: turn.turnType,
    client_profile: turn.clientProfile,
    side_request: turn.sideRequest,
    client_format: turn.clientFormat,
    upstream_name: turn.upstreamName,
    upstream_format: turn.upstreamFormat,
    model: turn.model,
    stream: turn.stream ? 1 : 0,
    query: turn.query,
    response_text: response?.text ?? null,
    tool_calls: response && response.toolCalls.length > 0 ? JSON.stringify(response.toolCalls) : null,
    finish_reason: response?.finishReason ?? null,
    input_tokens: response?.usage?.inputTokens ?? null,
    output_tokens: response?.usage?.outputTokens ?? null,
    status: turn.status,
    outcome: turn.outcome,
    error: turn.error,
    attempts: turn.attempts,
    started_at: turn.startedAt,
    first_byte_ms: turn.firstByteMs,
    duration_ms: turn.durationMs,
    response_id: response?.id ?? null,
  };
}

/** The session counters after a turn was counted (what the session upsert returns). */
export interface SessionCounts {
  turn_count: number;
  main_turn_count: number;
  learning: number;
}

/** Whether a turn counts as a main turn (1) in its session's main_turn_count. */
export function mainTurnIncrement(turn: FinishedTurn): number {
  return turn.turnType === 'main' ? 1 : 0;
}

/** Learning hears of a turn only when both the turn and its session learn (a session started by a non-learning turn never does). */
export function learnsFrom(turn: FinishedTurn, counts: SessionCounts): boolean {
  return turn.learning && counts.learning === 1;
}

export function turnRecordedEvent(turn: FinishedTurn, counts: SessionCounts): TurnRecordedEvent {
  return {
    turnId: turn.id,
    sessionId: turn.sessionId,
    scope: turn.scope,
    query: turn.query,
    injected: turn.payload.injected,
    model: turn.model,
    seq: counts.turn_count,
    turnType: turn.turnType,
    outcome: turn.outcome,
    mainTurnCount: counts.main_turn_count,
    turnCount: counts.turn_count,
    ...(turn.policy ? { policy: turn.policy } : {}),
  };
}

/** The session-ended event of a session row just ended; undefined when the session does not learn. */
export function sessionEndedEvent(row: SessionRow, reason: SessionEndReason): SessionEndedEvent | undefined {
  if (row.learning !== 1) return undefined;
  return { sessionId: row.id, scope: row.scope, reason, turnCount: row.turn_count, mainTurnCount: row.main_turn_count };
}

/** turn_payloads' JSON columns besides the two encoded bodies. */
export function payloadSideColumns(turn: FinishedTurn): { injected: string | null; received_headers: string; stripped_keys: string } {
  return {
    injected: turn.payload.injected === null ? null : JSON.stringify(turn.payload.injected),
    received_headers: JSON.stringify(turn.payload.receivedHeaders),
    stripped_keys: JSON.stringify(turn.payload.strippedKeys),
  };
}

/** turn_payloads' side columns as stored (text), or null when the turn has no payload row. */
export interface StoredSideColumns {
  injected: string | null;
  received_headers: string | null;
  stripped_keys: string | null;
}

/** A turn with its bodies, from its row, its stored side columns and its decoded bodies. */
export function turnDetail(row: TurnRow, side: StoredSideColumns | undefined, bodies: { received: unknown; forwarded: unknown }): TurnDetail {
  return {
    ...row,
    received: bodies.received,
    injected: side?.injected ? parseJsonText(side.injected) : null,
    forwarded: bodies.forwarded,
    received_headers: side?.received_headers ? (parseJsonText(side.received_headers) as Record<string, string>) : {},
    stripped_keys: side?.stripped_keys ? (parseJsonText(side.stripped_keys) as string[]) : [],
  };
}

function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
