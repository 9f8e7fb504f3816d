import assert from 'node:assert/strict';
import { existsSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { loadConfig } from '../src/config/index.js';
import { ConversationStore } from '../src/conversation/index.js';
import type { Logger } from '../src/logging/index.js';
import { recordingSettings } from '../src/runtime/recording.js';
import { openDatabase, WalCheckpointer, type Db } from '../src/store/index.js';
import type { CheckpointEvent } from '../src/store/wal-checkpoints.js';
import { tempHome, waitFor } from './support/proxy.js';
import { finishedTurn } from './support/turns.js';

const WAL_LIMIT_BYTES = 256 * 1024;

/**
 * A store and its turn writer thread running the WAL checkpoints (every 100 ms, truncated past
 * 256 KB), as the proxy starts them; `checkpoint` hears what they report.
 */
function writerWithCheckpoints(checkpoint: (event: CheckpointEvent, db: Db) => void) {
  const home = tempHome();
  writeFileSync(join(home, 'config.yaml'), 'memory:\n  auto_extract: false\nskills:\n  auto_evolve: false\n', { mode: 0o600 });
  const config = loadConfig({ env: { METACLAW_HOME: home } });
  const db = openDatabase(config.paths.database);
  // The proxy's connection never checkpoints (store/checkpointer.ts hands the checkpoints off).
  db.pragma('wal_autocheckpoint = 0');
  const conversation = new ConversationStore(db);
  const problems: string[] = [];
  const keepAlive = setInterval(() => {}, 1_000);
  // The compiled worker, as the proxy runs it (a worker thread does not inherit the test's TypeScript loader).
  conversation.startWriterThread(
    new URL('../dist/runtime/turn-writer-worker.js', import.meta.url),
    {
      databasePath: config.paths.database,
      maxAttempts: 3,
      settings: recordingSettings(config),
      checkpoints: { databasePath: config.paths.database, intervalMs: 100, walLimitBytes: WAL_LIMIT_BYTES },
    },
    {
      enqueued: () => {},
      triggerFailed: (trigger) => problems.push(trigger),
      died: (error) => problems.push(error.message),
      sendFailed: (error) => problems.push(error.message),
      checkpoint: (event) => checkpoint(event, db),
    },
  );
  return {
    db,
    databasePath: config.paths.database,
    walPath: `${config.paths.database}-wal`,
    problems,
    /** A turn with a body of 8 KB. */
    record: (index: number) =>
      conversation.recordTurn(finishedTurn(`turn-${index}`, `session-${index % 7}`, `note ${index}: ${'the staging bucket is called heron '.repeat(240)}`)),
    close: async () => {
      await conversation.drain();
      clearInterval(keepAlive);
      db.close();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

test('the turn writer thread runs the WAL checkpoints: past the limit the WAL is checkpointed and truncated, and the proxy hears of it', async () => {
  const events: CheckpointEvent[] = [];
  const writer = writerWithCheckpoints((event) => events.push(event));
  try {
    // Until the WAL has passed the limit.
    for (let index = 0; statSync(writer.walPath).size <= WAL_LIMIT_BYTES && index < 2_000; index++) await writer.record(index);
    assert.ok(statSync(writer.walPath).size > WAL_LIMIT_BYTES, 'the WAL passed the limit');
    await waitFor(() => events.some((event) => event.type === 'truncated'), 5_000);
    const truncated = events.find((event) => event.type === 'truncated');
    assert.ok(truncated && truncated.type === 'truncated' && truncated.walBytes > WAL_LIMIT_BYTES);
    assert.ok(!existsSync(writer.walPath) || statSync(writer.walPath).size < WAL_LIMIT_BYTES, 'the WAL was cut back');
    assert.deepEqual(writer.problems, []);
  } finally {
    await writer.close();
  }
});

test('a WAL a reader keeps from being cut does not stall the turn writer: the truncation backs off, the proxy warns once, and cuts it once the reader ends', async () => {
  const events: CheckpointEvent[] = [];
  const logged: Array<{ level: string; message: string }> = [];
  const capture = (level: string) => (_fields: unknown, message: string) => logged.push({ level, message });
  const logger = { warn: capture('warn'), info: capture('info'), debug: capture('debug'), error: capture('error') } as unknown as Logger;
  let checkpointer: WalCheckpointer | undefined;
  const writer = writerWithCheckpoints((event, db) => {
    events.push(event);
    // The proxy's side, which logs what the writer's thread reports.
    checkpointer ??= new WalCheckpointer(db, writer.databasePath, logger);
    checkpointer.report(event);
  });
  // A `sqlite3` shell left in a transaction, say: its snapshot keeps the WAL from being cut.
  const reader = new Database(writer.databasePath);
  try {
    for (let index = 0; index < 5; index++) await writer.record(index);
    reader.exec('BEGIN');
    reader.prepare('SELECT count(*) FROM turns').get();
    const start = Date.now();
    let recorded = 0;
    while (Date.now() - start < 4_000) await writer.record(5 + recorded++);
    assert.ok(statSync(writer.walPath).size > WAL_LIMIT_BYTES, 'the WAL passed the limit');
    const busy = events.filter((event) => event.type === 'busy');
    assert.ok(busy.length >= 1, `the proxy hears the WAL could not be cut: ${JSON.stringify(events)}`);
    // Each try holds the writer's thread for busy_timeout (1 s): tried every 250 ms, it recorded about one turn a second.
    assert.ok(busy.length <= 3, `tries back off: ${busy.length} in 4 s`);
    assert.ok(recorded >= 15, `turns recorded while the reader held the WAL: ${recorded} in 4 s`);
    assert.deepEqual(
      logged.filter((line) => line.level === 'warn').map((line) => line.message.slice(0, 60)),
      ['the WAL is over its limit but cannot be truncated: another c'],
      'one warning, not one per try',
    );
    const blocked = checkpointer!.status();
    assert.equal(blocked.blocked, true, '/status says the WAL cannot be cut');
    assert.ok((blocked.wal_bytes ?? 0) > WAL_LIMIT_BYTES, `and how big it is: ${blocked.wal_bytes}`);

    reader.exec('COMMIT');
    const before = events.length;
    await waitFor(() => events.slice(before).some((event) => event.type === 'truncated'), 10_000);
    assert.ok(!existsSync(writer.walPath) || statSync(writer.walPath).size < WAL_LIMIT_BYTES, 'the WAL was cut back once the reader ended');
    assert.ok(logged.some((line) => line.level === 'info' && line.message === 'the WAL is truncated again'));
    assert.equal(checkpointer!.status().blocked, false);
    assert.deepEqual(writer.problems, []);
  } finally {
    if (reader.inTransaction) reader.exec('COMMIT');
    reader.close();
    await writer.close();
  }
});

test('a checkpoint that fails is counted for /status with its message, not only logged', () => {
  const logged: string[] = [];
  const logger = { warn: (_fields: unknown, message: string) => logged.push(message) } as unknown as Logger;
  const home = tempHome();
  const db = openDatabase(join(home, 'metaclaw.db'));
  try {
    const checkpointer = new WalCheckpointer(db, join(home, 'metaclaw.db'), logger);
    assert.deepEqual(checkpointer.status(), { failures: 0, blocked: false, wal_bytes: null, last_error: null });
    checkpointer.report({ type: 'error', message: 'disk I/O error', code: 'SQLITE_IOERR', retryInMs: 1_000 });
    checkpointer.report({ type: 'error', message: 'disk I/O error again', code: 'SQLITE_IOERR', retryInMs: 2_000 });
    assert.deepEqual(checkpointer.status(), { failures: 2, blocked: false, wal_bytes: null, last_error: 'disk I/O error again' });
    assert.equal(logged.length, 2);
  } finally {
    db.close();
    rmSync(home, { recursive: true, force: true });
  }
});
