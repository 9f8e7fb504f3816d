import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import OpenAI from 'openai';
import { loadConfig } from '../src/config/index.js';
import { ConversationStore } from '../src/conversation/index.js';
import { recordingSettings } from '../src/runtime/recording.js';
import { openDatabase } from '../src/store/index.js';
import { tempHome, waitFor, type ProxyHandle } from './support/proxy.js';
import { startScriptedProxy } from './support/scripted-proxy.js';
import { finishedTurn } from './support/turns.js';

test('a turn the store refuses as busy is written by the writer thread once the store frees up, not reported as a storage error', async () => {
  const home = tempHome();
  writeFileSync(join(home, 'config.yaml'), 'memory:\n  auto_extract: false\nskills:\n  auto_evolve: false\n', { mode: 0o600 });
  const config = loadConfig({ env: { METACLAW_HOME: home } });
  const db = openDatabase(config.paths.database);
  const conversation = new ConversationStore(db);
  const reported: string[] = [];
  // The writer thread does not keep a process alive by itself (the proxy's server does).
  const keepAlive = setInterval(() => {}, 1_000);
  // The compiled worker, as the proxy runs it (a worker thread does not inherit the test's TypeScript loader).
  conversation.startWriterThread(
    new URL('../dist/runtime/turn-writer-worker.js', import.meta.url),
    { databasePath: config.paths.database, maxAttempts: 3, settings: recordingSettings(config) },
    {
      enqueued: () => {},
      triggerFailed: (trigger) => reported.push(trigger),
      died: (error) => reported.push(error.message),
      sendFailed: (error) => reported.push(error.message),
    },
  );
  // Another connection (a backup, a `sqlite3` shell, a WAL checkpoint) holds the write lock for
  // longer than the writer's busy_timeout (5 s): the writer's first try is refused as busy.
  await conversation.recordTurn(finishedTurn('turn-first', 'busy-session', 'written while the store is free'));
  const other = new Database(config.paths.database);
  try {
    other.exec('BEGIN IMMEDIATE');
    const recorded = conversation.recordTurn(finishedTurn('turn-busy', 'busy-session', 'written while another connection writes'));
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    other.exec('COMMIT');
    await recorded;
    const row = db.prepare<[string], { id: string }>('SELECT id FROM turns WHERE id = ?').get('turn-busy');
    assert.equal(row?.id, 'turn-busy', 'the turn is in the store');
    assert.deepEqual(reported, []);
  } finally {
    if (other.inTransaction) other.exec('ROLLBACK');
    other.close();
    await conversation.drain();
    clearInterval(keepAlive);
    db.close();
    rmSync(home, { recursive: true, force: true });
  }
});

/** A proxy on a scripted upstream, a second connection to its database, and a way to send it turns. */
interface LockableProxy {
  proxy: ProxyHandle;
  /** Another connection to the proxy's SQLite file: what holds the lock. */
  other: Database.Database;
  status: () => Promise<any>;
  /** Sends one turn (sessions `<prefix>-0` … `<prefix>-<n-1>` in turn); resolves to its latency in ms. */
  ask: () => Promise<number>;
  /** Turns sent so far. */
  sent: () => number;
}

/** Runs `body` against a fresh proxy (learning from sessions and memory extraction off), then lets the lock go and stops it. */
async function withLockableProxy(sessionPrefix: string, sessions: number, body: (context: LockableProxy) => Promise<void>): Promise<void> {
  const { proxy, close } = await startScriptedProxy({ config: { skills: { auto_evolve: false }, memory: { auto_extract: false } } });
  const openai = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
  const other = new Database(join(proxy.home, 'metaclaw.db'));
  let sent = 0;
  const ask = async () => {
    const started = performance.now();
    const answer = await openai.chat.completions.create(
      { model: 'm', messages: [{ role: 'user', content: `Note ${sent} for later: the staging bucket is called heron-${sent}.` }] },
      { headers: { 'X-Session-Id': `${sessionPrefix}-${sent % sessions}` } },
    );
    sent++;
    assert.equal(answer.choices[0]!.message.content, 'Hello from the scripted upstream.');
    return performance.now() - started;
  };
  const status = async () => (await (await fetch(`${proxy.url}/status`)).json()) as any;
  try {
    await body({ proxy, other, status, ask, sent: () => sent });
  } finally {
    if (other.inTransaction) other.exec('ROLLBACK');
    other.close();
    await close();
  }
}

test('another connection holding the write lock for seconds never stalls requests: learning pauses and resumes, every turn is recorded', async () => {
  await withLockableProxy('busy', 3, async ({ other, status, ask, sent }) => {
    await ask();
    // Each turn queues a learning job (its memory unit), and the runner takes jobs in the gaps
    // between requests: with gaps of 300 ms it tries to write while the lock is held.
    other.exec('BEGIN IMMEDIATE');
    const latencies: number[] = [];
    const heldUntil = Date.now() + 6_000;
    while (Date.now() < heldUntil) {
      latencies.push(await ask());
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    other.exec('COMMIT');
    assert.ok(Math.max(...latencies) < 1_500, `slowest request while the lock was held: ${Math.round(Math.max(...latencies))} ms`);

    const settled = await waitFor(async () => {
      const current = await status();
      return current.store.writable && current.sessions.turns === sent() && current.queue.queued === 0 ? current : undefined;
    }, 20_000);
    assert.equal(settled.store.recording.held, 0);
  });
});

test('a lock held for a moment by another connection pauses recording and learning for about as long: both resume within a second of its release', async () => {
  await withLockableProxy('moment', 2, async ({ proxy, other, status, ask, sent }) => {
    await ask();
    await ask();
    await waitFor(async () => (await status()).sessions.turns === 2);

    // Like a `sqlite3` shell's short write or a backup step. The agent ends a session meanwhile: the
    // proxy's own connection is refused after its 200 ms busy timeout, which starts the pause at a
    // known moment (a learning job meeting the lock would start it whenever the runner next polls).
    other.exec('BEGIN IMMEDIATE');
    const ended = await fetch(`${proxy.url}/v1/sessions/moment-0/end`, { method: 'POST' });
    assert.equal(ended.status, 503, 'ending the session met the lock');
    const release = new Promise<number>((resolve) =>
      setTimeout(() => {
        other.exec('COMMIT');
        resolve(performance.now());
      }, 400),
    );
    // Requests keep flowing while the lock is held (their turns wait to be written).
    const latencies: number[] = [];
    let held = true;
    void release.then(() => (held = false));
    while (held) {
      latencies.push(await ask());
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const releasedAt = await release;
    // Polled, not waited out: the moment the store is writable again is what is measured.
    const resumed = await waitFor(
      async () => {
        const current = await status();
        return current.store.writable ? current : undefined;
      },
      10_000,
      10,
    );
    const resumedAfterMs = performance.now() - releasedAt;
    assert.equal(resumed.store.recoveries, 1, 'the lock paused the store once');
    assert.match(resumed.store.last_error.code, /^SQLITE_BUSY/);
    assert.equal(resumed.learning.paused_reason, null, 'learning resumed');
    // The fixed 2 s probe resumed 1.6 s or more after the release (the pause began ~0.4 s before it);
    // probing from 50 ms on resumes within a few hundred ms even on a slow machine.
    assert.ok(resumedAfterMs < 1_000, `resumed ${Math.round(resumedAfterMs)} ms after the lock was let go`);
    assert.ok(Math.max(...latencies) < 1_500, `slowest request while the lock was held: ${Math.round(Math.max(...latencies))} ms`);

    const settled = await waitFor(async () => {
      const current = await status();
      return current.sessions.turns === sent() && current.queue.queued === 0 ? current : undefined;
    }, 20_000);
    assert.equal(settled.store.recording.held, 0);
    assert.equal(settled.store.writable, true);
  });
});

test('while another connection holds the lock for seconds, probing for its release stalls no request: only the write that met it waited', async () => {
  await withLockableProxy('probing', 2, async ({ proxy, other, status, ask }) => {
    await ask();
    await waitFor(async () => (await status()).sessions.turns === 1);
    other.exec('BEGIN IMMEDIATE');
    // The pause starts here, at a known moment (the session end waits out the 200 ms busy timeout).
    const ended = await fetch(`${proxy.url}/v1/sessions/probing-0/end`, { method: 'POST' });
    assert.equal(ended.status, 503, 'ending the session met the lock');
    // Requests back to back for 4 s, while the store is probed 8 times or more. A probe that waited
    // the full busy timeout on the event loop held every request in flight for ~200 ms each time
    // (5 or 6 of them here); one that gives up at once holds none.
    const latencies: number[] = [];
    const heldUntil = Date.now() + 4_000;
    while (Date.now() < heldUntil) {
      latencies.push(await ask());
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const releasedAt = performance.now();
    other.exec('COMMIT');
    const stalled = latencies.filter((ms) => ms >= 150).map(Math.round);
    assert.ok(stalled.length <= 1, `${stalled.length} of ${latencies.length} requests took 150 ms or more while the lock was held: ${stalled.join(', ')} ms`);
    // Probes come every 500 ms at most while busy: learning resumes within that of the release.
    await waitFor(async () => ((await status()).store.writable ? true : undefined), 10_000, 10);
    const resumedAfterMs = performance.now() - releasedAt;
    assert.ok(resumedAfterMs < 1_000, `resumed ${Math.round(resumedAfterMs)} ms after the lock was let go`);
  });
});

test('metaclaw doctor, while another connection holds the write lock, names the lock as the cause, not a full disk', async () => {
  await withLockableProxy('doctor-lock', 1, async ({ proxy, other, status, ask }) => {
    await ask();
    await waitFor(async () => (await status()).sessions.turns === 1);
    other.exec('BEGIN IMMEDIATE');
    const ended = await fetch(`${proxy.url}/v1/sessions/doctor-lock-0/end`, { method: 'POST' });
    assert.equal(ended.status, 503, 'ending the session met the lock');
    const result = await proxy.cli(['doctor']);
    assert.match(result.stdout, /proxy: .*cannot write its store .*SQLITE_BUSY/);
    assert.match(result.stdout, /another program holds the write lock of .*metaclaw\.db/);
    assert.doesNotMatch(result.stdout, /free some space on the disk/);
    const shown = await proxy.cli(['status']);
    assert.match(shown.stdout, /\n {2}store {7}NOT WRITABLE since \S+ \(SQLITE_BUSY[^)]*\), another connection holds its write lock; turns wait/);
  });
});

test('POST /v1/memory/ingest is all or nothing: a store taken by another connection in the middle of it answers 503 with nothing kept (as it says), and the retry stores each turn once', async () => {
  await withLockableProxy('ingest', 1, async ({ proxy, other }) => {
    other.pragma('busy_timeout = 10000');
    // As many as one request takes (MAX_INGEST_TURNS).
    const turns = Array.from({ length: 5_000 }, (_, index) => ({
      role: index % 2 === 0 ? 'user' : 'assistant',
      content: `Note ${index}: shelf ${index % 13} holds box ${index}.`,
    }));
    const ingest = () =>
      fetch(`${proxy.url}/v1/memory/ingest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ session_id: 'bulk', turns }),
      });
    const units = async () => ((await (await fetch(`${proxy.url}/v1/memory/stats`)).json()) as { total_units: number }).total_units;

    const answer = ingest();
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Taken between two of its turns' writes, or once the whole ingest is written; held past the proxy's 200 ms wait.
    other.exec('BEGIN IMMEDIATE');
    await new Promise((resolve) => setTimeout(resolve, 500));
    other.exec('COMMIT');
    const first = await answer;
    const kept = await units();
    if (first.status === 503) {
      assert.equal(kept, 0, 'the 503 says nothing was changed');
      const retried = await ingest();
      assert.equal(retried.status, 200);
    } else assert.equal(first.status, 200);
    assert.equal(await units(), turns.length, `first answer ${first.status}, ${kept} units after it`);
  });
});
