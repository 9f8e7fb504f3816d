import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type pg from 'pg';
import { ConversationStore, TurnWriter, type FinishedTurn, type RemoteConversationReads, type TurnSinkPort } from '../src/conversation/index.js';
import { nodeChildren } from '../src/conversation/list-chains.js';
import { documentReferences } from '../src/conversation/payload-codec.js';
import { JobQueue } from '../src/learning/queue.js';
import { recordingListeners, type RecordingSettings } from '../src/runtime/recording.js';
import { openDatabase, type Db } from '../src/store/index.js';
import { PgConversationReads, PgJobQueue, pgRecordingListeners, PgTurnSink, type PgConversationListener } from '../src/store/postgres/index.js';
import { postgresSkip, teamStoresForTests } from './support/postgres.js';
import { freePort } from './support/proxy.js';
import { finishedTurn } from './support/turns.js';

/** Learning on, evolving every 2 main turns: most turns of a short session cause a job. */
const SETTINGS: RecordingSettings = {
  skills: { autoEvolve: true, searchKeys: true, evolveEveryNTurns: 2 },
  memory: { enabled: true, defaultScope: 'default', autoExtract: true, searchKeys: true, manualTrigger: false, ignoreTurnType: false },
  redactTurns: true,
  rlSamples: false,
};

/** An agent's system prompt, long enough to be stored as a shared part. */
const SYSTEM = 'You are a careful coding agent. Read the workspace before changing it and keep commits small. '.repeat(12);
const TOOLS = [
  { type: 'function', function: { name: 'exec', description: 'Runs a shell command in the workspace. '.repeat(20), parameters: { type: 'object' } } },
];
const QUERIES = [
  'Rename the helper in src/utils.ts to formatDate',
  'No, that is wrong: keep the old name as an alias',
  '请帮我把这个函数拆成两个',
  `Push it with my token ghp_${'a1B2c3D4e5'.repeat(4)}`,
  'Now write the changelog entry',
];

/**
 * Turn `index` of an agent session: the whole history resent with one new user message (the
 * message list grows as a chain), the forwarded body with a skills block appended to the system
 * prompt, and an injection record naming a skill and a memory, as the proxy hands turns over.
 */
function agentTurn(sessionId: string, index: number, options: { id?: string; query?: string; startedAt?: number } = {}): FinishedTurn {
  const history = Array.from({ length: index }, (_, turn) => [
    { role: 'user', content: `${QUERIES[turn % QUERIES.length]} (turn ${turn})` },
    { role: 'assistant', content: `Done with step ${turn}. `.repeat(30) },
  ]).flat();
  const query = options.query ?? `${QUERIES[index % QUERIES.length]} (turn ${index})`;
  const messages = [{ role: 'system', content: SYSTEM }, ...history, { role: 'user', content: query }];
  const received = { model: 'qwen3', tools: TOOLS, messages };
  const forwarded = {
    model: 'qwen3',
    tools: TOOLS,
    messages: [{ role: 'system', content: `${SYSTEM}\n\n<skills>${'Use git mv. '.repeat(50)}</skills>` }, ...messages.slice(1)],
  };
  const base = finishedTurn(options.id ?? `${sessionId}-t${index}`, sessionId, query);
  return {
    ...base,
    startedAt: options.startedAt ?? 1_700_000_000_000 + index * 1000,
    turnType: index === 3 ? 'side' : 'main',
    endsSession: false,
    response: {
      ...base.response!,
      toolCalls: index === 1 ? [{ id: 'c1', name: 'exec', arguments: '{"cmd":"ls"}' }] : [],
      usage: { inputTokens: 1200 + index, outputTokens: 40 },
      ...(index === 2 ? { id: `resp_${sessionId}` } : {}),
    },
    payload: {
      received: { object: received },
      injected: {
        sections: [
          { provider: 'skills', details: { skills: [{ name: 'git-rename', relevance: 0.8, full: true }] } },
          { provider: 'memory', details: { recalled: [{ id: 'unit-1' }] } },
        ],
      },
      forwarded: { object: forwarded },
      receivedHeaders: { 'x-session-id': sessionId },
      strippedKeys: index === 0 ? ['metaclaw_scope'] : [],
    },
  };
}

/** The counts each stored part should have: one per use by a stored body, and one per use by a stored list node. */
function expectedRefs(documents: ReadonlyArray<string | null>, parts: ReadonlyMap<string, string>): Map<string, number> {
  const refs = new Map<string, number>();
  const count = (hash: string) => refs.set(hash, (refs.get(hash) ?? 0) + 1);
  const nodes = new Set<string>();
  const pending: string[] = [];
  for (const document of documents) {
    const references = documentReferences(document);
    references.parts.forEach(count);
    references.lists.forEach(count);
    pending.push(...references.lists);
  }
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    if (nodes.has(node) || !parts.has(node)) continue;
    nodes.add(node);
    const { prefix, items } = nodeChildren(parts.get(node)!);
    items.forEach(count);
    if (prefix !== undefined) {
      count(prefix);
      pending.push(prefix);
    }
  }
  return refs;
}

describe('the conversation record in the team store (PostgreSQL)', { skip: postgresSkip() }, () => {
  const stores = teamStoresForTests('conversation_test');

  /** A migrated empty team store, and `count` pools on it (each one a node). */
  const freshStore = (count = 1): Promise<pg.Pool[]> => stores.freshStore({ max: 4 }, count);
  const teamSink = (pool: pg.Pool, extra: PgConversationListener[] = []): { sink: PgTurnSink; queue: PgJobQueue } => {
    const queue = new PgJobQueue(pool, 'node-a', 3);
    const failed = (trigger: string, error: unknown) => assert.fail(`${trigger}: ${String(error)}`);
    return { sink: new PgTurnSink(pool, { listeners: [...pgRecordingListeners(queue, SETTINGS, { enqueued: () => undefined, failed }), ...extra] }), queue };
  };
  const personalWriter = (db: Db): TurnWriter => {
    const failed = (trigger: string, error: unknown) => assert.fail(`${trigger}: ${String(error)}`);
    return new TurnWriter(db, recordingListeners(db, new JobQueue(db, 'test', 3), SETTINGS, { enqueued: () => undefined, failed }), undefined, true);
  };
  const rows = async (pool: pg.Pool, sql: string): Promise<Array<Record<string, unknown>>> => (await pool.query(sql)).rows;
  const storedParts = async (pool: pg.Pool): Promise<Map<string, string>> =>
    new Map((await pool.query<{ hash: string; json: string }>('SELECT hash, json FROM payload_segments')).rows.map((row) => [row.hash, row.json]));
  const storedRefs = async (pool: pg.Pool): Promise<Map<string, number>> =>
    new Map((await pool.query<{ hash: string; refs: string }>('SELECT hash, refs FROM payload_segment_refs')).rows.map((row) => [row.hash, Number(row.refs)]));
  const storedDocuments = async (pool: pg.Pool): Promise<Array<string | null>> =>
    (await pool.query<{ received: string | null; forwarded: string | null }>('SELECT received, forwarded FROM turn_payloads')).rows.flatMap((row) => [
      row.received,
      row.forwarded,
    ]);

  test('the same turns give the same sessions, turn rows, stored bodies and parts, bodies read back, credit rows and jobs as on SQLite', async () => {
    const [pool] = await freshStore();
    const db = openDatabase(':memory:');
    const { sink } = teamSink(pool!);
    const writer = personalWriter(db);
    const sqlite = new ConversationStore(db);
    const reads = new PgConversationReads(pool!, sink);
    // Two sessions; the first ends by its header, a new conversation in the lineage ends the second.
    const first = [0, 1, 2, 3, 4].map((index) => agentTurn('s1', index));
    first[4] = { ...first[4]!, endsSession: true };
    // A request with U+0000 in it (PostgreSQL text cannot hold one): the same text is read back.
    const second = [agentTurn('s2', 0, { query: 'split on \u0000 bytes' }), agentTurn('s2', 1)];
    const third = { ...agentTurn('s3', 0), startsNewConversation: true, lineage: 'test' };
    const batches = [first.slice(0, 2), first.slice(2), second, [third]];
    // The memory every turn's injection record says it recalled: its use is counted in both stores.
    const unitSql = `INSERT INTO memory_units (id, scope, type, content, terms, importance, confidence, origin, observed_at, valid_from, created_at, updated_at)
      VALUES ('unit-1', 'default', 'preference', 'likes tea', 'likes tea', 0.5, 0.5, 'extracted', 1, 1, 1, 1)`;
    db.exec(unitSql);
    await pool!.query(unitSql);
    for (const batch of batches) {
      assert.deepEqual(
        writer.write(batch),
        batch.map(() => undefined),
      );
      assert.deepEqual(
        await sink.write(batch),
        batch.map(() => undefined),
      );
    }
    const now = 1_800_000_000_000;
    assert.equal(writer.endSession('s3', 'manual', now), true);
    assert.equal(await reads.endSession('s3', 'manual', now), true, 'the reads end a session through the sink, whose listeners queue its jobs');
    await assert.rejects(new PgConversationReads(pool!).endSession('s1', 'manual'), /without a turn sink/);
    assert.equal(await sink.endSession('s3', 'manual', now), false, 'a session ends once');

    // Times of the writer's own clock (last turn, end) differ between the two runs; everything else is the same.
    const withoutClock = ({ last_turn_at: _last, ended_at: ended, ...row }: Record<string, unknown>) => ({ ...row, ended: ended !== null });
    for (const id of ['s1', 's2', 's3']) {
      const personal = sqlite.getSession(id)!;
      const team = (await reads.getSession(id))!;
      assert.deepEqual(withoutClock({ ...team }), withoutClock({ ...personal }), `session ${id}`);
    }
    assert.equal((await reads.getSession('s2'))!.end_reason, 'reset');
    for (const turn of [...first, ...second, third]) {
      assert.deepEqual(await reads.getTurn(turn.id), sqlite.getTurn(turn.id), `turn ${turn.id} with its bodies`);
      assert.deepEqual(await reads.receivedBody(turn.id), sqlite.receivedBody(turn.id));
      assert.deepEqual(await reads.getTurnSummary(turn.id), sqlite.getTurnSummary(turn.id));
    }
    assert.match(JSON.stringify(await reads.getTurn(first[3]!.id)), /\[redacted github-token\]/, 'secrets are redacted before they are stored');
    assert.deepEqual(await reads.counts(), sqlite.counts());
    assert.equal((await reads.turnOfResponse('resp_s1'))?.id, first[2]!.id);
    assert.deepEqual(await reads.turnOfResponse('resp_s1'), sqlite.turnOfResponse('resp_s1'));
    assert.equal((await reads.getTurnSummary(second[0]!.id))!.query, 'split on \u0000 bytes');
    assert.equal(await reads.getTurn('no-such-turn'), undefined);
    const accessSql = "SELECT access_count FROM memory_units WHERE id = 'unit-1'";
    const uses = Number((await rows(pool!, accessSql))[0]!.access_count);
    assert.equal(uses, db.prepare<[], { access_count: number }>(accessSql).get()!.access_count);
    assert.equal(uses, 8, 'a recalled memory is counted used once per recorded turn');

    // The stored documents and parts themselves, byte for byte, with the same use counts.
    const payloadSql = 'SELECT turn_id, received, injected, forwarded, received_headers, stripped_keys FROM turn_payloads ORDER BY turn_id';
    assert.deepEqual(await rows(pool!, payloadSql), db.prepare(payloadSql).all());
    assert.deepEqual(
      await storedParts(pool!),
      new Map(
        db
          .prepare<[], { hash: string; json: string }>('SELECT hash, json FROM payload_segments')
          .all()
          .map((row) => [row.hash, row.json]),
      ),
    );
    assert.deepEqual(
      await storedRefs(pool!),
      new Map(
        db
          .prepare<[], { hash: string; refs: number }>('SELECT hash, refs FROM payload_segment_refs')
          .all()
          .map((row) => [row.hash, row.refs]),
      ),
    );

    const jobSql = 'SELECT kind, payload, dedupe_key, status, max_attempts FROM jobs ORDER BY id';
    const teamJobs = await rows(pool!, jobSql);
    // Both engines queue memory.search_keys once, on the first turn in a language its keys do not cover.
    assert.deepEqual(teamJobs, db.prepare(jobSql).all(), 'the same jobs, in the same order');
    assert.equal(teamJobs.filter((job) => job.kind === 'memory.search_keys').length, 1, 'memory keys are asked for once for the turns’ language');
    assert.deepEqual(
      new Set(teamJobs.map((job) => job.kind)),
      new Set(['memory.record_turn', 'skills.evolve', 'skills.search_keys', 'memory.extract', 'memory.search_keys']),
      'every kind of recording job is compared',
    );
    const usageSql = 'SELECT turn_id, session_id, skill, rank, relevance, full_body FROM skill_usage ORDER BY turn_id, skill';
    assert.deepEqual(await rows(pool!, usageSql), db.prepare(usageSql).all());
    const outcomeSql = 'SELECT turn_id, session_id, outcome, judge_score, evidence FROM turn_outcomes ORDER BY turn_id';
    const outcomes = await rows(pool!, outcomeSql);
    assert.deepEqual(outcomes, db.prepare(outcomeSql).all());
    assert.ok(
      outcomes.some((row) => row.outcome === 'corrected'),
      'a correction is credited to the turn before',
    );
    db.close();
  });

  test('the sink and the reads are what the team runtime plugs in (the spooled recorder and the remote conversation)', async () => {
    const [pool] = await freshStore();
    const sink: TurnSinkPort = teamSink(pool!).sink;
    const reads: RemoteConversationReads = new PgConversationReads(pool!, teamSink(pool!).sink);
    assert.deepEqual(await sink.write([agentTurn('port', 0)]), [undefined]);
    assert.equal((await reads.getSession('port'))?.turn_count, 1);
    assert.equal(await reads.endSession('port', 'manual'), true);
  });

  test('a turn and the jobs it causes commit together: a turn that fails leaves no job, its batch-mates are written', async () => {
    const [pool] = await freshStore();
    const failing: PgConversationListener = {
      async turnRecorded(_client, event) {
        if (event.turnId === 'bad') throw new Error('credit store broke');
      },
    };
    const { sink } = teamSink(pool!, [failing]);
    const batch = [agentTurn('s1', 0, { id: 'good-1' }), agentTurn('s1', 1, { id: 'bad' }), agentTurn('s1', 2, { id: 'good-2' })];
    const errors = await sink.write(batch);
    assert.equal(errors[0], undefined);
    assert.match(String(errors[1]), /credit store broke/);
    assert.equal(errors[2], undefined);
    const jobs = await rows(pool!, "SELECT payload::jsonb ->> 'turnId' AS turn FROM jobs WHERE kind = 'memory.record_turn' ORDER BY id");
    assert.deepEqual(
      jobs.map((job) => job.turn),
      ['good-1', 'good-2'],
    );
    assert.deepEqual(
      (await rows(pool!, 'SELECT id, seq FROM turns ORDER BY seq')).map((row) => [row.id, row.seq]),
      [
        ['good-1', 1],
        ['good-2', 2],
      ],
    );
    assert.equal((await new PgConversationReads(pool!).getSession('s1'))!.turn_count, 2, 'the failed turn is not counted');
  });

  test('writing the same batch again (a replayed spool, from this node or another) stores each turn once and changes nothing', async () => {
    const [pool, other] = await freshStore(2);
    const { sink } = teamSink(pool!);
    const batch = [0, 1, 2, 3].map((index) => agentTurn('s1', index));
    assert.deepEqual(await sink.write(batch), [undefined, undefined, undefined, undefined]);
    const snapshot = async () => ({
      session: await new PgConversationReads(pool!).getSession('s1'),
      turns: await rows(pool!, 'SELECT id, seq FROM turns ORDER BY seq'),
      jobs: await rows(pool!, 'SELECT kind, payload FROM jobs ORDER BY id'),
      refs: await storedRefs(pool!),
      usage: await rows(pool!, 'SELECT count(*)::int AS n FROM skill_usage'),
    });
    const before = await snapshot();
    assert.deepEqual(await sink.write(batch), [undefined, undefined, undefined, undefined], 'a stored turn is reported written');
    assert.deepEqual(await teamSink(other!).sink.write([batch[1]!, batch[3]!]), [undefined, undefined]);
    assert.deepEqual(await snapshot(), before);
    assert.equal(before.turns.length, 4);
  });

  test('two nodes writing 50 turns each of one session at once: 100 turns, seq 1..100 once each, the counters at 100, every part counted right', async () => {
    const [one, two] = await freshStore(2);
    const nodes = [teamSink(one!).sink, teamSink(two!).sink];
    const write = async (sink: PgTurnSink, node: number): Promise<unknown[]> => {
      const errors: unknown[] = [];
      for (let batch = 0; batch < 10; batch++) {
        const turns = Array.from({ length: 5 }, (_, index) => agentTurn('shared', (batch * 5 + index) % 6, { id: `n${node}-${batch * 5 + index}` }));
        errors.push(...(await sink.write(turns)));
      }
      return errors;
    };
    const errors = (await Promise.all(nodes.map((sink, node) => write(sink, node)))).flat();
    assert.deepEqual(
      errors,
      Array.from({ length: 100 }, () => undefined),
    );
    const seqs = (await rows(one!, "SELECT seq FROM turns WHERE session_id = 'shared' ORDER BY seq")).map((row) => row.seq);
    assert.deepEqual(
      seqs,
      Array.from({ length: 100 }, (_, index) => index + 1),
    );
    const session = (await new PgConversationReads(one!).getSession('shared'))!;
    assert.equal(session.turn_count, 100);
    assert.equal(session.main_turn_count, 100 - (await rows(one!, "SELECT id FROM turns WHERE turn_type = 'side'")).length);
    assert.deepEqual(await storedRefs(one!), expectedRefs(await storedDocuments(one!), await storedParts(one!)));
  });

  test('nodes storing the same new parts at once for different sessions keep every part counted once per use', async () => {
    const pools4 = await freshStore(4);
    // Every session starts with the same system prompt, tools and first messages: the same new parts and list nodes, at the same moment.
    await Promise.all(
      pools4.map(async (pool, node) => {
        const { sink } = teamSink(pool);
        for (let index = 0; index < 4; index++) {
          const turns = [0, 1, 2].map((session) => agentTurn(`node${node}-s${session}`, index));
          assert.deepEqual(await sink.write(turns), [undefined, undefined, undefined]);
        }
      }),
    );
    const parts = await storedParts(pools4[0]!);
    const refs = await storedRefs(pools4[0]!);
    assert.deepEqual(refs, expectedRefs(await storedDocuments(pools4[0]!), parts));
    assert.deepEqual(new Set(refs.keys()), new Set(parts.keys()), 'every counted part is stored');
    const reads = new PgConversationReads(pools4[0]!);
    const turn = (await reads.getTurn('node2-s1-t2'))!;
    assert.deepEqual(turn.received, agentTurn('node2-s1', 2).payload.received.object);
  });

  test('while the store cannot be reached, a batch fails at once with the same error for every turn (no connect timeout per turn)', async () => {
    // A port nothing listens on.
    const pool = stores.pool(`postgres://postgres@127.0.0.1:${await freePort()}/conversation_test`, { max: 2 });
    let connects = 0;
    const connect = pool.connect.bind(pool);
    pool.connect = (() => (connects++, connect())) as typeof pool.connect;
    const { sink } = teamSink(pool);
    const errors = await sink.write([0, 1, 2].map((index) => agentTurn('down', index)));
    assert.equal(errors.length, 3);
    assert.ok(errors[0] instanceof Error && errors.every((error) => error === errors[0]), String(errors[0]));
    assert.equal(connects, 1, 'one try for the batch');
  });

  test('idle sessions end once, whichever node ends them, and learning hears of each once', async () => {
    const [one, two] = await freshStore(2);
    const nodes = [teamSink(one!).sink, teamSink(two!).sink];
    await nodes[0]!.write([agentTurn('idle-1', 0), agentTurn('idle-2', 0)]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await nodes[1]!.write([agentTurn('busy', 0)]);
    const cutoff = (await new PgConversationReads(one!).getSession('busy'))!.last_turn_at;
    const ended = await Promise.all(nodes.map((sink) => sink.endIdleSessions(cutoff)));
    assert.deepEqual(ended.flat().sort(), ['idle-1', 'idle-2']);
    const extracts = await rows(one!, "SELECT payload::jsonb ->> 'sessionId' AS session FROM jobs WHERE kind = 'memory.extract' ORDER BY 1");
    assert.deepEqual(
      extracts.map((row) => row.session),
      ['idle-1', 'idle-2'],
    );
  });
});
