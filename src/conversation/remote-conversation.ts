import { ServiceUnavailableError } from '../errors.js';
import type { Logger } from '../logging/index.js';
import { FingerprintSessions } from './fingerprint-sessions.js';
import { MainTurnActivity } from './main-activity.js';
import type { SpooledRecorder } from './spooled-recorder.js';
import type { TurnJournal } from './turn-journal.js';
import type { FinishedTurn, SessionEndReason, SessionRow, TurnDetail, TurnRow } from './types.js';

/** The reads and the one write (ending a session) a node makes on a conversation record it does not hold (the team store). */
export interface RemoteConversationReads {
  getTurn(id: string): Promise<TurnDetail | undefined>;
  getSession(id: string): Promise<SessionRow | undefined>;
  turnOfResponse(responseId: string): Promise<TurnRow | undefined>;
  receivedBody(turnId: string): Promise<unknown>;
  endSession(id: string, reason: SessionEndReason): Promise<boolean>;
}

/** Journaled turns handed to the recorder at once at start: well under what it holds in memory (HeldTurns). */
const RECOVERY_CHUNK = 1_000;

/**
 * The conversation record as one node of a team sees it: turns are journaled on this machine and
 * written to the team store by a SpooledRecorder (which rides out the store's outages), reads go
 * to the store. What is on the request path stays local and synchronous: the placement of turns of
 * clients that send no session id (this node's memory of the sessions their fresh starts opened,
 * here or, told within milliseconds, on the other nodes), and when the user last talked.
 */
export class RemoteConversation {
  /** Placement of turns of clients that send no session id; nodes share the sessions they open (SessionPlacements). */
  readonly fingerprints: FingerprintSessions;
  readonly activity = new MainTurnActivity(null);

  constructor(
    private readonly reads: RemoteConversationReads,
    private readonly recorder: SpooledRecorder,
    private readonly journal: TurnJournal | undefined,
    private readonly logger: Logger,
    /** Whether an error means the store is out of reach: the client is then told 503, not 500. */
    private readonly isOutage: (error: unknown) => boolean = () => false,
    /** Told of every session a fresh start opens here, so the other nodes place that conversation's next turns alike. */
    opened?: (fingerprint: string, sessionId: string) => void,
  ) {
    this.fingerprints = new FingerprintSessions(() => undefined, Date.now, opened);
  }

  journalTurn(id: string, header: unknown, request: Buffer, answer: readonly Buffer[]): boolean {
    if (!this.journal) return false;
    try {
      this.journal.append(id, header, request, answer);
      return true;
    } catch (error) {
      // The record is still written; only a crash before it would lose the turn.
      this.logger.warn({ err: error, request_id: id }, 'could not journal a turn');
      return false;
    }
  }

  recordTurn(turn: FinishedTurn): Promise<void> {
    return this.recorder.recordTurn(turn);
  }

  /**
   * Records the turns an earlier run on this node answered but did not get into the store (killed,
   * crashed, or stopped while the store was out of reach), in order. Writing a turn the store
   * already holds changes nothing, so nothing is checked first. Call at start, before serving.
   */
  async recoverJournal(build: (header: unknown, request: Buffer, answer: Buffer) => FinishedTurn | undefined): Promise<number> {
    if (!this.journal) return 0;
    const earlier = this.journal.readEarlier();
    const turns = earlier.entries.map((entry) => build(entry.header, entry.request, entry.answer)).filter((turn) => turn !== undefined);
    // Handed over a chunk at a time: the recorder holds at most 10,000 turns in memory, and a turn
    // it drops while the store is up is never settled, so handing over more at once would drop the
    // oldest and leave this start waiting for them for good.
    for (let start = 0; start < turns.length; start += RECOVERY_CHUNK)
      await Promise.allSettled(turns.slice(start, start + RECOVERY_CHUNK).map((turn) => this.recorder.recordTurn(turn)));
    // While the store is out of reach the recovered turns wait in memory only: their files stay
    // until a start finds the store up (a turn written twice is stored once).
    if (!this.recorder.degraded) this.journal.removeRecovered(earlier);
    return turns.length;
  }

  getTurn(id: string): Promise<TurnDetail | undefined> {
    return this.read(() => this.reads.getTurn(id));
  }

  getSession(id: string): Promise<SessionRow | undefined> {
    return this.read(() => this.reads.getSession(id));
  }

  turnOfResponse(responseId: string): Promise<TurnRow | undefined> {
    return this.read(() => this.reads.turnOfResponse(responseId));
  }

  receivedBody(turnId: string): Promise<unknown> {
    return this.read(() => this.reads.receivedBody(turnId));
  }

  endSession(id: string, reason: SessionEndReason): Promise<boolean> {
    return this.read(() => this.reads.endSession(id, reason));
  }

  private async read<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (!this.isOutage(error)) throw error;
      throw new ServiceUnavailableError(
        'The team store is out of reach; model requests are still served, records can be read once it is back.',
        'store_unavailable',
      );
    }
  }
}
