import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import type pg from 'pg';
import { migratePostgres, openPool, PgJobQueue, PgLearningBudget, type LeasedJob } from '../src/store/postgres/index.js';
import { inTransaction } from '../src/store/postgres/transaction.js';
import { postgresSkip, startPostgres, type TestPostgres } from './support/postgres.js';

const NODE_SCRIPT = fileURLToPath(new URL('./support/queue-node.ts', import.meta.url));
const WORK = new Set(['work']);

describe('the team queue on PostgreSQL, shared by several nodes', { skip: postgresSkip() }, () => {
  let server: TestPostgres;
  let counter = 0;
  const pools: pg.Pool[] = [];
  const children: ChildProcess[] = [];

  before(async () => {
    server = await startPostgres();
  });
  after(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await Promise.all(pools.map((pool) => pool.end()));
    server?.stop();
  });

  /** A migrated store with a table the jobs' effects write to (no key on it: a second write would show). */
  const freshStore = async (): Promise<string> => {
    const url = server.createDatabase(`queue_test_${++counter}`);
    const pool = node(url);
    await migratePostgres(pool);
    await pool.query('CREATE TABLE test_effects (job_id BIGINT NOT NULL, node_id TEXT NOT NULL)');
    return url;
  };
  /** A node's own pool (nodes share nothing but the database). */
  const node = (url: string, max = 4): pg.Pool => {
    const pool = openPool(url, { max });
    pools.push(pool);
    return pool;
  };
  const effectsPerJob = async (pool: pg.Pool): Promise<Map<number, number>> =>
    new Map(
      (await pool.query<{ job_id: string; n: string }>('SELECT job_id, count(*) AS n FROM test_effects GROUP BY job_id')).rows.map((row) => [
        Number(row.job_id),
        Number(row.n),
      ]),
    );
  const writeEffect =
    (job: LeasedJob, nodeId: string) =>
    async (client: pg.PoolClient): Promise<void> =>
      void (await client.query('INSERT INTO test_effects (job_id, node_id) VALUES ($1, $2)', [job.id, nodeId]));

  /** A node in its own process; resolves each JSON line it prints to `onEvent`. */
  const spawnNode = (
    url: string,
    nodeId: string,
    mode: 'drain' | 'hold',
    leaseMs: number,
    onEvent: (event: Record<string, unknown>) => void = () => undefined,
  ) => {
    const child = spawn(process.execPath, ['--import', 'tsx', NODE_SCRIPT, url, nodeId, mode, String(leaseMs)], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let buffered = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) if (line.trim()) onEvent(JSON.parse(line) as Record<string, unknown>);
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<{ code: number | null; stderr: string }>((resolve) => child.on('exit', (code) => resolve({ code, stderr })));
    return { child, exited };
  };

  test('three nodes in separate processes drain 60 jobs at once: each job is leased once and its effect written exactly once, none lost', async () => {
    const url = await freshStore();
    const pool = node(url);
    const queue = new PgJobQueue(pool, 'enqueuer', 3);
    for (let index = 0; index < 60; index++) await queue.enqueue('work', { index });
    const leasedBy = new Map<number, string[]>();
    const nodes = ['a', 'b', 'c'].map((name) =>
      spawnNode(url, name, 'drain', 30_000, (event) => {
        if (typeof event.leased === 'number') leasedBy.set(event.leased, [...(leasedBy.get(event.leased) ?? []), name]);
      }),
    );
    for (const { exited } of nodes) {
      const { code, stderr } = await exited;
      assert.equal(code, 0, stderr);
    }
    const effects = await effectsPerJob(pool);
    const jobs = await queue.list('all', 100);
    assert.equal(jobs.length, 60);
    for (const job of jobs) {
      assert.equal(job.status, 'done', `job ${job.id}`);
      assert.equal(effects.get(job.id), 1, `job ${job.id}: one effect`);
      assert.equal(job.lease_token, 1, `job ${job.id} was leased once`);
      assert.equal(leasedBy.get(job.id)?.length, 1, `job ${job.id} was handed to one node`);
    }
    assert.equal(Number((await pool.query('SELECT count(*) AS n FROM job_effects')).rows[0].n), 60);
    assert.ok(new Set([...leasedBy.values()].flat()).size >= 2, 'the work was shared');
  });

  test('a node claiming while another holds the lock on the oldest job takes the next job at once instead of waiting', async () => {
    const url = await freshStore();
    const queue = new PgJobQueue(node(url), 'b', 3);
    const first = (await queue.enqueue('work', { n: 1 }))!;
    const second = (await queue.enqueue('work', { n: 2 }))!;
    // Another node mid-claim (or mid-complete) on the first job: its row is locked until that transaction ends.
    const other = await node(url).connect();
    try {
      await other.query('BEGIN');
      await other.query('SELECT id FROM jobs WHERE id = $1 FOR UPDATE', [first]);
      const claimed = await Promise.race([queue.lease(WORK, 10_000), sleep(2_000).then(() => 'waited' as const)]);
      assert.notEqual(claimed, 'waited', 'the claim waited for the other node');
      assert.equal((claimed as LeasedJob | undefined)?.id, second);
    } finally {
      await other.query('ROLLBACK');
      other.release();
    }
  });

  test('kill -9 of a node holding a lease: nobody takes the job before the deadline, another node completes it after, once', async () => {
    const url = await freshStore();
    const pool = node(url);
    const queue = new PgJobQueue(pool, 'survivor', 3);
    const id = (await queue.enqueue('work', { n: 1 }))!;
    const leaseMs = 1_500;
    let leasedAt = 0;
    const held = new Promise<void>((resolve) => {
      const { child } = spawnNode(url, 'doomed', 'hold', leaseMs, (event) => {
        if (event.leased === id) {
          leasedAt = Date.now();
          child.kill('SIGKILL');
          resolve();
        }
      });
    });
    await held;
    assert.equal(await queue.lease(WORK, 10_000), undefined, 'the dead node still holds the lease');
    let job: LeasedJob | undefined;
    while (!job && Date.now() - leasedAt < leaseMs + 5_000) {
      await sleep(50);
      job = await queue.lease(WORK, 10_000);
    }
    assert.ok(job, 'no node took the job after the lease deadline');
    assert.ok(Date.now() - leasedAt >= leaseMs - 300, `taken ${Date.now() - leasedAt} ms after the lease began`);
    assert.equal(job.id, id);
    assert.equal(job.leaseToken, 2);
    assert.equal(job.attempts, 2, 'the dead node’s attempt counts');
    assert.equal(await queue.complete(job, { effect: writeEffect(job, 'survivor') }), 'done');
    assert.deepEqual([...(await effectsPerJob(pool))], [[id, 1]]);
    const row = (await queue.get(id))!;
    assert.equal(row.status, 'done');
    assert.equal(row.leased_by, 'survivor');
  });

  test('a stale worker whose lease expired and was taken over is told lease_lost and writes nothing; a heartbeat keeps a lease from being taken', async () => {
    const url = await freshStore();
    const a = new PgJobQueue(node(url), 'a', 3);
    const bPool = node(url);
    const b = new PgJobQueue(bPool, 'b', 3);
    const id = (await a.enqueue('work', { n: 1 }))!;

    const kept = (await a.lease(WORK, 300))!;
    for (let beat = 0; beat < 5; beat++) {
      await sleep(120);
      assert.equal(await a.extendLease(kept, 300), true);
      assert.equal(await b.lease(WORK, 300), undefined, 'a heartbeating lease is not taken');
    }

    await sleep(400); // a stalls past its deadline
    const taken = (await b.lease(WORK, 10_000))!;
    assert.equal(taken.id, id);
    assert.equal(taken.leaseToken, kept.leaseToken + 1);
    let staleEffects = 0;
    const staleEffect = async (client: pg.PoolClient): Promise<void> => {
      staleEffects++;
      await writeEffect(kept, 'a')(client);
    };
    assert.equal(await a.complete(kept, { effect: staleEffect, tokensUsed: 99 }), 'lease_lost');
    assert.equal(await a.fail(kept, 'late failure', { retryable: true }), 'lease_lost');
    assert.equal(await a.release(kept), false);
    assert.equal(await a.extendLease(kept, 10_000), false);
    assert.equal(staleEffects, 0, 'the stale effect never ran');
    const row = (await b.get(id))!;
    assert.deepEqual([row.status, row.leased_by, row.tokens_used, row.last_error], ['leased', 'b', 0, null], 'the stale writes changed nothing');

    assert.equal(await b.complete(taken, { effect: writeEffect(taken, 'b') }), 'done');
    assert.equal(await b.complete(taken, { effect: writeEffect(taken, 'b') }), 'lease_lost', 'a done job cannot be completed twice');
    assert.deepEqual([...(await effectsPerJob(bPool))], [[id, 1]]);
  });

  test('two nodes racing on 20 expired leases (the old holder completing, a new node claiming and completing) write each effect once', async () => {
    const url = await freshStore();
    const aPool = node(url);
    const a = new PgJobQueue(aPool, 'a', 3);
    const b = new PgJobQueue(node(url), 'b', 3);
    for (let index = 0; index < 20; index++) await a.enqueue('work', { index });
    const held: LeasedJob[] = [];
    for (let job = await a.lease(WORK, 200); job; job = await a.lease(WORK, 200)) held.push(job);
    assert.equal(held.length, 20);
    await sleep(300);
    const outcomes = new Map<number, string[]>();
    const note = (id: number, outcome: string): void => void outcomes.set(id, [...(outcomes.get(id) ?? []), outcome]);
    await Promise.all([
      ...held.map(async (job) => note(job.id, `a:${await a.complete(job, { effect: writeEffect(job, 'a') })}`)),
      (async () => {
        for (let job = await b.lease(WORK, 10_000); job; job = await b.lease(WORK, 10_000))
          note(job.id, `b:${await b.complete(job, { effect: writeEffect(job, 'b') })}`);
      })(),
    ]);
    const effects = await effectsPerJob(aPool);
    for (const job of held) {
      assert.equal(effects.get(job.id), 1, `job ${job.id}: one effect`);
      assert.equal(outcomes.get(job.id)!.filter((outcome) => outcome.endsWith(':done')).length, 1, `job ${job.id}: ${outcomes.get(job.id)!.join(', ')}`);
    }
    assert.deepEqual(await a.counts(), { queued: 0, leased: 0, done: 20, dead: 0 });
  });

  test('jobs sharing an idempotency key write one effect between them; a throwing effect rolls the completion back', async () => {
    const url = await freshStore();
    const pool = node(url);
    const queue = new PgJobQueue(pool, 'a', 3);
    await queue.enqueue('work', { n: 1 }, { idempotencyKey: 'distill:s1' });
    const first = (await queue.lease(WORK, 10_000))!;
    assert.equal(first.idempotencyKey, 'distill:s1');
    await assert.rejects(queue.complete(first, { effect: () => Promise.reject(new Error('effect broke')) }), /effect broke/);
    assert.equal((await queue.get(first.id))!.status, 'leased', 'nothing of the completion was kept');
    assert.equal(await queue.complete(first, { effect: writeEffect(first, 'a') }), 'done');
    await queue.enqueue('work', { n: 2 }, { idempotencyKey: 'distill:s1' });
    const second = (await queue.lease(WORK, 10_000))!;
    let ran = false;
    assert.equal(await queue.complete(second, { effect: () => Promise.resolve(void (ran = true)) }), 'duplicate');
    assert.equal(ran, false);
    assert.equal((await queue.get(second.id))!.status, 'done');
    assert.deepEqual([...(await effectsPerJob(pool))], [[first.id, 1]]);
  });

  test('an ask for a running job (rerunIfRunning) is never lost: made while its effect runs it marks the job, made once the completion holds the row it waits for that commit and then queues a fresh job', async () => {
    const url = await freshStore();
    const worker = new PgJobQueue(node(url), 'a', 3);
    const writerPool = node(url);
    const writer = new PgJobQueue(writerPool, 'b', 3);
    const ask = (n = 1) => writer.enqueue('work', { n }, { dedupeKey: 'catch-up', rerunIfRunning: true });
    const queued = async () => (await worker.list('queued')).map((row) => row.id);
    const payloadOf = async (id: number) => JSON.parse((await worker.get(id))!.payload) as unknown;

    // Asked while it runs: the job is queued again once it is done, with the latest ask's payload.
    const first = await ask();
    assert.equal(await ask(2), undefined, 'a queued job stands for the second ask');
    assert.deepEqual(await payloadOf(first!), { n: 2 }, 'and takes its payload');
    const running = (await worker.lease(WORK, 10_000))!;
    assert.equal(running.id, first);
    assert.equal(await ask(3), undefined, 'the running job holds the key');
    assert.deepEqual(await queued(), []);
    assert.equal(await worker.complete(running), 'done');
    const [rerun] = await queued();
    assert.ok(rerun !== undefined && rerun > running.id, 'done: a fresh copy is queued');
    assert.deepEqual(await payloadOf(rerun), { n: 3 }, 'the copy carries the latest ask');

    // Asked while its completion runs the effect: the row is not locked yet, so the ask marks the job
    // at once, and the completion queues the copy.
    const again = (await worker.lease(WORK, 10_000))!;
    assert.equal(again.id, rerun);
    let askedInside: number | undefined | 'waited' = 'waited';
    const outcome = await worker.complete(again, {
      effect: async () => void (askedInside = await Promise.race([ask(), sleep(2_000).then(() => 'waited' as const)])),
    });
    assert.equal(outcome, 'done');
    assert.equal(askedInside, undefined, 'the ask marked the running job without waiting for the completion');
    const [copy] = await queued();
    assert.ok(copy !== undefined && copy > again.id, 'the completion queued the copy');

    // Asked once a completion holds the row (marking it done): the ask waits for the commit, then queues a job of its own.
    const last = (await worker.lease(WORK, 10_000))!;
    assert.equal(last.id, copy);
    let asked: Promise<number | undefined> | undefined;
    let settledInside = true;
    await inTransaction(writerPool, async (client) => {
      await client.query(`UPDATE jobs SET status = 'done' WHERE id = $1`, [last.id]);
      let settled = false;
      asked = ask();
      void asked.then(() => (settled = true));
      await sleep(300);
      settledInside = settled;
    });
    assert.equal(settledInside, false, 'the ask waited for the completing transaction');
    const afterCommit = await asked!;
    assert.ok(afterCommit !== undefined && afterCommit > last.id, 'then it queued a new job');
    assert.deepEqual(await queued(), [afterCommit], 'exactly one job is queued: no copy beside it');

    // Without the option an ask while it runs is a no-op, as before.
    const plain = (await worker.lease(WORK, 10_000))!;
    assert.equal(await writer.enqueue('work', {}, { dedupeKey: 'catch-up' }), undefined);
    await worker.complete(plain);
    assert.deepEqual(await queued(), []);
  });

  test('a transaction holding a lock that asks a job to rerun does not deadlock with that job completing, whose effect waits for the same lock', async () => {
    // As a memory write (under its scope's lock) asks memory.search_keys to rerun while that job's
    // effect waits for the scope's lock to re-index: the job's row was locked before the effect.
    const url = await freshStore();
    const worker = new PgJobQueue(node(url), 'a', 3);
    const writerPool = node(url);
    const writer = new PgJobQueue(writerPool, 'b', 3);
    await worker.enqueue('work', {}, { dedupeKey: 'catch-up' });
    const job = (await worker.lease(WORK, 10_000))!;
    const scopeLock = (client: pg.PoolClient) => client.query('SELECT pg_advisory_xact_lock(4242)');
    const completing = worker.complete(job, {
      effect: async (client) => {
        await sleep(200);
        await scopeLock(client);
      },
    });
    await sleep(50);
    const writing = inTransaction(writerPool, async (client) => {
      await scopeLock(client);
      await sleep(300);
      return writer.enqueue('work', {}, { dedupeKey: 'catch-up', rerunIfRunning: true }, client);
    });
    assert.deepEqual(await Promise.all([completing, writing]), ['done', undefined]);
    const [copy, done] = await worker.list('all');
    assert.deepEqual([copy?.status, done?.id, done?.status], ['queued', job.id, 'done'], 'the ask was seen: one copy queued');
  });

  test('a job asked to rerun that fails for good is buried with its rerun copy or not at all: a failure queuing the copy leaves it running', async () => {
    const url = await freshStore();
    const pool = node(url);
    const queue = new PgJobQueue(pool, 'a', 1);
    await queue.enqueue('work', {}, { dedupeKey: 'catch-up', maxAttempts: 1 });
    const job = (await queue.lease(WORK, 10_000))!;
    assert.equal(await queue.enqueue('work', {}, { dedupeKey: 'catch-up', rerunIfRunning: true }), undefined);
    // The copy's insert fails (as a dropped connection would between the two writes).
    await pool.query(`CREATE FUNCTION refuse_copy() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no copy'; END $$`);
    await pool.query('CREATE TRIGGER refuse_copy BEFORE INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION refuse_copy()');
    await assert.rejects(queue.fail(job, 'boom', { retryable: false }), /no copy/);
    assert.deepEqual(
      (await pool.query<{ status: string; rerun: number }>('SELECT status, rerun FROM jobs')).rows,
      [{ status: 'leased', rerun: 1 }],
      'nothing was written: the lease runs out and the job runs again, still asked to rerun',
    );
    await pool.query('DROP TRIGGER refuse_copy ON jobs');
    assert.equal(await queue.fail(job, 'boom', { retryable: false }), 'dead');
    assert.deepEqual((await pool.query<{ status: string }>('SELECT status FROM jobs ORDER BY id')).rows, [{ status: 'dead' }, { status: 'queued' }]);
  });

  test('concurrent budget reservations from three nodes never add up past the daily cap; settles, expiry and a second settle count right', async () => {
    const url = await freshStore();
    const budgets = ['a', 'b', 'c'].map((name) => new PgLearningBudget(node(url, 8), 1_000, name));
    const granted = (
      await Promise.all(budgets.flatMap((budget) => Array.from({ length: 12 }, () => budget.reserve('skill_evolution', 100, { ttlMs: 60_000 }))))
    ).filter((grant) => grant !== undefined);
    assert.equal(granted.length, 10, 'exactly the cap was granted');
    assert.equal((await budgets[0]!.summary()).reservedToday, 1_000);
    assert.match((await budgets[1]!.pauseReason()) ?? '', /daily learning budget reached \(1000 of 1000 tokens today/);
    assert.equal(await budgets[2]!.reserve('skill_evolution', 1), undefined);

    // Two calls spent less than reserved: what they left is free again, and a settle counts once.
    assert.equal(await budgets[0]!.settle(granted[0]!, 40), true);
    assert.equal(await budgets[1]!.settle(granted[0]!, 40), false, 'a second settle of one reservation');
    assert.equal(await budgets[2]!.settle(granted[1]!, 60), true);
    const summary = await budgets[0]!.summary();
    assert.deepEqual([summary.tokensToday, summary.callsToday, summary.reservedToday], [100, 2, 800]);
    const more = (await Promise.all(budgets.map((budget) => budget.reserve('skill_evolution', 60)))).filter((grant) => grant !== undefined);
    assert.equal(more.length, 1, 'room for one more call of 60 (100 left), not three');

    // A node that dies never settles: its reservation expires and stops holding the budget.
    const url2 = await freshStore();
    const [mortal, other] = [new PgLearningBudget(node(url2), 500, 'mortal'), new PgLearningBudget(node(url2), 500, 'other')];
    assert.ok(await mortal.reserve('judge', 500, { ttlMs: 200 }));
    assert.equal(await other.reserve('judge', 100), undefined);
    await sleep(300);
    assert.ok(await other.reserve('judge', 100), 'the expired reservation no longer counts');
  });
});
