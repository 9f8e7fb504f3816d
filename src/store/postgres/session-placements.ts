import type pg from 'pg';
import { z } from 'zod';
import type { Logger } from '../../logging/index.js';
import { ChannelListener } from './channel-listener.js';

/** The LISTEN/NOTIFY channel on which nodes tell each other the sessions fresh starts opened. */
export const SESSIONS_CHANNEL = 'metaclaw_sessions';

const announcement = z.object({ node: z.string(), fingerprint: z.string().min(1), session: z.string().min(1) });

/**
 * Clients that send no session id are placed by the fingerprint of their opening words, in the
 * newest session of that fingerprint (conversation/fingerprint-sessions.ts): a node's own memory,
 * on the request path. Behind a load balancer the turns of one conversation reach several nodes,
 * so each node tells the others, through PostgreSQL notifications, every session a fresh start
 * opened on it; a conversation's next turn, seconds later, finds it on whichever node it reaches.
 * Telling is never waited for: a lost notification (the store out of reach) only means a later
 * turn on another node may open its own session, as it would with no team.
 */
export class SessionPlacements {
  private readonly listener: ChannelListener;
  private failures = 0;

  constructor(
    url: string,
    private readonly pool: pg.Pool,
    private readonly nodeId: string,
    private readonly learn: (fingerprint: string, sessionId: string) => void,
    logger?: Logger,
  ) {
    this.listener = new ChannelListener(
      url,
      SESSIONS_CHANNEL,
      { notified: (payload) => this.notified(payload), listening: () => undefined },
      { applicationName: 'metaclaw-sessions', ...(logger ? { logger } : {}) },
    );
  }

  get listening(): boolean {
    return this.listener.listening;
  }

  /** Announcements this node could not send (the store was out of reach). */
  get unsent(): number {
    return this.failures;
  }

  /** Starts listening; an unreachable store is retried in the background. */
  async start(): Promise<void> {
    await this.listener.start().catch(() => undefined);
  }

  stop(): Promise<void> {
    return this.listener.stop();
  }

  /** Tells the other nodes that `sessionId` is now the newest session of `fingerprint` (not awaited by the request). */
  announce(fingerprint: string, sessionId: string): void {
    this.pool
      .query('SELECT pg_notify($1, $2)', [SESSIONS_CHANNEL, JSON.stringify({ node: this.nodeId, fingerprint, session: sessionId })])
      .catch(() => void this.failures++);
  }

  private notified(payload: string): void {
    let parsed;
    try {
      parsed = announcement.safeParse(JSON.parse(payload));
    } catch {
      return;
    }
    if (parsed.success && parsed.data.node !== this.nodeId) this.learn(parsed.data.fingerprint, parsed.data.session);
  }
}
