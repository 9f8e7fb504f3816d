import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type pg from 'pg';
import { loadConfig, type UpstreamTarget } from '../src/config/index.js';
import { ConversationStore, TurnWriter, type FinishedTurn } from '../src/conversation/index.js';
import type { JobContext } from '../src/learning/index.js';
import { silentLogger } from '../src/logging/index.js';
import { EXTRACT_JOB, MemoryService, RECORD_TURN_JOB, type MemoryDraft, type MemorySettings } from '../src/memory/index.js';
import type { RecordingSettings } from '../src/runtime/recording.js';
import { memorySettings } from '../src/runtime/settings.js';
import { openDatabase } from '../src/store/index.js';
import {
  PgConversationReads,
  PgJobQueue,
  pgMemoryJobHandlers,
  pgRecordingListeners,
  PgTurnSink,
  StaleMemoryError,
  type LeasedJob,
} from '../src/store/postgres/index.js';
import { PgMemorySearch } from '../src/store/postgres/memory-search.js';
import { addPgMemory } from '../src/store/postgres/memory-writer.js';
import { tokenize } from '../src/text/index.js';
import { CredentialMemory } from '../src/upstream/index.js';
import { isExtractorCall, learningAwareUpstream, userText } from './support/evolver.js';
import { postgresSkip, teamStoresForTests } from './support/postgres.js';
import { finishedTurn } from './support/turns.js';
import { ScriptedUpstream } from './support/upstream.js';

const SCOPE = 'default';
const RECORDING: RecordingSettings = {
  skills: { autoEvolve: false, searchKeys: false, evolveEveryNTurns: 100 },
  memory: { enabled: true, defaultScope: SCOPE, autoExtract: true, searchKeys: true, manualTrigger: false, ignoreTurnType: false },
  redactTurns: true,
  rlSamples: false,
};

function settings(overrides: Partial<MemorySettings> = {}): MemorySettings {
  return { ...memorySettings(loadConfig({ env: { METACLAW_HOME: '/nonexistent-metaclaw-home' } })), ...overrides };
}

/** A main turn: what the user asked and what the agent answered, at a given minute. */
function turn(id: string, sessionId: string, query: string, answer: string, minute: number): FinishedTurn {
  const base = finishedTurn(id, sessionId, query);
  return { ...base, startedAt: 1_760_000_000_000 + minute * 60_000, response: { ...base.response!, text: answer } };
}

function jobContext(job: LeasedJob): JobContext {
  return { job, signal: new AbortController().signal, logger: silentLogger(), spend: () => undefined };
}

/** What the parity checks compare of a unit (ids, times and sequences differ between stores). */
const shape = (unit: {
  content: string;
  type: string;
  core: boolean | number;
  origin: string;
  status: string;
  speaker: string | null;
  importance: number;
  sourceTurns?: string[];
  source_turns?: string;
}) => ({
  content: unit.content,
  type: unit.type,
  core: Boolean(unit.core),
  origin: unit.origin,
  status: unit.status,
  speaker: unit.speaker,
  importance: Math.round(unit.importance * 1000) / 1000,
  sources: unit.sourceTurns ?? (JSON.parse(unit.source_turns ?? '[]') as string[]),
});
const byContent = (a: { content: string; speaker: string | null }, b: { content: string; speaker: string | null }) =>
  `${a.content}|${a.speaker}` < `${b.content}|${b.speaker}` ? -1 : 1;

describe('memory jobs on the team store (PostgreSQL)', { skip: postgresSkip() }, () => {
  const stores = teamStoresForTests('memory_jobs');

  /** A migrated empty team store with a node's sink, queue and memory job handlers. */
  const node = async (memory: MemorySettings, extra: { mainUpstream?: UpstreamTarget } = {}) => {
    const [pool] = (await stores.freshStore({ max: 6 })) as [pg.Pool];
    const queue = new PgJobQueue(pool, 'node-a', 5);
    const failed = (trigger: string, error: unknown) => assert.fail(`${trigger}: ${String(error)}`);
    const sink = new PgTurnSink(pool, { listeners: pgRecordingListeners(queue, RECORDING, { enqueued: () => undefined, failed }) });
    const reads = new PgConversationReads(pool, sink);
    const handlers = pgMemoryJobHandlers({
      pool,
      queue,
      reads,
      settings: memory,
      ...(extra.mainUpstream ? { mainUpstream: extra.mainUpstream, credentials: new CredentialMemory() } : {}),
      logger: silentLogger(),
    });
    /** Runs queued jobs of `kinds` as the team runner does (run, then complete with the effect), oldest first. */
    const drain = async (kinds: readonly string[]): Promise<number> => {
      let ran = 0;
      for (let job = await queue.lease(new Set(kinds), 60_000); job; job = await queue.lease(new Set(kinds), 60_000)) {
        const kind = job.kind;
        const handler = handlers.find((candidate) => candidate.kind === kind)!;
        const effect = await handler.run(job.payload, jobContext(job));
        assert.equal(await queue.complete(job, effect ? { effect } : {}), 'done');
        ran++;
      }
      return ran;
    };
    const units = async (where = 'TRUE') =>
      (await pool.query(`SELECT * FROM memory_units WHERE ${where} ORDER BY rowid`)).rows as Array<{
        id: string;
        rowid: string;
        content: string;
        type: string;
        core: number;
        origin: string;
        status: string;
        speaker: string | null;
        importance: number;
        source_turns: string;
        superseded_by: string | null;
        updated_at: string;
      }>;
    const queued = async (kind: string) =>
      (await pool.query<{ payload: string; status: string }>('SELECT payload, status FROM jobs WHERE kind = $1 ORDER BY id', [kind])).rows;
    return { pool, queue, sink, handlers, drain, units, queued };
  };

  /** A node whose extractor answers `extractor(prompt, prompts so far)`, for `run`; the scripted upstream is closed after. */
  const withExtractor = async (
    memory: MemorySettings,
    extractor: (prompt: string, prompts: readonly string[]) => unknown,
    run: (team: Awaited<ReturnType<typeof node>>, prompts: string[], upstream: ScriptedUpstream) => Promise<void>,
  ): Promise<void> => {
    const upstream = await ScriptedUpstream.start();
    const prompts: string[] = [];
    upstream.defaultHandler = learningAwareUpstream({
      extractor: (request) => {
        prompts.push(userText(request));
        return JSON.stringify(extractor(userText(request), prompts));
      },
    });
    try {
      const mainUpstream: UpstreamTarget = {
        name: 'main',
        baseUrl: `${upstream.url}/v1`,
        format: 'openai',
        apiKey: 'k',
        keySource: 'config',
        model: 'scripted-model',
      };
      await run(await node(memory, { mainUpstream }), prompts, upstream);
    } finally {
      await upstream.close();
    }
  };

  test('record_turn stores the same raw turns and standing instructions as a personal install (a restated rule, or a learned preference said word for word, gains the turn as a source instead of a new rule), and a second run of a turn stores nothing more', async () => {
    const memory = settings();
    const sessions: FinishedTurn[][] = [
      [
        turn('a1', 'alpha', 'Rename the helper in src/utils.ts to formatDate.', 'Renamed it and updated the three call sites.', 0),
        turn('a2', 'alpha', 'From now on, always write commit messages in the imperative mood.', 'Understood: imperative mood from now on.', 1),
        turn('a3', 'alpha', 'Commit the rename.', 'Committed as "Rename helper to formatDate".', 2),
      ],
      [
        turn('b1', 'beta', 'Remember: always write commit messages in the imperative mood.', 'Yes, imperative mood.', 10),
        turn('b2', 'beta', 'Going forward, never push directly to the main branch; open a pull request.', 'I will open pull requests.', 11),
      ],
      // Said word for word as a preference an extraction stored earlier: that unit gains the turn as a source.
      [turn('c1', 'gamma', 'Always answer in British English.', 'Of course.', 20)],
    ];
    const learned: MemoryDraft[] = [
      { scope: SCOPE, type: 'preference', content: 'Always answer in British English.', origin: 'extractor', sourceTurns: ['x0'] },
      { scope: SCOPE, type: 'semantic', content: 'The linter runs in the pre-commit hook.', origin: 'extractor' },
    ];

    // The personal install: the same turns recorded in SQLite, each one's record_turn run by MemoryService.
    const db = openDatabase(':memory:');
    const writer = new TurnWriter(db, [], undefined, true);
    const personal = new MemoryService({ db, logger: silentLogger(), settings: memory, conversation: new ConversationStore(db) });
    const recordTurn = personal.handlers().find((handler) => handler.kind === RECORD_TURN_JOB)!;
    for (const draft of learned) personal.store.add(draft);
    for (const batch of sessions) {
      writer.write(batch);
      for (const { id, sessionId } of batch)
        await recordTurn.run({ turnId: id, sessionId, scope: SCOPE }, jobContext({ id: 0, kind: RECORD_TURN_JOB } as LeasedJob));
    }
    const expected = [...personal.store.iterate(SCOPE)].map(shape).sort(byContent);
    assert.equal(expected.filter((unit) => unit.core).length, 2, 'the personal install keeps two rules: the restatement strengthened the first');
    const commits = expected.find((unit) => unit.core && unit.content.includes('imperative'))!;
    assert.deepEqual(commits.sources, ['a2', 'b1']);
    assert.deepEqual(expected.find((unit) => unit.content === 'Always answer in British English.' && unit.origin === 'extractor')!.sources, ['x0', 'c1']);

    const team = await node(memory);
    for (const draft of learned) await addPgMemory(team.pool, draft);
    for (const batch of sessions) {
      await team.sink.write(batch);
      assert.equal(await team.drain([RECORD_TURN_JOB]), batch.length);
    }
    assert.deepEqual((await team.units()).map(shape).sort(byContent), expected, 'the same units, with the same sources and importance');
    const search = new PgMemorySearch(team.pool);
    const found = await search.search(SCOPE, tokenize('pull request main branch'), 5);
    const rule = (await team.units("core = 1 AND content LIKE '%pull request%'"))[0]!;
    assert.ok(
      found.hits.some((hit) => hit.id === rule.id),
      'a stored unit is in the keyword index',
    );

    // The same turn again (a job queued twice, or a retry after the effect landed): nothing more is stored.
    const before = await team.units();
    await team.queue.enqueue(RECORD_TURN_JOB, { turnId: 'b1', sessionId: 'beta', scope: SCOPE });
    await team.queue.enqueue(RECORD_TURN_JOB, { turnId: 'a2', sessionId: 'alpha', scope: SCOPE });
    assert.equal(await team.drain([RECORD_TURN_JOB]), 2);
    assert.deepEqual(await team.units(), before);
    db.close();
  });

  test('after flush_every_n_turns user turns, record_turn queues one extraction of the session in the team store, in the transaction that stores the turn', async () => {
    const team = await node(settings({ flushEveryNTurns: 2 }));
    await team.sink.write([turn('t1', 'gamma', 'Draft the release notes for 2.4.', 'Here is a draft.', 0)]);
    await team.drain([RECORD_TURN_JOB]);
    assert.deepEqual(await team.queued(EXTRACT_JOB), [], 'one user turn: no extraction yet');
    await team.sink.write([turn('t2', 'gamma', 'Add the migration notes to them.', 'Added.', 1)]);
    await team.drain([RECORD_TURN_JOB]);
    await team.sink.write([turn('t3', 'gamma', 'Mention the new CLI flag too.', 'Mentioned.', 2)]);
    await team.drain([RECORD_TURN_JOB]);
    const jobs = await team.queued(EXTRACT_JOB);
    assert.equal(jobs.length, 1, 'queued once (its dedupe key holds while it waits)');
    assert.deepEqual(JSON.parse(jobs[0]!.payload), { sessionId: 'gamma', scope: SCOPE, final: false });
    assert.equal(jobs[0]!.status, 'queued');
  });

  test('extract with a scripted extractor adds the units it returns (found by keyword search), an update supersedes the unit it names, and the watermark stops a second run from calling the LLM', async () => {
    // Turns are numbered as shown: d1's question is turn 1, its answer turn 2, d2's question turn 3.
    const reply = (prompt: string) => {
      const old = /id (mem_\w+) \[semantic\] The staging database runs PostgreSQL 14/.exec(prompt)?.[1];
      return {
        memories: [
          { action: 'update', target_id: old ?? null, type: 'semantic', content: 'The staging database runs PostgreSQL 16 since the upgrade.', turn: 1 },
          { type: 'project_state', content: 'The release freeze starts on Friday the 14th.', importance: 0.8, turn: 3 },
        ],
      };
    };
    await withExtractor(settings({ flushEveryNTurns: 2 }), reply, async (team, prompts, upstream) => {
      const old = (await addPgMemory(team.pool, { scope: SCOPE, type: 'semantic', content: 'The staging database runs PostgreSQL 14.', origin: 'extractor' }))!;
      await team.sink.write([
        turn('d1', 'delta', 'We upgraded the staging database to PostgreSQL 16 yesterday.', 'Noted.', 0),
        turn('d2', 'delta', 'The release freeze starts on Friday the 14th, tell the team.', 'I will tell them.', 1),
      ]);
      await team.drain([RECORD_TURN_JOB]);
      assert.equal(await team.drain([EXTRACT_JOB]), 1, 'the extraction record_turn queued');
      assert.equal(prompts.length, 1);
      assert.match(
        prompts[0]!,
        new RegExp(`id ${old.id} \\[semantic\\] The staging database runs PostgreSQL 14`),
        'the unit recalled from the team store is offered',
      );

      const [replaced] = await team.units(`id = '${old.id}'`);
      const [upgraded] = await team.units("content = 'The staging database runs PostgreSQL 16 since the upgrade.'");
      const [freeze] = await team.units("origin = 'extractor' AND content LIKE 'The release freeze%'");
      assert.ok(upgraded && freeze, 'both extracted units are stored');
      assert.equal(replaced!.status, 'superseded');
      assert.equal(replaced!.superseded_by, upgraded.id);
      assert.deepEqual(JSON.parse(freeze.source_turns), ['d2']);
      const search = new PgMemorySearch(team.pool);
      assert.ok((await search.search(SCOPE, tokenize('release freeze Friday'), 5)).hits.some((hit) => hit.id === freeze.id));
      assert.ok((await search.search(SCOPE, tokenize('staging database PostgreSQL'), 5)).hits.some((hit) => hit.id === upgraded.id));
      assert.ok(
        !(await search.search(SCOPE, tokenize('staging database PostgreSQL'), 5)).hits.some((hit) => hit.id === old.id),
        'the superseded unit is left out of search',
      );

      // No new turn since: a second extraction reads none and calls no LLM.
      await team.queue.enqueue(EXTRACT_JOB, { sessionId: 'delta', scope: SCOPE, final: false });
      assert.equal(await team.drain([EXTRACT_JOB]), 1);
      assert.equal(upstream.requests.filter(isExtractorCall).length, 1);
    });
  });

  test('a turn recorded while an extraction runs does not make its effect stale: the extraction lands, and the next one reads that turn', async () => {
    const reply = (_prompt: string, prompts: readonly string[]) => ({
      memories: prompts.length === 1 ? [{ type: 'semantic', content: 'The build server is called hopper.', turn: 1 }] : [],
    });
    await withExtractor(settings({ flushEveryNTurns: 50 }), reply, async (team, prompts) => {
      await team.sink.write([turn('z1', 'zeta', 'The build server is called hopper.', 'Noted.', 0)]);
      await team.drain([RECORD_TURN_JOB]);
      await team.queue.enqueue(EXTRACT_JOB, { sessionId: 'zeta', scope: SCOPE, final: false });
      const job = (await team.queue.lease(new Set([EXTRACT_JOB]), 60_000))!;
      const effect = await team.handlers.find((handler) => handler.kind === EXTRACT_JOB)!.run(job.payload, jobContext(job));
      // Meanwhile another node records the session's next turn.
      await team.sink.write([turn('z2', 'zeta', 'Its backup is called grace.', 'Noted too.', 1)]);
      await team.drain([RECORD_TURN_JOB]);
      assert.equal(await team.queue.complete(job, { effect: effect! }), 'done');
      assert.equal((await team.units("origin = 'extractor'")).length, 1);

      await team.queue.enqueue(EXTRACT_JOB, { sessionId: 'zeta', scope: SCOPE, final: false });
      assert.equal(await team.drain([EXTRACT_JOB]), 1);
      assert.equal(prompts.length, 2);
      assert.match(prompts[1]!, /user: Its backup is called grace\./);
      assert.doesNotMatch(prompts[1]!, /user: The build server is called hopper\./, 'the turns the first extraction read are not read again');
    });
  });

  test('an extraction whose seeded unit another node changed meanwhile, or whose scope gained a rule meanwhile, throws and writes nothing; run again, it learns from the new rows', async () => {
    const reply = (prompt: string) => {
      const fact = /id (mem_\w+) \[semantic\] The staging database runs PostgreSQL 14/.exec(prompt)?.[1];
      if (prompt.includes('user: We moved the staging database to PostgreSQL 16.'))
        return { memories: [{ action: 'update', target_id: fact ?? null, type: 'semantic', content: 'The staging database runs PostgreSQL 16.', turn: 1 }] };
      return { memories: [{ type: 'semantic', content: 'The staging database is backed up every night.', turn: 1 }] };
    };
    await withExtractor(settings({ flushEveryNTurns: 50 }), reply, async (team) => {
      const fact = (await addPgMemory(team.pool, {
        scope: SCOPE,
        type: 'semantic',
        content: 'The staging database runs PostgreSQL 14.',
        origin: 'extractor',
      }))!;
      const extract = team.handlers.find((handler) => handler.kind === EXTRACT_JOB)!;
      /** Queues an extraction of the session and runs it up to its effect. */
      const started = async () => {
        await team.queue.enqueue(EXTRACT_JOB, { sessionId: 'eta', scope: SCOPE, final: false });
        const job = (await team.queue.lease(new Set([EXTRACT_JOB]), 60_000))!;
        return { job, effect: (await extract.run(job.payload, jobContext(job)))! };
      };
      /** The effect is refused and nothing is written; retried, the job lands. */
      const refusedThenRetried = async ({ job, effect }: Awaited<ReturnType<typeof started>>) => {
        const units = await team.units();
        const entries = (await team.pool.query('SELECT seq, active FROM memory_search_docs ORDER BY seq')).rows;
        const state = (await team.pool.query("SELECT key, value FROM state WHERE key LIKE 'memory.%' ORDER BY key")).rows;
        await assert.rejects(team.queue.complete(job, { effect }), StaleMemoryError);
        assert.deepEqual(await team.units(), units, 'no unit written');
        assert.deepEqual((await team.pool.query('SELECT seq, active FROM memory_search_docs ORDER BY seq')).rows, entries, 'no index entry written');
        assert.deepEqual((await team.pool.query("SELECT key, value FROM state WHERE key LIKE 'memory.%' ORDER BY key")).rows, state, 'no watermark');
        assert.equal(await team.queue.fail(job, 'stale', { retryable: true }), 'retry');
        await team.pool.query('UPDATE jobs SET run_after = 0');
        assert.equal(await team.drain([EXTRACT_JOB]), 1);
      };

      await team.sink.write([turn('h1', 'eta', 'We moved the staging database to PostgreSQL 16.', 'Noted.', 0)]);
      await team.drain([RECORD_TURN_JOB]);
      const first = await started();
      // Another node raises the importance of the fact the extraction updates.
      await team.pool.query('UPDATE memory_units SET importance = 0.95, updated_at = updated_at + 1 WHERE id = $1', [fact.id]);
      await refusedThenRetried(first);
      const [replaced] = await team.units(`id = '${fact.id}'`);
      const [upgraded] = await team.units("content = 'The staging database runs PostgreSQL 16.'");
      assert.equal(replaced!.status, 'superseded');
      assert.equal(replaced!.superseded_by, upgraded!.id);
      assert.equal(replaced!.importance, 0.95, "the other node's change is kept");

      await team.sink.write([turn('h2', 'eta', 'Staging gets a backup every night now.', 'Good.', 1)]);
      await team.drain([RECORD_TURN_JOB]);
      const second = await started();
      // Another session, on another node, states a rule in the scope meanwhile.
      await team.sink.write([turn('o1', 'other', 'From now on, always tag releases with a v prefix.', 'Will do.', 2)]);
      await team.drain([RECORD_TURN_JOB]);
      await refusedThenRetried(second);
      assert.equal((await team.units("content = 'The staging database is backed up every night.'")).length, 1);
    });
  });

  test('record_turn jobs of one scope completing at once on two nodes are written one after the other: the second strengthens the rule the first stored', async () => {
    const team = await node(settings());
    await team.sink.write([
      turn('p1', 'pi', 'From now on, always run the linter before committing.', 'Sure.', 0),
      turn('r1', 'rho', 'From now on, always run the linter before committing.', 'Sure.', 1),
    ]);
    const handler = team.handlers.find((candidate) => candidate.kind === RECORD_TURN_JOB)!;
    const jobs = [(await team.queue.lease(new Set([RECORD_TURN_JOB]), 60_000))!, (await team.queue.lease(new Set([RECORD_TURN_JOB]), 60_000))!];
    // Both run before either completes, as on two nodes.
    const effects = await Promise.all(jobs.map(async (job) => (await handler.run(job.payload, jobContext(job)))!));
    assert.deepEqual(await Promise.all(jobs.map((job, index) => team.queue.complete(job, { effect: effects[index]! }))), ['done', 'done']);
    const rules = await team.units('core = 1');
    assert.equal(rules.length, 1, 'one rule');
    assert.deepEqual((JSON.parse(rules[0]!.source_turns) as string[]).sort(), ['p1', 'r1']);
    assert.equal((await team.units("origin = 'raw_turn'")).length, 4);
  });
});
