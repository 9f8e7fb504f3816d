import { createHash } from 'node:crypto';
import type pg from 'pg';
import { z } from 'zod';
import {
  sameRun,
  SERVED_POLICY_KEY,
  TRAINING_RUN_KEY,
  type RunConfiguration,
  type RunStart,
  type ServedPolicyRecord,
  type TrainingRun,
} from '../../rl/loop/index.js';
import { earlierRunSamplesWhere, setAsideReason } from '../../rl/buffer/store.js';
import { readTeamRun, SERVED_POLICY_CHANNEL } from './rl-steps.js';
import { PgTrainerLease } from './trainer-lease.js';
import { inTransaction, setState } from './transaction.js';

/** The first key of a run's presence lock ('mcru' in ASCII); the second is the run's hash. */
const RUN_PRESENCE_CLASS = 0x6d637275;

/** A run configuration's presence lock key: the same on every node configured alike. */
function presenceKey(run: RunConfiguration): [number, number] {
  const digest = createHash('sha256')
    .update(JSON.stringify([run.backend, run.base_model, run.lora_rank]))
    .digest();
  return [RUN_PRESENCE_CLASS, digest.readInt32BE(0)];
}

/** Records the team's first run (steps from before runs were recorded belong to it); a record already there is kept. */
export async function recordTeamRun(pool: pg.Pool, run: TrainingRun): Promise<void> {
  await pool.query('INSERT INTO state (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [TRAINING_RUN_KEY, JSON.stringify(run)]);
}

/**
 * Adds the run's step 0 (the weights its trainer opened it with) to the team's record of it, so
 * `rl rollback 0` on any node serves them; false, writing nothing, when the record is another run's
 * by now or already has its step 0 (the first kept wins).
 */
export async function recordTeamRunStart(pool: pg.Pool, run: TrainingRun, start: RunStart): Promise<boolean> {
  return inTransaction(pool, async (client) => {
    const stored = await readTeamRun(client, true);
    if (!stored || !sameRun(stored, run) || stored.after_step !== run.after_step || stored.start) return false;
    await setState(client, TRAINING_RUN_KEY, JSON.stringify({ ...stored, start }));
    return true;
  });
}

/**
 * A new run begins: its record (with its step 0, the fresh LoRA), that LoRA as the served policy and the earlier run's untrained
 * samples set aside, in one transaction, so no
 * node ever reads the one without the other (a node would serve a LoRA with another model's
 * tokenizer); every node is told of the new policy (SERVED_POLICY_CHANNEL) once both are committed.
 */
export async function beginTeamRun(pool: pg.Pool, run: TrainingRun, served: ServedPolicyRecord, earlier: { before: number; reason: string }): Promise<number> {
  return inTransaction(pool, async (client) => {
    // The earlier run's policy served these: another model's token ids and logprobs never train this run.
    const setAside = await client.query(`UPDATE rl_samples SET set_aside_at = $1, set_aside_reason = $2 WHERE ${earlierRunSamplesWhere('$1')}`, [
      earlier.before,
      setAsideReason(earlier.reason),
    ]);
    await setState(client, TRAINING_RUN_KEY, JSON.stringify(run));
    await setState(client, SERVED_POLICY_KEY, JSON.stringify(served));
    await client.query('SELECT pg_notify($1, $2)', [SERVED_POLICY_CHANNEL, '']);
    return setAside.rowCount ?? 0;
  });
}

/**
 * Which run configurations the team's running nodes have: each node holds a shared advisory lock
 * for its own (backend, base model, LoRA rank) on a connection of its own, released by PostgreSQL
 * when the node stops or loses the store, so nothing is left to expire by hand.
 */
export class PgRunPresence {
  private readonly lease: PgTrainerLease;

  constructor(
    url: string,
    configured: RunConfiguration,
    private readonly pool: pg.Pool,
  ) {
    this.lease = new PgTrainerLease(url, () => undefined, 2_000, { key: presenceKey(configured), shared: true, applicationName: 'metaclaw-rl-run' });
  }

  /** Holds this node's presence (again, after its connection was lost). */
  hold(): Promise<boolean> {
    return this.lease.tryAcquire();
  }

  release(): Promise<void> {
    return this.lease.release();
  }

  /** True when a running node (not this one, unless configured alike) is configured for `run`. */
  async configuredFor(run: RunConfiguration): Promise<boolean> {
    const [classKey, key] = presenceKey(run);
    return inTransaction(this.pool, async (client) => {
      // Taken (and let go at the transaction's end) only when no node holds the shared lock.
      const result = await client.query('SELECT pg_try_advisory_xact_lock($1::int, $2::int) AS free', [classKey, key]);
      return z.array(z.object({ free: z.boolean() })).parse(result.rows)[0]?.free === false;
    });
  }
}
