import type { Logger } from '../logging/index.js';
import type { StoreHealth } from '../store/index.js';
import type { ConversationStore } from './store.js';

/**
 * Ends sessions that have been idle longer than `session.idle_timeout_minutes`. Runs once at start
 * (sessions left open by a crash or a stop are closed and learned from) and then periodically.
 */
export class IdleSessionSweeper {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: ConversationStore,
    private readonly idleTimeoutMs: number,
    private readonly logger: Logger,
    private readonly health?: StoreHealth,
  ) {}

  start(): void {
    this.sweep();
    const interval = Math.min(30_000, Math.max(250, this.idleTimeoutMs / 4));
    this.timer = setInterval(() => this.sweep(), interval);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  sweep(now = Date.now()): string[] {
    if (this.health && !this.health.writable) return []; // swept again once the store can be written
    try {
      const ended = this.store.endIdleSessions(now - this.idleTimeoutMs);
      if (ended.length > 0) this.logger.info({ sessions: ended }, 'sessions ended after idle timeout');
      return ended;
    } catch (error) {
      if (!this.health?.report('maintenance', error)) this.logger.error({ err: error }, 'idle session sweep failed');
      return [];
    }
  }
}
