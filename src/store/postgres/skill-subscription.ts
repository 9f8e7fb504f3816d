import type { Logger } from '../../logging/index.js';
import type { SkillMirror } from '../../skills/mirror.js';
import { ChannelListener } from './channel-listener.js';
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
  /**
   * Read with every catch-up, before the changes are applied: what the mirror indexes with a skill
   * besides the skill (its search keys), so a skill is indexed with what the store holds for it.
   */
  readonly beforeApply?: () => Promise<void>;
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
  private readonly listener: ChannelListener;
  private running = false;
  private pollTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  /** The catch-up in progress, and whether another must follow it (a notification came meanwhile). */
  private reading: Promise<void> | undefined;
  private again = false;

  constructor(
    url: string,
    private readonly store: PgSkillStore,
    private readonly mirror: SkillMirror,
    private readonly options: SubscriptionOptions = {},
  ) {
    // Every notification, and every (re)connection (what was notified meanwhile is missed), means "read what is new".
    this.listener = new ChannelListener(
      url,
      SKILLS_CHANNEL,
      { notified: () => void this.catchUp(), listening: () => this.catchUp() },
      {
        applicationName: options.applicationName ?? 'metaclaw-skills',
        reconnectDelayMs: options.reconnectDelayMs,
        maxReconnectDelayMs: options.maxReconnectDelayMs,
        logger: options.logger,
      },
    );
  }

  get listening(): boolean {
    return this.listener.listening;
  }

  /** How many times the listening connection was re-established (status, tests). */
  get reconnects(): number {
    return this.listener.reconnects;
  }

  /** Connects, listens and loads everything written after the mirror's generation. Keeps retrying after a failure until `stop`. */
  async start(): Promise<void> {
    this.running = true;
    const pollMs = this.options.pollMs ?? 30_000;
    if (pollMs > 0 && !this.pollTimer) {
      this.pollTimer = setInterval(() => void this.catchUp(), pollMs);
      this.pollTimer.unref();
    }
    await this.listener.start();
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.pollTimer = undefined;
    await this.listener.stop();
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
          await this.options.beforeApply?.();
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
}
