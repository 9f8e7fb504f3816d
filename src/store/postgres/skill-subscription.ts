import pg from 'pg';
import type { Logger } from '../../logging/index.js';
import type { SkillMirror } from '../../skills/mirror.js';
import { SKILLS_CHANNEL, type PgSkillStore } from './skill-store.js';

export interface SubscriptionOptions {
  /** The first wait before reconnecting a lost listening connection; doubled up to `maxReconnectDelayMs`. */
  readonly reconnectDelayMs?: number;
  readonly maxReconnectDelayMs?: number;
  /**
   * A catch-up this often whatever was heard (0: never). Notifications are reliable on a live
   * connection and a reconnect catches up; this bounds staleness should a connection die silently
   * (a dropped network path sends no FIN, and TCP keepalive takes minutes to notice).
   */
  readonly pollMs?: number;
  /** The listening connection's application_name (how it shows in pg_stat_activity). */
  readonly applicationName?: string;
  readonly logger?: Logger;
}

/**
 * Keeps one node's `SkillMirror` in step with the team store: one dedicated connection LISTENs on
 * the skills channel, and every notification (or reconnect, or poll) reads the rows written after
 * the generation the mirror has seen. Because generations are handed out in commit order (see
 * skill-store.ts), "after the generation seen" is exactly what the node missed, however many
 * notifications it missed: a node cut off for a while catches up in one read when it reconnects.
 * LISTEN comes before the catch-up read, so a write committed between the two is either in the read
 * or notified after it, never neither.
 */
export class SkillSubscription {
  private client: pg.Client | undefined;
  private running = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private delay: number;
  /** The catch-up in progress, and whether another must follow it (a notification came meanwhile). */
  private reading: Promise<void> | undefined;
  private again = false;
  /** How many times the listening connection was re-established (status, tests). */
  reconnects = 0;

  constructor(
    private readonly url: string,
    private readonly store: PgSkillStore,
    private readonly mirror: SkillMirror,
    private readonly options: SubscriptionOptions = {},
  ) {
    this.delay = options.reconnectDelayMs ?? 250;
  }

  get listening(): boolean {
    return this.client !== undefined;
  }

  /** Connects, listens and loads everything written after the mirror's generation. Keeps retrying after a failure until `stop`. */
  async start(): Promise<void> {
    this.running = true;
    const pollMs = this.options.pollMs ?? 30_000;
    if (pollMs > 0 && !this.pollTimer) {
      this.pollTimer = setInterval(() => void this.catchUp(), pollMs);
      this.pollTimer.unref();
    }
    try {
      await this.connect();
    } catch (error) {
      this.scheduleReconnect();
      throw error;
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.pollTimer = undefined;
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
    await this.reading;
  }

  /** Reads what was written after the mirror's generation and applies it; coalesces overlapping calls. */
  catchUp(): Promise<void> {
    if (this.reading) {
      this.again = true;
      return this.reading;
    }
    this.reading = (async () => {
      do {
        this.again = false;
        try {
          const changes = await this.store.changesSince(this.mirror.generation);
          this.mirror.apply({ changed: changes.changed.map((entry) => entry.skill), removed: [...changes.removed] }, changes.generation);
        } catch (error) {
          // Read again from the same generation soon: a notification that was heard must not be lost
          // because the read it triggered failed (the listening connection may well stay up).
          this.options.logger?.warn({ err: error }, 'reading skill changes from the team store failed');
          this.retryCatchUp();
        }
      } while (this.again && this.running);
    })().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  private retryCatchUp(): void {
    if (!this.running || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.catchUp();
    }, this.options.maxReconnectDelayMs ?? 5_000);
    this.retryTimer.unref();
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.url,
      application_name: this.options.applicationName ?? 'metaclaw-skills',
      keepAlive: true,
      connectionTimeoutMillis: 5_000,
    });
    // Both fire when the server goes away or terminates the backend; either means "listen again".
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client, undefined));
    client.on('notification', (message) => {
      if (message.channel === SKILLS_CHANNEL) void this.catchUp();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${SKILLS_CHANNEL}`);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    if (!this.running) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.delay = this.options.reconnectDelayMs ?? 250;
    await this.catchUp();
  }

  private lost(client: pg.Client, error: Error | undefined): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.options.logger?.warn({ err: error }, 'lost the team store skills listener; reconnecting');
    client.end().catch(() => undefined);
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (!this.running || this.reconnectTimer) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.connect().then(
        () => {
          if (this.running) this.reconnects++;
        },
        (error: unknown) => {
          this.options.logger?.debug({ err: error }, 'the team store is still unreachable for the skills listener');
          this.delay = Math.min(this.delay * 2, this.options.maxReconnectDelayMs ?? 5_000);
          this.scheduleReconnect();
        },
      );
    }, this.delay);
    this.reconnectTimer.unref();
  }
}
