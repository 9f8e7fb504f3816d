import { errorMessage } from '../errors.js';
import type { Db, StoreHealth } from '../store/index.js';
import { bodyChars, HeldTurns, withoutBodies, type HeldTurnsCounts } from './held-turns.js';
import { FingerprintSessions } from './fingerprint-sessions.js';
import { lastRecordedMainTurn, MainTurnActivity } from './main-activity.js';
import { decodeDocument, documentReferences } from './payload-codec.js';
import { PayloadScrubber } from './payload-scrub.js';
import { FORGOTTEN, forgetNeedles, holdsNeedle, scrubNeedles } from '../shared/forget-text.js';
import { SegmentTable } from './segment-table.js';
import type { RecoveredJournal, TurnJournal } from './turn-journal.js';
import { turnDetail } from './turn-rows.js';
import { BATCH_WINDOW_MS, MAX_CHUNK_TURNS, TurnWriter } from './turn-writer.js';
import type { ConversationListener, FinishedTurn, SessionEndReason, SessionRow, TurnDetail, TurnRow } from './types.js';
import { TurnWriterThread, type WriterThreadEvents } from './writer-thread.js';
import type { ConversationReadStore } from '../store/ports.js';

/**
 * At most this many turns per transaction when turns are written on the proxy's thread. A write
 * blocks the event loop (about 0.1 ms plus 30–40 µs a turn here), so a long batch would hold up
 * every request arriving meanwhile; short ones, with I/O handled between them, keep that wait
 * around 0.4 ms.
 */
const CHUNK_TURNS = 8;

/** Up to this many forgotten units, the turns that injected each are looked up by its id; more are found in one pass over every turn. */
const INJECTED_LOOKUPS = 16;

/**
 * Bodies of turns handed to the writer and not yet committed, at most (characters). Past it, a
 * turn is recorded without its bodies (counted): under a load the writer cannot keep up with,
 * the backlog would otherwise grow with every request (734 MB of memory in 10 s at 2,700/s).
 */
const MAX_IN_FLIGHT_BODY_CHARS = 48 * 1024 * 1024;

/** Bodies dropped by retention per transaction: the prune runs beside the proxy and must not hold the store long. */
const PRUNE_BATCH = 256;

export interface ConversationStoreOptions {
  /** Whether the store can be written; without it every write error reaches the caller. */
  health?: StoreHealth;
  /** Where answered turns wait until their record is committed (the running proxy only). */
  journal?: TurnJournal;
  /** A held or recovered turn that could not be written for good (recordTurn's callers hear of the others). */
  failed?: (turnId: string, error: unknown) => void;
  /** store.redact_turns: secrets in a turn are redacted before it is stored (default true). */
  redactTurns?: boolean;
}

export interface RecordingCounts extends HeldTurnsCounts {
  /** Turns handed to the writer and not yet committed. */
  in_flight: number;
  /** Turns in the journal whose record is not committed yet. */
  journaled: number;
}

/**
 * Sessions and turn records. Finished turns are written together, from BATCH_WINDOW_MS after the
 * first of them, in transactions that also enqueue the learning jobs they trigger, so a job can
 * never be lost between the two. The client already has its answer by then. With a writer thread
 * (the running proxy, on a database file) the writing happens there, off the request path; without
 * one (CLI commands, in-memory databases) it happens here, between requests.
 */
export class ConversationStore implements ConversationReadStore {
  private readonly listeners: ConversationListener[] = [];
  private readonly statements;
  private readonly writer: TurnWriter;
  private thread: TurnWriterThread | undefined;
  private pending: Array<{ turn: FinishedTurn; resolve: () => void; reject: (error: unknown) => void }> = [];
  private flushTimer: NodeJS.Timeout | undefined;
  private nextChunk: NodeJS.Immediate | undefined;
  private readonly segments: SegmentTable;
  private readonly held = new HeldTurns();
  private inFlight = 0;
  private inFlightChars = 0;
  /** Which session a turn of a client without a session id belongs to (see fingerprint-sessions.ts). */
  readonly fingerprints: FingerprintSessions;
  /** When the user last talked through the proxy (main turns), seeded from the turn records. */
  readonly activity: MainTurnActivity;

  constructor(
    private readonly db: Db,
    private readonly options: ConversationStoreOptions = {},
  ) {
    this.statements = {
      session: db.prepare<[string], SessionRow>('SELECT * FROM sessions WHERE id = ?'),
      sessions: db.prepare<[number], SessionRow>('SELECT * FROM sessions ORDER BY last_turn_at DESC LIMIT ?'),
      turnsOfSession: db.prepare<[string], TurnRow>('SELECT * FROM turns WHERE session_id = ? ORDER BY seq'),
      turn: db.prepare<[string], TurnRow>('SELECT * FROM turns WHERE id = ?'),
      turnOfResponse: db.prepare<[string], TurnRow>('SELECT * FROM turns WHERE response_id = ? LIMIT 1'),
      payload: db.prepare<
        [string],
        { received: string | null; injected: string | null; forwarded: string | null; received_headers: string | null; stripped_keys: string | null }
      >('SELECT * FROM turn_payloads WHERE turn_id = ?'),
      counts: db.prepare<[], { sessions: number; open_sessions: number; turns: number }>(`
        SELECT (SELECT COUNT(*) FROM sessions) AS sessions,
               (SELECT COUNT(*) FROM sessions WHERE ended_at IS NULL) AS open_sessions,
               (SELECT COUNT(*) FROM turns) AS turns`),
      oldPayloads: db.prepare<[number, number, number], { turn_id: string; started_at: number; received: string | null; forwarded: string | null }>(
        'SELECT p.turn_id, t.started_at, p.received, p.forwarded FROM turns t JOIN turn_payloads p ON p.turn_id = t.id WHERE t.started_at >= ? AND t.started_at < ? ORDER BY t.started_at LIMIT ?',
      ),
      deletePayload: db.prepare<[string]>('DELETE FROM turn_payloads WHERE turn_id = ?'),
      lastModel: db.prepare<[string], { model: string | null }>('SELECT model FROM turns WHERE session_id = ? AND model IS NOT NULL ORDER BY seq DESC LIMIT 1'),
      latestModel: db.prepare<[], { model: string | null }>(
        "SELECT model FROM turns WHERE turn_type = 'main' AND model IS NOT NULL ORDER BY started_at DESC LIMIT 1",
      ),
      sessionOfTurn: db.prepare<[string], { session_id: string }>('SELECT session_id FROM turns WHERE id = ?'),
      sessionsInjecting: db.prepare<[string], { session_id: string }>(
        'SELECT DISTINCT t.session_id FROM turn_payloads p JOIN turns t ON t.id = p.turn_id WHERE p.injected IS NOT NULL AND instr(p.injected, ?) > 0',
      ),
      injectedOfTurns: db.prepare<[], { session_id: string; injected: string }>(
        'SELECT t.session_id, p.injected FROM turn_payloads p JOIN turns t ON t.id = p.turn_id WHERE p.injected IS NOT NULL',
      ),
      turnTexts: db.prepare<[string], { id: string; query: string | null; response_text: string | null; tool_calls: string | null }>(
        'SELECT id, query, response_text, tool_calls FROM turns WHERE session_id = ?',
      ),
      updateTurnTexts: db.prepare<[string | null, string | null, string | null, string]>(
        'UPDATE turns SET query = ?, response_text = ?, tool_calls = ? WHERE id = ?',
      ),
      sessionPayloads: db.prepare<[string], { turn_id: string; received: string | null; forwarded: string | null }>(
        'SELECT p.turn_id, p.received, p.forwarded FROM turn_payloads p JOIN turns t ON t.id = p.turn_id WHERE t.session_id = ? ORDER BY t.seq',
      ),
      updatePayload: db.prepare<[string | null, string | null, string]>('UPDATE turn_payloads SET received = ?, forwarded = ? WHERE turn_id = ?'),
      // RL samples keep the sampled token ids of a turn, which encode its texts: they cannot be scrubbed, so they go.
      forgetSampleTokens: db.prepare<[string]>(
        'UPDATE rl_samples SET prompt_tokens = NULL, response_tokens = NULL, response_logprobs = NULL WHERE session_id = ? AND prompt_tokens IS NOT NULL',
      ),
      // The fingerprint's own session or one opened after it (`<fingerprint>-<time>`), by primary key.
      newestOfFingerprint: db.prepare<[string, string, string], { id: string }>(
        'SELECT id FROM sessions WHERE id = ? OR (id > ? AND id < ?) ORDER BY started_at DESC LIMIT 1',
      ),
    };
    this.fingerprints = new FingerprintSessions(
      (fingerprint) => this.statements.newestOfFingerprint.get(fingerprint, `${fingerprint}-`, `${fingerprint}.`)?.id,
    );
    this.activity = new MainTurnActivity(lastRecordedMainTurn(db));
    this.writer = new TurnWriter(db, this.listeners, undefined, options.redactTurns ?? true);
    this.segments = new SegmentTable(db);
    options.health?.onRecovered(() => this.recordHeldTurns());
  }

  /** Listeners run inside the recording transaction on this thread (the writer thread builds its own). */
  addListener(listener: ConversationListener): void {
    this.listeners.push(listener);
  }

  /**
   * From now on turns are written on a worker thread (`entry`, given `workerData`), off the request
   * path. If it dies, they are written here again.
   */
  startWriterThread(entry: URL, workerData: Record<string, unknown>, events: WriterThreadEvents): void {
    this.thread = new TurnWriterThread(entry, workerData, events, (turn) => this.recordHere(turn));
  }

  /**
   * Records a finished turn and everything it triggers. Resolves once committed, or once held
   * because the store cannot be written (written by itself when it can again); rejects only for
   * a turn that can never be written.
   */
  recordTurn(turn: FinishedTurn): Promise<void> {
    const { health, journal } = this.options;
    if (health && !health.writable) {
      this.held.hold(turn);
      return Promise.resolve();
    }
    const chars = bodyChars(turn);
    let sent = turn;
    if (this.inFlightChars + chars > MAX_IN_FLIGHT_BODY_CHARS) {
      sent = withoutBodies(turn);
      this.held.countBodiesDropped();
    }
    const sentChars = sent === turn ? chars : 0;
    this.inFlight++;
    this.inFlightChars += sentChars;
    const settled = () => {
      this.inFlight--;
      this.inFlightChars -= sentChars;
    };
    const written = this.thread?.running ? this.thread.record(sent) : this.recordHere(sent);
    return written.then(
      () => {
        settled();
        journal?.committed(turn.id);
      },
      (error: unknown) => {
        settled();
        if (health?.report('recording', error)) {
          this.held.hold(sent);
          return;
        }
        // A turn that can never be written is not replayed at every start either.
        journal?.committed(turn.id);
        throw error;
      },
    );
  }

  /** Appends an answered turn to the journal (see turn-journal.ts); false when there is none or it failed. */
  journalTurn(id: string, header: unknown, request: Buffer, answer: readonly Buffer[]): boolean {
    const journal = this.options.journal;
    if (!journal) return false;
    try {
      journal.append(id, header, request, answer);
      return true;
    } catch (error) {
      if (!this.options.health?.report('recording', error)) throw error;
      return false;
    }
  }

  /**
   * Records the turns an earlier run journaled but did not commit (it was killed or crashed). Call
   * once at start, before the first turn of this run is journaled. Resolves with how many turns
   * were recorded; the journal's files are deleted once they are.
   */
  async recoverJournal(build: (header: unknown, request: Buffer, answer: Buffer) => FinishedTurn | undefined): Promise<{ recovered: number; skipped: number }> {
    const journal = this.options.journal;
    if (!journal) return { recovered: 0, skipped: 0 };
    const earlier: RecoveredJournal = journal.readEarlier();
    let recovered = 0;
    let skipped = 0;
    const writes: Array<Promise<void>> = [];
    for (const entry of earlier.entries) {
      const turn = build(entry.header, entry.request, entry.answer);
      if (!turn || this.statements.turn.get(turn.id)) {
        skipped++;
        continue;
      }
      recovered++;
      writes.push(this.recordTurn(turn).catch((error: unknown) => this.options.failed?.(turn.id, error)));
    }
    await Promise.all(writes);
    journal.removeRecovered(earlier);
    return { recovered, skipped };
  }

  /**
   * A real write, for the store probe: the oldest held turn (on this thread), or else a tiny state
   * row. Throws while the store cannot be written.
   */
  probeWrite(): void {
    const turn = this.held.first();
    if (!turn) {
      this.db.prepare("INSERT INTO state(key, value) VALUES ('store.probe', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value").run(String(Date.now()));
      return;
    }
    const [error] = this.writer.write([turn]);
    if (error !== undefined) throw error instanceof Error ? error : new Error(errorMessage(error));
    this.held.dropFirst();
    this.options.journal?.committed(turn.id);
  }

  /** The store is writable again: what waited is written now. */
  private recordHeldTurns(): void {
    for (const turn of this.held.takeAll()) {
      this.recordTurn(turn).catch((error: unknown) => this.options.failed?.(turn.id, error));
    }
  }

  /** At a clean stop, after `drain`: the journal's files go once every turn in them is committed. */
  closeJournal(): void {
    this.options.journal?.close();
  }

  recordingCounts(): RecordingCounts {
    return { ...this.held.counts(), in_flight: this.inFlight, journaled: this.options.journal?.pendingTurns ?? 0 };
  }

  private recordHere(turn: FinishedTurn): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ turn, resolve, reject });
      if (!this.flushTimer && !this.nextChunk) this.flushTimer = setTimeout(() => this.writeChunks(), BATCH_WINDOW_MS);
    });
  }

  /** Writes every queued turn (shutdown): the writer thread's before it stops, then any left here. */
  async drain(): Promise<void> {
    // If the thread dies meanwhile, what it had not confirmed joins the queue here, written next.
    await this.thread?.stop();
    this.flush();
  }

  /** Writes every turn queued on this thread now, in one transaction. */
  private flush(): void {
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
    const errors = this.writer.write(batch.map((entry) => entry.turn));
    batch.forEach((entry, index) => (errors[index] === undefined ? entry.resolve() : entry.reject(errors[index])));
  }

  /** Ends a session once (later calls do nothing) and tells learning. Returns whether it ended now. */
  endSession(sessionId: string, reason: SessionEndReason, now = Date.now()): boolean {
    return this.writer.endSession(sessionId, reason, now);
  }

  /** Ends every open session idle since before `cutoff`. */
  endIdleSessions(cutoff: number): string[] {
    return this.writer.endIdleSessions(cutoff);
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

  /** The turn that answered a Responses API request with this response id. */
  turnOfResponse(responseId: string): TurnRow | undefined {
    return this.statements.turnOfResponse.get(responseId);
  }

  /** The model the agent last used in a session (learning calls default to it). */
  lastModelOf(sessionId: string): string | undefined {
    return this.statements.lastModel.get(sessionId)?.model ?? undefined;
  }

  /** The model of the latest main turn (learning calls that belong to no session default to it). */
  latestModel(): string | undefined {
    return this.statements.latestModel.get()?.model ?? undefined;
  }

  getTurn(id: string): TurnDetail | undefined {
    const row = this.statements.turn.get(id);
    if (!row) return undefined;
    const payload = this.statements.payload.get(id);
    const received = payload?.received ? decodeDocument(payload.received, this.segments) : null;
    const forwarded = payload?.forwarded ? decodeDocument(payload.forwarded, this.segments, received) : null;
    return turnDetail(row, payload, { received, forwarded });
  }

  /** The request body a turn was received with, parsed (learning workers read conversations from it). */
  receivedBody(turnId: string): unknown {
    const payload = this.statements.payload.get(turnId);
    return payload?.received ? decodeDocument(payload.received, this.segments) : null;
  }

  /**
   * Removes `texts` from every stored trace of the sessions the given turns belong to: the turn
   * summaries, the request and forwarded bodies (an agent resends the whole history, so later turns
   * hold it too) and the body parts they share. Used when a memory is forgotten.
   */
  scrubTexts(turnIds: readonly string[], texts: readonly string[], replacement = FORGOTTEN): number {
    const needles = forgetNeedles(texts);
    if (needles.length === 0) return 0;
    const sessions = new Set(turnIds.map((id) => this.statements.sessionOfTurn.get(id)?.session_id).filter((id): id is string => id !== undefined));
    return this.scrubSessions(new Map([...sessions].map((session) => [session, needles])), replacement);
  }

  /**
   * Removes forgotten memories' texts from every session a turn of which injected them (a standing
   * rule goes into every main turn of its scope, a recalled memory into the turns it answered): the
   * body forwarded upstream quotes them, and so does every later body of the session. Turns name
   * what they injected by id (`turn_payloads.injected`).
   */
  scrubInjected(units: ReadonlyArray<{ id: string; texts: readonly string[] }>, replacement = FORGOTTEN): number {
    const byId = new Map(units.map((unit) => [unit.id, forgetNeedles(unit.texts)]));
    const bySession = new Map<string, Set<string>>();
    const note = (session: string, id: string) => {
      const needles = byId.get(id) ?? [];
      if (needles.length === 0) return;
      const held = bySession.get(session) ?? new Set<string>();
      for (const needle of needles) held.add(needle);
      bySession.set(session, held);
    };
    if (byId.size <= INJECTED_LOOKUPS) {
      for (const id of byId.keys()) for (const row of this.statements.sessionsInjecting.all(JSON.stringify(id))) note(row.session_id, id);
    } else {
      // Many units (a scope): one pass over what every turn injected, rather than one per unit.
      for (const row of this.statements.injectedOfTurns.iterate()) {
        for (const match of row.injected.matchAll(/"id":"([^"]+)"/g)) if (byId.has(match[1]!)) note(row.session_id, match[1]!);
      }
    }
    return this.scrubSessions(new Map([...bySession].map(([session, needles]) => [session, [...needles]])), replacement);
  }

  /** Each session's turn summaries and bodies with its needles replaced, in one transaction. */
  private scrubSessions(needlesBySession: ReadonlyMap<string, readonly string[]>, replacement: string): number {
    if (needlesBySession.size === 0) return 0;
    let changed = 0;
    // One scrubber per set of needles (it remembers which parts hold them), shared by the sessions that have it.
    const scrubbers = new Map<string, PayloadScrubber>();
    this.db
      .transaction(() => {
        for (const [sessionId, needles] of needlesBySession) {
          const scrub = (text: string | null) => (text === null ? null : scrubNeedles(needles, text, replacement));
          const holds = (text: string | null) => holdsNeedle(needles, text);
          const key = needles.join('\u0000');
          const scrubber = scrubbers.get(key) ?? new PayloadScrubber(this.segments, (text) => scrub(text) ?? text, holds);
          scrubbers.set(key, scrubber);
          const before = changed;
          for (const turn of this.statements.turnTexts.all(sessionId)) {
            if (!holds(turn.query) && !holds(turn.response_text) && !holds(turn.tool_calls)) continue;
            this.statements.updateTurnTexts.run(scrub(turn.query), scrub(turn.response_text), scrub(turn.tool_calls), turn.id);
            changed++;
          }
          for (const payload of this.statements.sessionPayloads.all(sessionId)) {
            const rewritten = scrubber.rewrite(sessionId, payload.received, payload.forwarded);
            if (!rewritten) continue;
            this.statements.updatePayload.run(rewritten.received, rewritten.forwarded, payload.turn_id);
            changed++;
          }
          if (changed > before) this.statements.forgetSampleTokens.run(sessionId);
        }
        // Parts that held the text go once every body pointing to them has been rewritten:
        // deleting them at the first body left the others pointing at nothing.
        for (const scrubber of scrubbers.values()) scrubber.finish();
      })
      .immediate();
    this.forgetWrittenSegments();
    return changed;
  }

  /** Parts were deleted whatever used them: whoever writes turns must not extend lists that may hold them. */
  private forgetWrittenSegments(): void {
    this.writer.forgetWrittenSegments();
    this.thread?.forgetWrittenSegments();
  }

  counts(): { sessions: number; openSessions: number; turns: number } {
    const row = this.statements.counts.get()!;
    return { sessions: row.sessions, openSessions: row.open_sessions, turns: row.turns };
  }

  /**
   * Drops the full bodies of turns started before `olderThan` (their summaries stay), a batch per
   * transaction with the proxy's I/O handled between batches, and every part no kept body uses any
   * more. Resolves with how many bodies were dropped; stops early when the store is closed.
   */
  async prunePayloads(olderThan: number): Promise<number> {
    let removed = 0;
    let from = Number.MIN_SAFE_INTEGER;
    while (this.db.open) {
      const batch = this.db
        .transaction(() => {
          const rows = this.statements.oldPayloads.all(from, olderThan, PRUNE_BATCH);
          for (const row of rows) {
            this.segments.release(documentReferences(row.received));
            this.segments.release(documentReferences(row.forwarded));
            this.statements.deletePayload.run(row.turn_id);
          }
          return rows;
        })
        .immediate();
      removed += batch.length;
      if (batch.length < PRUNE_BATCH) break;
      from = batch.at(-1)!.started_at;
      await new Promise((resolve) => setImmediate(resolve));
    }
    return removed;
  }
}
