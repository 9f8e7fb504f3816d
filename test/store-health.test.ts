import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { Logger } from '../src/logging/index.js';
import { StoreHealth } from '../src/store/index.js';

/** An error as better-sqlite3 throws it: the SQLite code in `code`. */
function sqliteError(code: string): Error {
  return Object.assign(new Error(code === 'SQLITE_FULL' ? 'database or disk is full' : 'database is locked'), { code });
}

/** The levels and messages a StoreHealth logged. */
function recordingLogger(): { logger: Logger; lines: Array<[string, string]> } {
  const lines: Array<[string, string]> = [];
  const at = (level: string) => (_fields: unknown, message: string) => lines.push([level, message]);
  return { logger: { error: at('error'), warn: at('warn'), info: at('info') } as unknown as Logger, lines };
}

/** Moves the fake clock on in 10 ms steps until the store is writable (each probe settles in a microtask before the next is scheduled). */
async function runUntilWritable(t: TestContext, health: StoreHealth, limitMs: number): Promise<void> {
  for (let elapsed = 0; elapsed < limitMs && !health.writable; elapsed += 10) {
    t.mock.timers.tick(10);
    for (let turn = 0; turn < 5; turn++) await Promise.resolve();
  }
}

/**
 * A StoreHealth on fake timers (from time 0), paused by `firstError`, whose probe fails with
 * `failures` (one code per probe) and then works; returns the times at which it probed.
 */
async function probeTimes(t: TestContext, firstError: string, failures: string[]) {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
  const { logger, lines } = recordingLogger();
  const times: number[] = [];
  const health = new StoreHealth(logger, () => {
    times.push(Date.now());
    const code = failures.shift();
    if (code !== undefined) throw sqliteError(code);
  });
  health.report('learning', sqliteError(firstError));
  await runUntilWritable(t, health, 20_000);
  return { health, times, lines };
}

test('a store paused by a lock is probed after 50 ms, then twice as long each time up to every 500 ms', async (t) => {
  const { health, times, lines } = await probeTimes(t, 'SQLITE_BUSY', Array(8).fill('SQLITE_BUSY'));
  // Probes at 50, +100, +200, +400, then every 500 ms; the ninth works.
  assert.deepEqual(times, [50, 150, 350, 750, 1_250, 1_750, 2_250, 2_750, 3_250]);
  assert.equal(health.writable, true);
  assert.equal(health.busy, false);
  assert.deepEqual(
    lines.map(([level]) => level),
    ['warn', 'info'],
  );
  assert.match(lines[0]![1], /store is busy \(locked by another connection/);
});

test('a full disk is probed every 2 s, and a busy pause that turns into a full disk falls back to 2 s and logs the error', async (t) => {
  const full = await probeTimes(t, 'SQLITE_FULL', ['SQLITE_FULL', 'SQLITE_BUSY', 'SQLITE_FULL']);
  assert.deepEqual(full.times, [2_000, 4_000, 6_000, 8_000], 'a busy error during a full-disk pause does not speed the probe up');
  assert.deepEqual(
    full.lines.map(([level]) => level),
    ['error', 'info'],
  );

  t.mock.timers.reset();
  const turned = await probeTimes(t, 'SQLITE_BUSY', ['SQLITE_BUSY', 'SQLITE_FULL', 'SQLITE_BUSY']);
  assert.deepEqual(turned.times, [50, 150, 2_150, 4_150]);
  assert.deepEqual(
    turned.lines.map(([level]) => level),
    ['warn', 'error', 'info'],
  );
  assert.match(turned.lines[1]![1], /cannot write its store \(SQLITE_FULL/);
});

test('the quick probing starts again from 50 ms for the next busy pause once the store recovered', async (t) => {
  const { health, times } = await probeTimes(t, 'SQLITE_LOCKED_SHAREDCACHE', ['SQLITE_BUSY', 'SQLITE_BUSY', 'SQLITE_BUSY']);
  assert.deepEqual(times, [50, 150, 350, 750]);
  const start = Date.now();
  times.length = 0;
  let failures = 1;
  health.setProbe(() => {
    times.push(Date.now() - start);
    if (failures-- > 0) throw sqliteError('SQLITE_BUSY');
  });
  assert.equal(health.busy, false);
  health.report('recording', sqliteError('SQLITE_BUSY'));
  assert.equal(health.busy, true);
  await runUntilWritable(t, health, 1_000);
  assert.deepEqual(times, [50, 150]);
  assert.equal(health.status().recoveries, 2);
});

test('status says whether a pause is only a lock: busy for SQLITE_BUSY, not for a full disk or once the disk filled meanwhile', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
  const locked = new StoreHealth(recordingLogger().logger);
  locked.report('learning', sqliteError('SQLITE_BUSY'));
  assert.equal(locked.status().busy, true);
  locked.report('recording', sqliteError('SQLITE_FULL'));
  assert.equal(locked.status().busy, false, 'a full disk met during a busy pause is what doctor must name');
  const full = new StoreHealth(recordingLogger().logger);
  full.report('learning', sqliteError('SQLITE_FULL'));
  assert.equal(full.status().busy, false);
  locked.stop();
  full.stop();
});

test('no probe runs after stop, not even one a probe still running at stop would have scheduled', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
  let probes = 0;
  let failProbe: (error: Error) => void = () => {};
  const health = new StoreHealth(recordingLogger().logger, () => {
    probes++;
    return new Promise<void>((_resolve, reject) => (failProbe = reject));
  });
  health.report('learning', sqliteError('SQLITE_BUSY'));
  t.mock.timers.tick(50);
  assert.equal(probes, 1, 'the first probe runs and waits');
  health.stop();
  failProbe(sqliteError('SQLITE_BUSY'));
  for (let turn = 0; turn < 5; turn++) await Promise.resolve();
  t.mock.timers.tick(10_000);
  assert.equal(probes, 1, 'nothing probed after stop');
});
