import type { Db } from '../store/index.js';
import { localDay } from '../shared/local-day.js';
import { decodeDocument, encodeDocument, type SegmentSink, type SegmentSource } from './payload-codec.js';
import type { ConversationListener, FinishedTurn, SessionEndReason, SessionRow, TurnDetail, TurnRow } from './types.js';

/** Turns are written in small batches: one commit per batch instead of one per request. */
const BATCH_WINDOW_MS = 20;
/**
 * At most this many turns per transaction in the background. A write blocks the event loop (about
 * 0.1 ms plus 30–40 µs a turn here), so a long batch would hold up every request arriving
 * meanwhile; short ones, with I/O handled between them, keep that wait around 0.4 ms.
 */
const CHUNK_TURNS = 8;
const MAX_CHUNK_TURNS = 64;

/**
 * Sessions and turn records. Finished turns are written together, from BATCH_WINDOW_MS after the
 * first of them, in transactions that also enqueue the learning jobs they trigger, so a job can
 * never be lost between the two. The client already has its answer by then.
 */
export class ConversationStore {
  private readonly listeners: ConversationListener[] = [];
  private readonly statements;
  private pending: Array<{ turn: FinishedTurn; resolve: () => void; reject: (error: unknown) => void }> = [];
  private flushTimer: NodeJS.Timeout | undefined;
  private nextChunk: NodeJS.Immediate | undefined;
  /** Segments already written today: the same system prompt is not rewritten every turn. */
  private readonly segmentsWritten = new Map<string, string>();
  private readonly segmentSink: SegmentSink;
  private readonly segmentSource: SegmentSource;

  constructor(private readonly db: Db) {
    this.statements = {
      upsertSession: db.prepare<[string, string, string, string, string, number, number, number, number, number], { turn_count: number; main_turn_count: number; learning: number }>(`
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
        INSERT INTO turns (id, session_id, seq, turn_type, client_format, upstream_name, upstream_format, model, stream, query,
          response_text, tool_calls, finish_reason, input_tokens, output_tokens, status, outcome, error, attempts, started_at, first_byte_ms, duration_ms)
        VALUES (@id, @session_id, @seq, @turn_type, @client_format, @upstream_name, @upstream_format, @model, @stream, @query,
          @response_text, @tool_calls, @finish_reason, @input_tokens, @output_tokens, @status, @outcome, @error, @attempts, @started_at, @first_byte_ms, @duration_ms)`),
      insertPayload: db.prepare('INSERT INTO turn_payloads (turn_id, received, injected, forwarded, received_headers, stripped_keys) VALUES (?, ?, ?, ?, ?, ?)'),
      putSegment: db.prepare<[string, string, number]>('INSERT INTO payload_segments (hash, json, last_used_at) VALUES (?, ?, ?) ON CONFLICT(hash) DO UPDATE SET last_used_at = excluded.last_used_at'),
      getSegment: db.prepare<[string], { json: string }>('SELECT json FROM payload_segments WHERE hash = ?'),
      pruneSegments: db.prepare<[number]>('DELETE FROM payload_segments WHERE last_used_at < ?'),
      endSession: db.prepare<[number, string, string], SessionRow>('UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL RETURNING *'),
      openInLineage: db.prepare<[string, string], { id: string }>('SELECT id FROM sessions WHERE lineage = ? AND id != ? AND ended_at IS NULL'),
      idleSessions: db.prepare<[number], { id: string }>('SELECT id FROM sessions WHERE ended_at IS NULL AND last_turn_at < ?'),
      session: db.prepare<[string], SessionRow>('SELECT * FROM sessions WHERE id = ?'),
      sessions: db.prepare<[number], SessionRow>('SELECT * FROM sessions ORDER BY last_turn_at DESC LIMIT ?'),
      turnsOfSession: db.prepare<[string], TurnRow>('SELECT * FROM turns WHERE session_id = ? ORDER BY seq'),
      turn: db.prepare<[string], TurnRow>('SELECT * FROM turns WHERE id = ?'),
      payload: db.prepare<[string], { received: string | null; injected: string | null; forwarded: string | null; received_headers: string | null; stripped_keys: string | null }>('SELECT * FROM turn_payloads WHERE turn_id = ?'),
      counts: db.prepare<[], { sessions: number; open_sessions: number; turns: number }>(`
        SELECT (SELECT COUNT(*) FROM sessions) AS sessions,
               (SELECT COUNT(*) FROM sessions WHERE ended_at IS NULL) AS open_sessions,
               (SELECT COUNT(*) FROM turns) AS turns`),
      prunePayloads: db.prepare<[number]>('DELETE FROM turn_payloads WHERE turn_id IN (SELECT id FROM turns WHERE started_at < ?)'),
      lastModel: db.prepare<[string], { model: string | null }>('SELECT model FROM turns WHERE session_id = ? AND model IS NOT NULL ORDER BY seq DESC LIMIT 1'),
      sessionOfTurn: db.prepare<[string], { session_id: string }>('SELECT session_id FROM turns WHERE id = ?'),
      turnTexts: db.prepare<[string], { id: string; query: string | null; response_text: string | null; tool_calls: string | null }>('SELECT id, query, response_text, tool_calls FROM turns WHERE session_id = ?'),
      updateTurnTexts: db.prepare<[string | null, string | null, string | null, string]>('UPDATE turns SET query = ?, response_text = ?, tool_calls = ? WHERE id = ?'),
      sessionPayloads: db.prepare<[string], { turn_id: string; received: string | null; forwarded: string | null }>('SELECT p.turn_id, p.received, p.forwarded FROM turn_payloads p JOIN turns t ON t.id = p.turn_id WHERE t.session_id = ?'),
      updatePayload: db.prepare<[string | null, string | null, string]>('UPDATE turn_payloads SET received = ?, forwarded = ? WHERE turn_id = ?'),
      deleteSegment: db.prepare<[string]>('DELETE FROM payload_segments WHERE hash = ?'),
    };
    this.segmentSink = {
      put: (hash, json) => {
        const today = localDay(new Date());
        if (this.segmentsWritten.get(hash) === today) return;
        this.statements.putSegment.run(hash, json, Date.now());
        if (this.segmentsWritten.size > 4096) this.segmentsWritten.clear();
        this.segmentsWritten.set(hash, today);
      },
    };
    this.segmentSource = { get: (hash) => this.statements.getSegment.get(hash)?.json };
  }

  addListener(listener: ConversationListener): void {
    this.listeners.push(listener);
  }

  /** Records a finished turn and everything it triggers. Resolves once committed. */
  recordTurn(turn: FinishedTurn): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ turn, resolve, reject });
      if (!this.flushTimer && !this.nextChunk) this.flushTimer = setTimeout(() => this.writeChunks(), BATCH_WINDOW_MS);
    });
  }

  /** Writes every queued turn now, in one transaction (shutdown, and readers that need them written). */
  flush(): void {
    this.cancelScheduledWrites();
    this.write(this.pending.splice(0));
  }

  /** Background writing: one short transaction, then the next after pending I/O has been handled. */
  private writeChunks(): void {
    this.cancelScheduledWrites();
    // A backlog (sustained load) is written in larger transactions, which cost less per turn.
    this.write(this.pending.splice(0, Math.min(MAX_CHUNK_TURNS, Math.max(CHUNK_TURNS, Math.ceil(this.pending.length / 4)))));
    if (this.pending.length > 0) this.nextChunk = setImmediate(() => this.writeChunks());
  }

  private cancelScheduledWrites(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    if (this.nextChunk) clearImmediate(this.nextChunk);
    this.flushTimer = undefined;
    this.nextChunk = undefined;
  }

  private write(batch: ConversationStore['pending']): void {
    if (batch.length === 0) return;
    try {
      this.db.transaction(() => {
        for (const { turn } of batch) this.writeTurn(turn);
      })();
      for (const entry of batch) entry.resolve();
    } catch (error) {
      // One bad turn must not take the others with it: retry them one by one.
      if (batch.length === 1) {
        batch[0]!.reject(error);
        return;
      }
      for (const entry of batch) {
        try {
          this.db.transaction(() => this.writeTurn(entry.turn))();
          entry.resolve();
        } catch (single) {
          entry.reject(single);
        }
      }
    }
  }

  private writeTurn(turn: FinishedTurn): void {
    if (turn.startsNewConversation) this.endOtherSessionsInLineage(turn.lineage, turn.sessionId);
    const isMain = turn.turnType === 'main' ? 1 : 0;
    const counts = this.statements.upsertSession.get(turn.sessionId, turn.identitySource, turn.lineage, turn.scope, turn.clientFormat, turn.startedAt, Date.now(), isMain, turn.learning ? 1 : 0, isMain)!;
    const response = turn.response;
    this.statements.insertTurn.run({
      id: turn.id,
      session_id: turn.sessionId,
      seq: counts.turn_count,
      turn_type: turn.turnType,
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
    });
    const { received, forwarded } = turn.payload;
    this.statements.insertPayload.run(
      turn.id,
      encodeDocument(received.object, received.text, this.segmentSink),
      turn.payload.injected === null ? null : JSON.stringify(turn.payload.injected),
      forwarded === null ? null : encodeDocument(forwarded.object, forwarded.text, this.segmentSink),
      JSON.stringify(turn.payload.receivedHeaders),
      JSON.stringify(turn.payload.strippedKeys),
    );
    const learns = turn.learning && counts.learning === 1;
    for (const listener of learns ? this.listeners : []) {
      listener.turnRecorded?.({
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
      });
    }
    if (turn.endsSession) this.endSession(turn.sessionId, 'done_header');
  }

  /** Ends a session once (later calls do nothing) and tells learning. Returns whether it ended now. */
  endSession(sessionId: string, reason: SessionEndReason, now = Date.now()): boolean {
    return this.db.transaction(() => {
      const row = this.statements.endSession.get(now, reason, sessionId);
      if (!row) return false;
      for (const listener of row.learning === 1 ? this.listeners : []) {
        listener.sessionEnded?.({ sessionId, scope: row.scope, reason, turnCount: row.turn_count, mainTurnCount: row.main_turn_count });
      }
      return true;
    })();
  }

  /** An agent started a new conversation: the other open sessions of the same lineage are over. */
  endOtherSessionsInLineage(lineage: string, currentSessionId: string): string[] {
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

  getSession(id: string): SessionRow | undefined {
    return this.statements.session.get(id);
  }

  listSessions(limit: number): SessionRow[] {
    return this.statements.sessions.all(limit);
  }

  turnsOfSession(sessionId: string): TurnRow[] {
    return this.statements.turnsOfSession.all(sessionId);
  }

  /** A turn's summary row, without its bodies. */
  getTurnSummary(id: string): TurnRow | undefined {
    return this.statements.turn.get(id);
  }

  /** The model the agent last used in a session (learning calls default to it). */
  lastModelOf(sessionId: string): string | undefined {
    return this.statements.lastModel.get(sessionId)?.model ?? undefined;
  }

  getTurn(id: string): TurnDetail | undefined {
    const row = this.statements.turn.get(id);
    if (!row) return undefined;
    const payload = this.statements.payload.get(id);
    return {
      ...row,
      received: payload?.received ? this.decode(payload.received) : null,
      injected: payload?.injected ? parseJsonText(payload.injected) : null,
      forwarded: payload?.forwarded ? this.decode(payload.forwarded) : null,
      received_headers: payload?.received_headers ? (parseJsonText(payload.received_headers) as Record<string, string>) : {},
      stripped_keys: payload?.stripped_keys ? (parseJsonText(payload.stripped_keys) as string[]) : [],
    };
  }

  /** The request body a turn was received with, parsed (learning workers read conversations from it). */
  receivedBody(turnId: string): unknown {
    const payload = this.statements.payload.get(turnId);
    return payload?.received ? this.decode(payload.received) : null;
  }

  private decode(stored: string): unknown {
    try {
      return decodeDocument(stored, this.segmentSource);
    } catch {
      return null; // a part was pruned by retention
    }
  }

  /**
   * Removes `texts` from every stored trace of the sessions the given turns belong to: the turn
   * summaries, the request and forwarded bodies (an agent resends the whole history, so later turns
   * hold it too) and the body parts they share. Used when a memory is forgotten.
   */
  scrubTexts(turnIds: readonly string[], texts: readonly string[], replacement = '[forgotten]'): number {
    const needles = texts.map((text) => text.trim()).filter((text) => text.length >= 3);
    if (needles.length === 0) return 0;
    const sessions = new Set(turnIds.map((id) => this.statements.sessionOfTurn.get(id)?.session_id).filter((id): id is string => id !== undefined));
    const scrub = (text: string | null) => (text === null ? null : needles.reduce((current, needle) => current.split(needle).join(replacement), text));
    const holds = (text: string | null) => text !== null && needles.some((needle) => text.includes(needle) || text.includes(JSON.stringify(needle).slice(1, -1)));
    let changed = 0;
    // Parts that held the text are deleted once every body pointing to them has been rewritten:
    // deleting them at the first body left the others pointing at nothing (unreadable).
    const tainted = new Set<string>();
    this.db.transaction(() => {
      for (const sessionId of sessions) {
        for (const turn of this.statements.turnTexts.all(sessionId)) {
          if (!holds(turn.query) && !holds(turn.response_text) && !holds(turn.tool_calls)) continue;
          this.statements.updateTurnTexts.run(scrub(turn.query), scrub(turn.response_text), scrub(turn.tool_calls), turn.id);
          changed++;
        }
        for (const payload of this.statements.sessionPayloads.all(sessionId)) {
          const received = this.rewriteDocument(payload.received, scrub, holds, tainted);
          const forwarded = this.rewriteDocument(payload.forwarded, scrub, holds, tainted);
          if (received !== payload.received || forwarded !== payload.forwarded) {
            this.statements.updatePayload.run(received, forwarded, payload.turn_id);
            changed++;
          }
        }
      }
      for (const hash of tainted) this.statements.deleteSegment.run(hash);
    })();
    this.segmentsWritten.clear();
    return changed;
  }

  /** A stored body with `scrub` applied to every string in it; the parts that held the text join `tainted`. */
  private rewriteDocument(stored: string | null, scrub: (text: string | null) => string | null, holds: (text: string | null) => boolean, tainted: Set<string>): string | null {
    if (stored === null) return null;
    const parsed = JSON.parse(stored) as { inline?: unknown; messages?: string[]; tools?: string; system?: string };
    const hashes = [...(parsed.messages ?? []), ...(parsed.tools ? [parsed.tools] : []), ...(parsed.system ? [parsed.system] : [])];
    const holding = hashes.filter((hash) => tainted.has(hash) || holds(this.segmentSource.get(hash) ?? null));
    if (!holds(stored) && holding.length === 0) return stored;
    for (const hash of holding) tainted.add(hash);
    const body = decodeDocument(stored, this.segmentSource);
    const cleaned = scrubStrings(body, (text) => scrub(text) ?? text) as Record<string, unknown>;
    return encodeDocument(cleaned, undefined, { put: (hash, json) => this.statements.putSegment.run(hash, json, Date.now()) });
  }

  counts(): { sessions: number; openSessions: number; turns: number } {
    const row = this.statements.counts.get()!;
    return { sessions: row.sessions, openSessions: row.open_sessions, turns: row.turns };
  }

  /** Drops full bodies older than the retention window, and parts no kept body uses; turn summaries stay. */
  prunePayloads(olderThan: number): number {
    const removed = this.statements.prunePayloads.run(olderThan).changes;
    this.statements.pruneSegments.run(olderThan);
    this.segmentsWritten.clear();
    return removed;
  }
}

function scrubStrings(value: unknown, scrub: (text: string) => string): unknown {
  if (typeof value === 'string') return scrub(value);
  if (Array.isArray(value)) return value.map((item) => scrubStrings(item, scrub));
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, scrubStrings(item, scrub)]));
  return value;
}

function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
