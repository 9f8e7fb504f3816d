import pg from 'pg';

/** The session-level advisory lock key the team's RL trainer holds ('mcrl' in ASCII). */
const TRAINER_LOCK = 0x6d63726c;

/** Which session-level advisory lock a lease holds, and how it shows in pg_stat_activity. */
export interface AdvisoryLock {
  /** one bigint key, or a pair of int keys */
  key: number | readonly [number, number];
  /** shared: any number of nodes hold it at once (a presence, not a role) */
  shared?: boolean;
  applicationName: string;
}

/** The trainer's lock: one node at a time. */
const TRAINER: AdvisoryLock = { key: TRAINER_LOCK, applicationName: 'metaclaw-rl-trainer' };

/**
 * Whether some session of this database holds the trainer's lock: a node asks so when it does not
 * ask for the lock itself (it waits after a failed opening, or for its own session), so that it can
 * tell "another node trains" from "no node does". A bigint advisory key shows in `pg_locks` as its
 * high 32 bits (`classid`) and low 32 bits (`objid`), with `objsubid` 1.
 */
export async function trainerLockHeld(pool: pg.Pool): Promise<boolean> {
  const key = TRAINER.key as number;
  const { rows } = await pool.query<{ held: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND classid = $1 AND objid = $2
       AND database = (SELECT oid FROM pg_database WHERE datname = current_database())) AS held`,
    [Math.floor(key / 2 ** 32), key % 2 ** 32],
  );
  return rows[0]?.held === true;
}

/**
 * Which node of a team trains the team's policy: the one whose dedicated connection holds a
 * session-level advisory lock. PostgreSQL releases it when that connection ends (the node stopped,
 * crashed, or lost the store), so another node's next `tryAcquire` takes over; nothing is left to
 * expire by hand. A pooled connection cannot hold it: the pool hands it to other work. With another
 * `lock` (shared), the same holds a node's presence (team/rl-run.ts: which run a node is configured for).
 */
export class PgTrainerLease {
  private client: pg.Client | undefined;
  private attempt: Promise<boolean> | undefined;

  constructor(
    private readonly url: string,
    /** called once when a held lock is lost with its connection */
    private readonly onLost: (error: Error | undefined) => void,
    private readonly connectTimeoutMs = 2_000,
    private readonly lock: AdvisoryLock = TRAINER,
  ) {}

  get held(): boolean {
    return this.client !== undefined;
  }

  /** Takes the lock if no other node holds it; true when this node holds it now. Never waits for the holder. */
  tryAcquire(): Promise<boolean> {
    if (this.client) return Promise.resolve(true);
    this.attempt ??= this.acquire().finally(() => (this.attempt = undefined));
    return this.attempt;
  }

  /** Gives the lock up (the node stops): the next node to ask takes it. */
  async release(): Promise<void> {
    await this.attempt?.catch(() => false);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async acquire(): Promise<boolean> {
    const client = new pg.Client({
      connectionString: this.url,
      application_name: this.lock.applicationName,
      keepAlive: true,
      connectionTimeoutMillis: this.connectTimeoutMs,
    });
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client, undefined));
    try {
      await client.connect();
      const { key, shared } = this.lock;
      const call = `pg_try_advisory_lock${shared ? '_shared' : ''}(${typeof key === 'number' ? '$1' : '$1::int, $2::int'})`;
      const result = await client.query<{ locked: boolean }>(`SELECT ${call} AS locked`, typeof key === 'number' ? [key] : [...key]);
      if (result.rows[0]?.locked !== true) {
        await client.end().catch(() => undefined);
        return false;
      }
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    this.client = client;
    return true;
  }

  private lost(client: pg.Client, error: Error | undefined): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => undefined);
    this.onLost(error);
  }
}
