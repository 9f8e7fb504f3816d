import assert from 'node:assert/strict';
import { existsSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../src/config/index.js';
import { ConversationStore } from '../src/conversation/index.js';
import { recordingSettings } from '../src/runtime/recording.js';
import { openDatabase } from '../src/store/index.js';
import type { CheckpointEvent } from '../src/store/wal-checkpoints.js';
import { tempHome, waitFor } from './support/proxy.js';
import { finishedTurn } from './support/turns.js';

test('the turn writer thread runs the WAL checkpoints: past the limit the WAL is checkpointed and truncated, and the proxy hears of it', async () => {
  const home = tempHome();
  writeFileSync(join(home, 'config.yaml'), 'memory:\n  auto_extract: false\nskills:\n  auto_evolve: false\n', { mode: 0o600 });
  const config = loadConfig({ env: { METACLAW_HOME: home } });
  const db = openDatabase(config.paths.database);
  // The proxy's connection never checkpoints (store/checkpointer.ts hands the checkpoints off).
  db.pragma('wal_autocheckpoint = 0');
  const conversation = new ConversationStore(db);
  const events: CheckpointEvent[] = [];
  const problems: string[] = [];
  const keepAlive = setInterval(() => {}, 1_000);
  const walLimitBytes = 256 * 1024;
  // The compiled worker, as the proxy runs it (a worker thread does not inherit the test's TypeScript loader).
  conversation.startWriterThread(
    new URL('../dist/runtime/turn-writer-worker.js', import.meta.url),
    {
      databasePath: config.paths.database,
      maxAttempts: 3,
      settings: recordingSettings(config),
      checkpoints: { databasePath: config.paths.database, intervalMs: 100, walLimitBytes },
    },
    {
      enqueued: () => {},
      triggerFailed: (trigger) => problems.push(trigger),
      died: (error) => problems.push(error.message),
      sendFailed: (error) => problems.push(error.message),
      checkpoint: (event) => events.push(event),
    },
  );
  const walPath = `${config.paths.database}-wal`;
  try {
    // Turns with bodies of 8 KB each, until the WAL has passed the limit.
    for (let index = 0; statSync(walPath).size <= walLimitBytes && index < 2_000; index++)
      await conversation.recordTurn(
        finishedTurn(`turn-${index}`, `session-${index % 7}`, `note ${index}: ${'the staging bucket is called heron '.repeat(240)}`),
      );
    assert.ok(statSync(walPath).size > walLimitBytes, 'the WAL passed the limit');
    await waitFor(() => events.some((event) => event.type === 'truncated'), 5_000);
    const truncated = events.find((event) => event.type === 'truncated');
    assert.ok(truncated && truncated.type === 'truncated' && truncated.walBytes > walLimitBytes);
    assert.ok(!existsSync(walPath) || statSync(walPath).size < walLimitBytes, 'the WAL was cut back');
    assert.deepEqual(problems, []);
  } finally {
    await conversation.drain();
    clearInterval(keepAlive);
    db.close();
    rmSync(home, { recursive: true, force: true });
  }
});
