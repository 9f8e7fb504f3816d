/**
 * A team node's recorder through a long outage of the team store: more answered turns than it
 * holds in memory (10,000) and more bodies than it holds (32 MiB). The turns past those limits wait
 * in the turn journal alone and are read back when the store is back, in this run: nothing waits
 * for the node's next start. The store is a sink that is out of reach until told otherwise; the
 * recorder, the journal and the rebuilding of journaled turns are the node's own.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { SpooledRecorder } from '../src/conversation/spooled-recorder.js';
import { TurnJournal } from '../src/conversation/turn-journal.js';
import type { FinishedTurn } from '../src/conversation/types.js';
import { silentLogger } from '../src/logging/index.js';
import { turnFromJournal } from '../src/proxy/turn-journal-entry.js';
import { appendAnsweredTurn } from './support/journal.js';

class OutageError extends Error {}

/** The team store: out of reach until `up`, then it keeps what it is given, in order. */
class Store {
  up = false;
  readonly stored: FinishedTurn[] = [];

  write(turns: readonly FinishedTurn[]): Promise<unknown[]> {
    if (!this.up) return Promise.reject(new OutageError('connect ECONNREFUSED'));
    this.stored.push(...turns);
    return Promise.resolve(turns.map(() => undefined));
  }
}

/** A turn as the proxy answers it: journaled, then handed to the recorder. */
function answer(journal: TurnJournal, index: number, padding: number): FinishedTurn {
  const { header, request, answer } = appendAnsweredTurn(journal, {
    id: `spool-turn-${index}`,
    sessionId: 'spool-session',
    turnType: 'main',
    sideRequest: null,
    query: `[spool-${index}] What changed in the build?`,
    startedAt: 1_700_000_000_000 + index,
    reply: 'Nothing',
    padding,
  });
  return turnFromJournal(header, request, answer)!;
}

/** A journal in a scratch folder and the store out of reach, for `run`. */
async function inOutage(run: (journal: TurnJournal, store: Store) => Promise<void>): Promise<void> {
  const folder = mkdtempSync(join(tmpdir(), 'metaclaw-spool-'));
  // The recorder's timers do not hold a process open (a server does): this does.
  const alive = setInterval(() => undefined, 1_000);
  try {
    const journal = new TurnJournal(join(folder, 'journal'));
    await run(journal, new Store());
    journal.close();
  } finally {
    clearInterval(alive);
    rmSync(folder, { recursive: true, force: true });
  }
}

test('through an outage past the memory limits (10,000 turns, 32 MiB of bodies) every turn is stored once the store is back, in order and with its full body, without a restart', async () => {
  await inOutage(async (journal, store) => {
    const recorder = new SpooledRecorder({
      sink: store,
      journal,
      rebuild: turnFromJournal,
      isOutage: (error) => error instanceof OutageError,
      logger: silentLogger(),
      retryMs: 20,
      maxRetryMs: 50,
      batch: 500,
    });
    const total = 10_100;
    // Five turns with 8 MiB bodies early in the outage: together past the 32 MiB held in memory.
    const big = new Set([3, 4, 5, 6, 7]);
    const sent: FinishedTurn[] = [];
    for (let index = 0; index < total; index++) {
      const turn = answer(journal, index, big.has(index) ? 8 * 1024 * 1024 : 0);
      sent.push(turn);
      await recorder.recordTurn(turn);
    }
    const waiting = recorder.status();
    assert.equal(waiting.degraded, true);
    assert.equal(waiting.held, total, 'every turn waits (some on disk only)');
    assert.equal(waiting.held_on_disk, total - 10_000, 'past 10,000 turns or 32 MiB of bodies in memory, turns wait in the journal alone');

    store.up = true;
    const deadline = Date.now() + 60_000;
    while (store.stored.length < total && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(store.stored.length, total, 'every turn is stored once the store is back');
    assert.deepEqual(
      store.stored.map((turn) => turn.id),
      sent.map((turn) => turn.id),
      'in the order they were answered',
    );
    for (const [index, turn] of store.stored.entries())
      assert.equal(turn.payload.received.text, sent[index]!.payload.received.text, `turn ${index} is stored with its full body`);
    const after = recorder.status();
    assert.equal(after.degraded, false);
    assert.equal(after.held, 0);
    assert.equal(after.turns_dropped, 0);
    assert.equal(after.bodies_dropped, 0);
    assert.equal(journal.pendingTurns, 0, 'the journal holds nothing more for the next start');
  });
});

test('while the store is out of reach, retries do not read the turns waiting in the journal again: each is read back once, when the store is back, and stored once', async () => {
  await inOutage(async (journal, store) => {
    let tries = 0;
    const sink = {
      write: (turns: readonly FinishedTurn[]) => {
        tries++;
        return store.write(turns);
      },
    };
    const readBack: string[] = [];
    const recorder = new SpooledRecorder({
      sink,
      journal,
      rebuild: (header, request, answer) => {
        const turn = turnFromJournal(header, request, answer);
        if (turn) readBack.push(turn.id);
        return turn;
      },
      isOutage: (error) => error instanceof OutageError,
      logger: silentLogger(),
      retryMs: 10,
      maxRetryMs: 10,
    });
    // Six turns with 8 MiB bodies: past the 32 MiB held in memory, the last ones wait in the journal alone.
    const sent: FinishedTurn[] = [];
    for (let index = 0; index < 8; index++) {
      const turn = answer(journal, index, index >= 1 && index <= 6 ? 8 * 1024 * 1024 : 0);
      sent.push(turn);
      await recorder.recordTurn(turn);
    }
    const onDisk = recorder.status().held_on_disk;
    assert.ok(onDisk >= 2, 'some turns wait in the journal alone');
    const triesBefore = tries;
    const retrying = Date.now() + 20_000;
    while (tries < triesBefore + 5 && Date.now() < retrying) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.ok(tries >= triesBefore + 5, 'the recorder kept retrying through the outage');
    assert.deepEqual(readBack, [], 'nothing is read back from the journal while the store is out of reach');

    store.up = true;
    const deadline = Date.now() + 20_000;
    while (store.stored.length < sent.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(
      store.stored.map((turn) => turn.id),
      sent.map((turn) => turn.id),
      'every turn is stored once, in order',
    );
    assert.equal(readBack.length, onDisk, 'each turn waiting in the journal is read back once');
    assert.equal(new Set(readBack).size, onDisk);
  });
});
