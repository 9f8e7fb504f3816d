import pg from 'pg';
import type { Logger } from '../../logging/index.js';

export interface ChannelListenerOptions {
  /** The first wait before reconnecting a lost connection; doubled up to `maxReconnectDelayMs`. */
  readonly reconnectDelayMs?: number;
  readonly maxReconnectDelayMs?: number;
  readonly connectTimeoutMs?: number;
  /** How the connection shows in pg_stat_activity. */
  readonly applicationName?: string;
  readonly logger?: Logger;
}

export interface ChannelHandlers {
  /** A notification's payload. */
  notified(payload: string): void;
  /**
   * The channel is listened to again after being lost (and the first time): notifications sent
   * meanwhile were missed, so whatever they would have invalidated is stale. Awaited before
   * `start` resolves (a catch-up read the caller wants done first).
   */
  listening(): void | Promise<void>;
}

/**
 * One dedicated connection LISTENing on one channel, reconnected with backoff whenever it drops
 * (the server restarted, the network path broke). A pooled connection cannot listen: it is handed
 * to other work between queries, and a notification arrives only on the session that listens.
 */
export class ChannelListener {
  private client: pg.Client | undefined;
  private running = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private delay: number;
  /** How many times the connection was re-established after the first (status, tests). */
  reconnects = 0;

  constructor(
    private readonly url: string,
    private readonly channel: string,
    private readonly handlers: ChannelHandlers,
    private readonly options: ChannelListenerOptions = {},
  ) {
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`not a plain channel name: ${channel}`);
    this.delay = options.reconnectDelayMs ?? 250;
  }

  get listening(): boolean {
    return this.client !== undefined;
  }

  /** Connects and listens. When that fails it rejects, and keeps retrying in the background until `stop`. */
  async start(): Promise<void> {
    this.running = true;
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
    this.reconnectTimer = undefined;
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.url,
      application_name: this.options.applicationName ?? 'metaclaw-listen',
      keepAlive: true,
      connectionTimeoutMillis: this.options.connectTimeoutMs ?? 5_000,
    });
    // Both fire when the server goes away or ends the backend; either means "listen again".
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client, undefined));
    client.on('notification', (message) => {
      if (message.channel === this.channel) this.handlers.notified(message.payload ?? '');
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${this.channel}`);
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
    await this.handlers.listening();
  }

  private lost(client: pg.Client, error: Error | undefined): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.options.logger?.warn({ err: error }, `lost the listener on ${this.channel}; reconnecting`);
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
          this.options.logger?.debug({ err: error }, `${this.channel}: the store is still unreachable`);
          this.delay = Math.min(this.delay * 2, this.options.maxReconnectDelayMs ?? 5_000);
          this.scheduleReconnect();
        },
      );
    }, this.delay);
    this.reconnectTimer.unref();
  }
}
