/**
 * One team-queue node in its own process, for tests that need a real `kill -9`.
 * argv: URL NODE_ID MODE LEASE_MS. Prints one JSON line per event on stdout.
 *   drain: leases jobs of kind 'work' until none is queued or leased, completing each with an
 *          effect (a row in test_effects); exits 0.
 *   hold:  leases one job, says so, and heartbeats until killed.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { openPool } from '../../src/store/postgres/connect.js';
import { PgJobQueue } from '../../src/store/postgres/job-queue.js';

const [url, nodeId, mode, leaseText] = process.argv.slice(2);
if (!url || !nodeId || !mode || !leaseText) throw new Error('usage: queue-node URL NODE_ID drain|hold LEASE_MS');
const leaseMs = Number(leaseText);
const pool = openPool(url, { max: 2 });
const queue = new PgJobQueue(pool, nodeId, 3);
const kinds = new Set(['work']);
const say = (event: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify({ node: nodeId, ...event })}\n`);

if (mode === 'hold') {
  let job = await queue.lease(kinds, leaseMs);
  while (!job) {
    await sleep(20);
    job = await queue.lease(kinds, leaseMs);
  }
  say({ leased: job.id, token: job.leaseToken });
  for (;;) {
    await sleep(leaseMs / 4);
    await queue.extendLease(job, leaseMs);
  }
}

for (;;) {
  const job = await queue.lease(kinds, leaseMs);
  if (!job) {
    const counts = await queue.counts();
    if (counts.queued + counts.leased === 0) break;
    await sleep(10);
    continue;
  }
  say({ leased: job.id, token: job.leaseToken });
  await sleep(Math.random() * 5); // the work; nodes interleave
  const outcome = await queue.complete(job, {
    effect: async (client) => void (await client.query('INSERT INTO test_effects (job_id, node_id) VALUES ($1, $2)', [job.id, nodeId])),
  });
  say({ completed: job.id, outcome });
}
await pool.end();
