/**
 * The store-level behaviours both engines share, one suite run against each: the personal store
 * (SQLite) and the team store (PostgreSQL, skipped where it cannot run). Each test body talks to
 * the stores through the product's ports (src/store/ports.ts), as test/support/engines.ts hands
 * them out. What only one engine does (PostgreSQL's fencing tokens, budget reservations, NOTIFY…)
 * is tested in that engine's own files.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FinishedTurn } from '../src/conversation/index.js';
import type { MemoryDraft } from '../src/memory/types.js';
import { exportSamples } from '../src/rl/index.js';
import type { IngestTurn } from '../src/memory/service.js';
import { engines, type StoresUnderTest } from './support/engines.js';
import { finishedTurn } from './support/turns.js';

const ALICE = 'user:alice';
const BOB = 'user:bob';
const DAY = 86_400_000;
const LEASE_MS = 60_000;
/** Each engine's datum export of the same samples: every engine's must be the first one's, byte for byte. */
const datumExports: string[] = [];
const kinds = (...names: string[]): ReadonlySet<string> => new Set(names);

const fact = (scope: string, content: string, extra: Partial<MemoryDraft> = {}): MemoryDraft => ({
  scope,
  type: 'semantic',
  content,
  origin: 'extractor',
  ...extra,
});

/** A statement, two clarifying questions in a row (the assistant's), and the user's reply. */
const TWO_QUESTIONS: IngestTurn[] = [
  { id: 'turn-1', role: 'user', content: 'Portuguese class tonight, the subjunctive is killing me.' },
  { id: 'turn-1', role: 'assistant', content: 'Which class is it?' },
  { id: 'turn-2', role: 'assistant', content: 'And who is your teacher?' },
  { id: 'turn-3', role: 'user', content: 'Marta, at the language school near Saldanha.' },
];

for (const engine of engines()) {
  describe(engine.name, { skip: engine.skip }, () => {
    let stores: StoresUnderTest;
    before(() => engine.start());
    after(() => engine.stop());
    beforeEach(async () => {
      stores = await engine.open();
    });
    afterEach(() => stores.close());

    describe('learning queue', () => {
      test('enqueue returns a new id per job; a dedupe key keeps one pending job until that job is done or dead', async () => {
        const { queue } = stores;
        const first = await queue.enqueue('work', { n: 1 }, { dedupeKey: 'session-1' });
        const other = await queue.enqueue('other', { n: 2 });
        assert.equal(typeof first, 'number');
        assert.equal(typeof other, 'number');
        assert.notEqual(first, other);
        assert.equal(await queue.enqueue('work', { n: 3 }, { dedupeKey: 'session-1' }), undefined, 'queued: the key is taken');
        const job = (await queue.lease(kinds('work'), LEASE_MS))!;
        assert.equal(job.id, first);
        assert.equal(await queue.enqueue('work', { n: 4 }, { dedupeKey: 'session-1' }), undefined, 'running: the key is still taken');
        await queue.complete(job);
        assert.equal(typeof (await queue.enqueue('work', { n: 5 }, { dedupeKey: 'session-1' })), 'number', 'a finished job frees its key');
        const dying = (await queue.lease(kinds('work'), LEASE_MS))!;
        assert.deepEqual(dying.payload, { n: 5 });
        assert.equal(await queue.enqueue('work', { n: 6 }, { dedupeKey: 'session-1' }), undefined);
        assert.equal(await queue.fail(dying, 'broken', { retryable: false }), 'dead');
        assert.equal(typeof (await queue.enqueue('work', { n: 7 }, { dedupeKey: 'session-1' })), 'number', 'a dead job frees its key');
      });

      test('lease hands out a ready job once, oldest first, only of the kinds asked for, with its payload and attempt', async () => {
        const { queue } = stores;
        const a = (await queue.enqueue('kind.a', { n: 'a' }))!;
        const b1 = (await queue.enqueue('kind.b', { n: 'b1' }))!;
        const b2 = (await queue.enqueue('kind.b', { n: 'b2' }))!;
        assert.equal(await queue.lease(kinds(), LEASE_MS), undefined, 'no kinds: nothing');
        assert.equal(await queue.lease(kinds('kind.c'), LEASE_MS), undefined, 'no job of that kind');
        const first = (await queue.lease(kinds('kind.b'), LEASE_MS))!;
        assert.deepEqual([first.id, first.kind, first.payload, first.attempts], [b1, 'kind.b', { n: 'b1' }, 1]);
        const second = (await queue.lease(kinds('kind.b'), LEASE_MS))!;
        assert.equal(second.id, b2, 'a leased job is not handed out again');
        assert.equal(await queue.lease(kinds('kind.b'), LEASE_MS), undefined);
        assert.equal((await queue.lease(kinds('kind.a', 'kind.b'), LEASE_MS))?.id, a);
        assert.equal((await queue.get(b1))!.status, 'leased');
      });

      test('complete marks a job done and counts follow every status', async () => {
        const { queue } = stores;
        assert.deepEqual(await queue.counts(), { queued: 0, leased: 0, done: 0, dead: 0 });
        const done = await queue.enqueue('work', { n: 1 });
        await queue.enqueue('work', { n: 2 });
        await queue.enqueue('work', { n: 3 });
        await queue.enqueue('work', { n: 4 });
        await queue.complete((await queue.lease(kinds('work'), LEASE_MS))!);
        assert.equal(
          await queue.fail((await queue.lease(kinds('work'), LEASE_MS))!, 'broken', { retryable: false }),
          'dead',
          'a permanent failure is dead at once',
        );
        await queue.lease(kinds('work'), LEASE_MS);
        const row = (await queue.get(done!))!;
        assert.equal(row.status, 'done');
        assert.equal(typeof row.finished_at, 'number');
        assert.deepEqual(await queue.counts(), { queued: 1, leased: 1, done: 1, dead: 1 });
      });

      test('a retryable failure waits out a growing backoff before it is leased again, and the job is dead after max attempts', async () => {
        const { queue } = stores;
        const id = (await queue.enqueue('work', { n: 1 }))!;
        const delays: number[] = [];
        for (let attempt = 1; attempt <= 3; attempt++) {
          const job = (await queue.lease(kinds('work'), LEASE_MS))!;
          assert.deepEqual([job.id, job.attempts], [id, attempt]);
          const verdict = await queue.fail(job, `boom ${attempt}`, { retryable: true });
          const row = (await queue.get(id))!;
          assert.equal(row.last_error, `boom ${attempt}`);
          if (attempt < 3) {
            assert.deepEqual([verdict, row.status, row.attempts], ['retry', 'queued', attempt]);
            delays.push(row.run_after - row.updated_at);
            assert.equal(await queue.lease(kinds('work'), LEASE_MS), undefined, 'not leased again before its backoff is over');
            await stores.makeDue(id);
          } else assert.deepEqual([verdict, row.status, row.attempts], ['dead', 'dead', 3]);
        }
        // Backoff: 5 s, then 10 s (±20 %).
        assert.ok(delays[0]! >= 4_000 && delays[0]! <= 6_000, `first retry after ${delays[0]} ms`);
        assert.ok(delays[1]! >= 8_000 && delays[1]! <= 12_000, `second retry after ${delays[1]} ms`);
        assert.equal(await queue.lease(kinds('work'), LEASE_MS), undefined, 'a dead job is not leased');
        assert.deepEqual(await queue.counts(), { queued: 0, leased: 0, done: 0, dead: 1 });
      });

      test('revive sends a dead job back to the queue with fresh attempts; a job that is not dead is not revived', async () => {
        const { queue } = stores;
        const id = (await queue.enqueue('work', { n: 1 }, { maxAttempts: 1 }))!;
        const done = (await queue.enqueue('work', { n: 2 }))!;
        assert.equal(await queue.fail((await queue.lease(kinds('work'), LEASE_MS))!, 'boom', { retryable: true }), 'dead', 'one attempt allowed');
        assert.deepEqual(await queue.revive(done), { outcome: 'not_dead', status: 'queued' });
        await queue.complete((await queue.lease(kinds('work'), LEASE_MS))!);
        assert.deepEqual(await queue.revive(done), { outcome: 'not_dead', status: 'done' });
        assert.deepEqual(await queue.revive(id), { outcome: 'queued' });
        assert.deepEqual(await queue.revive(id), { outcome: 'not_dead', status: 'queued' }, 'revived once');
        assert.deepEqual(await queue.revive(999_999), { outcome: 'missing' });
        const row = (await queue.get(id))!;
        assert.deepEqual([row.status, row.attempts, row.finished_at], ['queued', 0, null]);
        const again = (await queue.lease(kinds('work'), LEASE_MS))!;
        assert.deepEqual([again.id, again.attempts], [id, 1]);
      });

      test('a dead job whose work a queued or running job with the same key already does is not revived beside it, and goes back once that job is gone', async () => {
        const { queue } = stores;
        const dead = (await queue.enqueue('work', { n: 1 }, { dedupeKey: 'work:a', maxAttempts: 1 }))!;
        await queue.fail((await queue.lease(kinds('work'), LEASE_MS))!, 'boom', { retryable: false });
        const pending = (await queue.enqueue('work', { n: 1 }, { dedupeKey: 'work:a' }))!;
        assert.deepEqual(await queue.revive(dead), { outcome: 'covered', by: pending }, 'queued');
        const running = (await queue.lease(kinds('work'), LEASE_MS))!;
        assert.deepEqual(await queue.revive(dead), { outcome: 'covered', by: pending }, 'running');
        assert.equal((await queue.get(dead))!.status, 'dead');
        await queue.complete(running);
        assert.deepEqual(await queue.revive(dead), { outcome: 'queued' });
        assert.deepEqual(await queue.counts(), { queued: 1, leased: 0, done: 1, dead: 0 });
      });

      test('dismiss deletes a dead job and nothing else', async () => {
        const { queue } = stores;
        const dead = (await queue.enqueue('work', { n: 1 }, { maxAttempts: 1 }))!;
        await queue.fail((await queue.lease(kinds('work'), LEASE_MS))!, 'boom', { retryable: false });
        const queued = (await queue.enqueue('work', { n: 2 }))!;
        assert.deepEqual(await queue.dismiss(queued), { outcome: 'not_dead', status: 'queued' });
        assert.deepEqual(await queue.dismiss(999_999), { outcome: 'missing' });
        assert.deepEqual(await queue.dismiss(dead), { outcome: 'dismissed' });
        assert.deepEqual(await queue.dismiss(dead), { outcome: 'missing' }, 'gone');
        assert.deepEqual(await queue.counts(), { queued: 1, leased: 0, done: 0, dead: 0 });
      });

      test('release puts a leased job back at once without counting the attempt', async () => {
        const { queue } = stores;
        const id = (await queue.enqueue('work', { n: 1 }))!;
        const job = (await queue.lease(kinds('work'), LEASE_MS))!;
        await queue.release(job);
        const row = (await queue.get(id))!;
        assert.deepEqual([row.status, row.attempts, row.lease_until, row.leased_by], ['queued', 0, null, null]);
        const again = (await queue.lease(kinds('work'), LEASE_MS))!;
        assert.deepEqual([again.id, again.attempts], [id, 1], 'leased again at once, as its first attempt');
      });
    });

    describe('learning budget', () => {
      const today = new Date(2026, 11, 2, 12);
      const yesterday = new Date(today.getTime() - DAY);

      test('spend is kept per kind and per day: today’s summary has today’s spend by kind, the totals every day’s', async () => {
        const budget = stores.budget(10_000);
        await budget.record('skill_evolution', 300, 1, yesterday);
        await budget.record('skill_evolution', 120, 1, today);
        await budget.record('skill_evolution', 80.4, 2, today);
        await budget.record('memory_extraction', 50, 1, today);
        // Rounded to whole tokens as recorded. (The team store's summary also has reservedToday, a team-only field.)
        const { tokensToday, callsToday, tokensTotal, callsTotal, byKindToday } = await budget.summary(today);
        assert.deepEqual(
          { tokensToday, callsToday, tokensTotal, callsTotal, byKindToday },
          {
            tokensToday: 250,
            callsToday: 4,
            tokensTotal: 550,
            callsTotal: 5,
            byKindToday: { skill_evolution: 200, memory_extraction: 50 },
          },
        );
        const before = await budget.summary(yesterday);
        assert.deepEqual([before.tokensToday, before.callsToday, before.byKindToday], [300, 1, { skill_evolution: 300 }]);
      });

      test('learning pauses, saying why, once today’s spend reaches the daily budget; yesterday’s spend and a zero budget never pause it', async () => {
        const budget = stores.budget(1_000);
        await budget.record('judge', 5_000, 1, yesterday);
        await budget.record('judge', 999, 1, today);
        assert.equal(await budget.pauseReason(today), undefined);
        await budget.record('skill_evolution', 201, 1, today);
        assert.match((await budget.pauseReason(today)) ?? '', /daily learning budget reached \(1200 of 1000 tokens today/);
        assert.equal(await stores.budget(0).pauseReason(today), undefined, 'no budget set');
      });
    });

    describe('memory', () => {
      test('a unit is found by its words in its own scope, and not from another scope', async () => {
        const { memory } = stores;
        const greyhound = (await memory.add(fact(ALICE, 'My greyhound Pepper is afraid of thunderstorms.')))!;
        await memory.add(fact(ALICE, 'The staging database runs PostgreSQL 15 in Leeds.'));
        const lunch = (await memory.add(fact(BOB, 'Team lunch is every Friday at the Vietnamese place.')))!;
        assert.equal(greyhound.scope, ALICE);
        assert.deepEqual(await memory.search(ALICE, 'greyhound thunderstorms'), [greyhound.id]);
        assert.deepEqual(await memory.search(BOB, 'greyhound thunderstorms'), [], 'another scope does not see it');
        assert.deepEqual(await memory.search(BOB, 'lunch Friday'), [lunch.id]);
        assert.deepEqual(await memory.search(ALICE, 'lunch Friday'), []);
      });

      test('Chinese text is found by a Chinese query', async () => {
        const { memory } = stores;
        const knee = (await memory.add(fact(ALICE, '我的膝盖受伤了，医生建议休息两周。')))!;
        await memory.add(fact(ALICE, '我们每周五在车站附近吃越南菜。'));
        const found = await memory.search(ALICE, '膝盖怎么了');
        assert.deepEqual(found, [knee.id]);
        assert.deepEqual(await memory.search(BOB, '膝盖怎么了'), []);
      });

      test('a raw turn is stored once per raw key', async () => {
        const { memory } = stores;
        const turn = fact(ALICE, 'Can you suggest a stretch for a sore knee?', { type: 'episodic', origin: 'raw_turn', speaker: 'user', sourceSession: 's1' });
        const stored = await memory.add(turn, { rawKey: 'turn-1:user' });
        assert.ok(stored);
        assert.equal(await memory.add(turn, { rawKey: 'turn-1:user' }), undefined, 'the same raw key again');
        assert.deepEqual(await memory.search(ALICE, 'stretch sore knee'), [stored.id]);
        assert.ok(await memory.add(turn, { rawKey: 'turn-2:user' }), 'another raw key is another unit');
      });

      test('a superseded unit leaves search results and its successor is found; a forgotten unit leaves them too', async () => {
        const { memory } = stores;
        const old = (await memory.add(fact(ALICE, 'The quarterly budget review is on the first Monday.')))!;
        const kept = (await memory.add(fact(ALICE, 'The budget spreadsheet lives in the finance folder.')))!;
        assert.deepEqual(new Set(await memory.search(ALICE, 'budget')), new Set([old.id, kept.id]));
        const successor = (await memory.add(fact(ALICE, 'The quarterly budget review moved to the second Thursday.')))!;
        await memory.supersede(old, successor);
        const afterSupersede = await memory.search(ALICE, 'quarterly budget review');
        assert.ok(!afterSupersede.includes(old.id), 'the superseded unit is not found');
        assert.equal(afterSupersede[0], successor.id);
        await memory.forget(kept);
        const afterForget = await memory.search(ALICE, 'budget spreadsheet');
        assert.ok(!afterForget.includes(kept.id), 'the forgotten unit is not found');
        assert.deepEqual(afterForget, [successor.id]);
        assert.equal(await memory.get(kept.id), undefined, 'the forgotten unit is gone for good');
        assert.equal((await memory.get(old.id))?.id, old.id, 'a superseded unit is kept');
      });

      test('forgetting the middle of three raw turns links the third to the first: it is found by the first’s words, no longer by the forgotten one’s', async () => {
        const { memory } = stores;
        // The session opens with another user turn: its first one would lend its words to the user turns after it anyway.
        const [, first, middle, third] = await memory.ingest(ALICE, 'anxious-dog', [
          { id: 'turn-0', role: 'user', content: 'Can I ask you something about our pets?' },
          { id: 'turn-1', role: 'user', content: 'My greyhound Pepper hides under the bed during thunderstorms.' },
          { id: 'turn-1', role: 'assistant', content: 'A quiet crate draped with a blanket often calms an anxious dog.' },
          { id: 'turn-2', role: 'user', content: 'Fireworks on New Year are worse still.' },
        ]);
        assert.ok(first && middle && third);
        // A raw turn is found by the words of the turn said just before it.
        assert.ok((await memory.search(ALICE, 'crate blanket')).includes(third), 'the third is found by the middle turn’s words');
        assert.ok(!(await memory.search(ALICE, 'greyhound thunderstorms')).includes(third), 'not yet by the first’s');
        await memory.forget((await memory.get(middle))!);
        assert.deepEqual(await memory.search(ALICE, 'crate blanket'), [], 'no trace of the forgotten turn’s words');
        const found = await memory.search(ALICE, 'greyhound thunderstorms');
        assert.equal(found[0], first);
        assert.ok(found.includes(third), 'the third now follows the first and is found by its words');
      });
      test('a reply to the assistant’s clarifying question is found by the words said before the question; forgetting those words leaves no trace of them', async () => {
        const { memory } = stores;
        const [statement, question, reply] = await memory.ingest(ALICE, 'portuguese', [
          { id: 'turn-1', role: 'user', content: 'Portuguese class tonight, the subjunctive is killing me.' },
          { id: 'turn-1', role: 'assistant', content: 'Who is your teacher?' },
          { id: 'turn-2', role: 'user', content: 'Marta, at the language school near Saldanha.' },
        ]);
        assert.ok(statement && question && reply);
        assert.ok((await memory.search(ALICE, 'subjunctive')).includes(reply), 'the reply borrows the statement’s words through the question');
        await memory.forget((await memory.get(statement))!);
        // Another unit holds the word, so a search reads who holds it through a neighbour (a word no unit holds is not looked up that way).
        const workbook = (await memory.add(fact(ALICE, 'The subjunctive drills are in the blue workbook.')))!;
        assert.deepEqual(
          await memory.search(ALICE, 'subjunctive'),
          [workbook.id],
          'no trace of the forgotten turn’s words, in the question’s entry or the reply’s',
        );
        assert.ok((await memory.search(ALICE, 'teacher')).includes(reply), 'the reply still follows the question');
      });
      test('after two clarifying questions in a row, forgetting the turn before them leaves no trace of its words in the reply', async () => {
        const { memory } = stores;
        const [statement, first, second, reply] = await memory.ingest(ALICE, 'portuguese-twice', TWO_QUESTIONS);
        assert.ok(statement && first && second && reply);
        // Each question lends what it was lent: the reply reads the statement's words through both.
        assert.ok((await memory.search(ALICE, 'subjunctive')).includes(reply), 'the reply borrows the statement’s words through both questions');
        await memory.forget((await memory.get(statement))!);
        const workbook = (await memory.add(fact(ALICE, 'The subjunctive drills are in the blue workbook.')))!;
        assert.deepEqual(
          await memory.search(ALICE, 'subjunctive'),
          [workbook.id],
          'no trace of the forgotten turn’s words, in either question’s entry or the reply’s',
        );
        assert.ok((await memory.search(ALICE, 'teacher')).includes(reply), 'the reply still follows the second question');
      });
      test('after two clarifying questions in a row, editing the turn before them changes the words the reply is found by', async () => {
        const { memory } = stores;
        const [statement, , , reply] = await memory.ingest(ALICE, 'portuguese-edited', TWO_QUESTIONS);
        assert.ok(statement && reply);
        await memory.edit((await memory.get(statement))!, 'Portuguese class tonight, the irregular verbs are killing me.');
        const workbook = (await memory.add(fact(ALICE, 'The subjunctive drills are in the blue workbook.')))!;
        assert.deepEqual(await memory.search(ALICE, 'subjunctive'), [workbook.id], 'no trace of the edited-away words in the reply’s entry');
        assert.ok((await memory.search(ALICE, 'irregular verbs')).includes(reply), 'the reply is found by the new words');
      });
    });

    describe('skills', () => {
      const DEPLOY = {
        name: 'release-deploy-checklist',
        description: 'Checklist for deploying a release of a web service to production: build, migrate, roll out, verify.',
        body: '# Release deploy checklist\n\n1. Build the release artifact from the tagged commit.\n2. Apply database migrations first.',
      };

      test('a written skill reads back with its text, version 1 and the generation of its write', async () => {
        const { skills } = stores;
        assert.equal(await skills.get(DEPLOY.name), undefined);
        const before = await skills.generation();
        const written = await skills.write(DEPLOY, 'test');
        assert.deepEqual(written, { version: 1, generation: before + 1 });
        const stored = (await skills.get(DEPLOY.name))!;
        assert.deepEqual([stored.skill.name, stored.skill.description, stored.skill.body.trim()], [DEPLOY.name, DEPLOY.description, DEPLOY.body]);
        assert.deepEqual([stored.version, stored.skill.version, stored.generation], [1, 1, before + 1]);
        assert.equal(await skills.generation(), before + 1);
      });

      test('a second write bumps the version and the generation, and the history lists both versions oldest first', async () => {
        const { skills } = stores;
        const first = await skills.write(DEPLOY, 'test');
        await skills.write({ name: 'another-skill', description: 'Something else entirely, about spreadsheets.', body: '# Other\n\nPivot tables.' }, 'test');
        const edited = { ...DEPLOY, body: `${DEPLOY.body}\n3. Roll out to one instance, then the rest.` };
        const second = await skills.write(edited, 'evolution');
        assert.deepEqual(second, { version: 2, generation: first.generation + 2 });
        const stored = (await skills.get(DEPLOY.name))!;
        assert.deepEqual([stored.version, stored.generation], [2, first.generation + 2]);
        assert.match(stored.skill.body, /Roll out to one instance/);
        const versions = await skills.versions(DEPLOY.name);
        assert.deepEqual(
          versions.map((row) => [row.version, row.action, row.generation, row.source]),
          [
            [1, 'create', first.generation, 'test'],
            [2, 'update', first.generation + 2, 'evolution'],
          ],
        );
        assert.match(versions[0]!.content, /Apply database migrations first\.\n?$/);
        assert.doesNotMatch(versions[0]!.content, /Roll out/);
        assert.match(versions[1]!.content, /Roll out to one instance/);
        assert.deepEqual(await skills.versions('no-such-skill'), []);
      });

      test('a removed skill is gone, the removal counts as a generation, and the history keeps every version with the removal last', async () => {
        const { skills } = stores;
        const first = await skills.write(DEPLOY, 'test');
        const removedAt = await skills.remove(DEPLOY.name, 'user');
        assert.equal(removedAt, first.generation + 1);
        assert.equal(await skills.generation(), removedAt);
        assert.equal(await skills.get(DEPLOY.name), undefined);
        assert.deepEqual(
          (await skills.versions(DEPLOY.name)).map((row) => [row.version, row.action, row.generation, row.content === '']),
          [
            [1, 'create', first.generation, false],
            [2, 'remove', removedAt, true],
          ],
        );
        const again = await skills.write(DEPLOY, 'test');
        assert.equal(again.generation, removedAt + 1, 'the name can be used again');
        assert.equal(again.version, 3, 'it goes on from the removal: no two versions share a number');
        assert.equal((await skills.get(DEPLOY.name))!.version, again.version);
        assert.equal((await skills.versions(DEPLOY.name)).at(-1)!.action, 'create');
      });
    });

    describe('conversation record', () => {
      const turn = (id: string, sessionId: string, query: string): FinishedTurn => ({
        ...finishedTurn(id, sessionId, query),
        startedAt: 1_700_000_000_000,
        response: { text: 'Renamed.', reasoning: '', toolCalls: [], finishReason: 'stop', usage: { inputTokens: 120, outputTokens: 8 }, model: 'qwen3' },
      });

      test('a recorded turn reads back: its summary fields, its session, and the request body it was received with', async () => {
        const { conversation } = stores;
        const first = turn('t1', 's1', 'Rename the helper in src/utils.ts to formatDate');
        const second = turn('t2', 's1', '请帮我把这个函数拆成两个');
        assert.deepEqual(await conversation.sink.write([first]), [undefined]);
        assert.deepEqual(await conversation.sink.write([second]), [undefined]);
        const summary = (await conversation.reads.getTurnSummary('t1'))!;
        assert.deepEqual(
          [summary.id, summary.session_id, summary.seq, summary.query, summary.model, summary.turn_type, summary.status, summary.outcome],
          ['t1', 's1', 1, first.query, 'qwen3', 'main', 200, 'ok'],
        );
        assert.deepEqual([summary.response_text, summary.input_tokens, summary.output_tokens], ['Renamed.', 120, 8]);
        assert.equal((await conversation.reads.getTurnSummary('t2'))!.seq, 2);
        assert.equal((await conversation.reads.getTurnSummary('t2'))!.query, second.query);
        assert.deepEqual(await conversation.reads.receivedBody('t1'), first.payload.received.object);
        assert.deepEqual(await conversation.reads.receivedBody('t2'), second.payload.received.object);
        const session = (await conversation.reads.getSession('s1'))!;
        assert.deepEqual([session.id, session.turn_count, session.ended_at], ['s1', 2, null]);
        assert.equal(await conversation.reads.getTurnSummary('no-such-turn'), undefined);
      });

      test('secrets in a turn are redacted before it is stored: in its summary and in its received body', async () => {
        const { conversation } = stores;
        const token = `ghp_${'a1B2c3D4e5'.repeat(4)}`;
        await conversation.sink.write([turn('t1', 's1', `Push it with my token ${token}`)]);
        const stored = JSON.stringify([await conversation.reads.getTurnSummary('t1'), await conversation.reads.receivedBody('t1')]);
        assert.ok(!stored.includes(token), 'the token was stored');
        assert.match((await conversation.reads.getTurnSummary('t1'))!.query!, /Push it with my token \[redacted github-token\]/);
      });

      test('a session ends once, with its reason; idle sessions end by when their last turn was recorded', async () => {
        const { conversation } = stores;
        await conversation.sink.write([turn('q1', 'quiet', 'hello'), turn('d1', 'done', 'hello')]);
        assert.equal(await conversation.sink.endSession('done', 'manual', 1_800_000_000_000), true);
        assert.equal(await conversation.sink.endSession('done', 'idle', 1_800_000_000_001), false, 'ended already');
        const done = (await conversation.reads.getSession('done'))!;
        assert.deepEqual([done.end_reason, done.ended_at], ['manual', 1_800_000_000_000]);
        // A session's last turn time is the writer's clock when it recorded the turn.
        await sleep(20);
        const cutoff = Date.now();
        await sleep(20);
        await conversation.sink.write([turn('a1', 'active', 'hello')]);
        assert.deepEqual(await conversation.sink.endIdleSessions(cutoff), ['quiet']);
        assert.equal((await conversation.reads.getSession('quiet'))!.end_reason, 'idle');
        assert.equal((await conversation.reads.getSession('active'))!.ended_at, null);
        assert.deepEqual(await conversation.reads.counts(), { sessions: 3, openSessions: 1, turns: 3 });
      });

      test('writing the same turn again (a replay) stores it once', async () => {
        const { conversation } = stores;
        const once = turn('t1', 's1', 'Now write the changelog entry');
        await conversation.sink.write([once]);
        await conversation.sink.write([once]);
        assert.deepEqual(await conversation.reads.counts(), { sessions: 1, openSessions: 1, turns: 1 });
        assert.equal((await conversation.reads.getSession('s1'))!.turn_count, 1);
      });
    });

    describe('RL samples', () => {
      const policy = (turnId: string) => ({
        turnId,
        sessionId: 's1',
        promptTokens: [5, 6, 7],
        response: { tokens: [8, 9], logprobs: [-0.5, -0.25], stopReason: 'stop' as const },
        policyVersion: 'step-0001',
        trainable: true,
      });
      const sample = (turnId: string, seq: number, skillGeneration: number, tokens = true) => ({
        turnId,
        sessionId: 's1',
        seq,
        skillGeneration,
        createdAt: 1_000 + seq,
        ...(tokens ? { policy: policy(turnId) } : {}),
      });
      const scored = { state: 'scored' as const, reward: 1 as const, votes: [1 as const], model: 'judge', error: null };

      test('a scored sample with token ids of the live generation is trainable, token ids exact; an older generation is dropped on the way, and a trained one leaves', async () => {
        const { rl } = stores;
        await rl.record(sample('t-old', 1, 0));
        await rl.record(sample('t-new', 2, 1));
        await rl.record(sample('t-text', 3, 1, false));
        await rl.record(sample('t-new', 2, 1)); // recorded again (a replay): ignored
        for (const turnId of ['t-old', 't-new', 't-text']) await rl.store.saveVerdict(turnId, scored);
        assert.equal(await rl.store.trainableCount(1), 1, 'only t-new: t-old is of an older generation, t-text has no token ids');
        const ready = await rl.store.trainable(1, 10);
        assert.deepEqual(
          ready.map((row) => [row.turnId, row.skillGeneration, row.reward, row.promptTokens, row.responseTokens]),
          [['t-new', 1, 1, [5, 6, 7], [8, 9]]],
        );
        assert.deepEqual(ready[0]!.responseLogprobs, [-0.5, -0.25]);
        const old = (await rl.store.get('t-old'))!;
        assert.equal(old.dropped_for_generation, 1, 'taking samples drops the older generation (kept, marked)');
        assert.equal((await rl.store.get('t-new'))!.judge_state, 'scored');
        await rl.store.markTrained(['t-new'], 7);
        assert.equal((await rl.store.get('t-new'))!.trained_step, 7);
        assert.equal(await rl.store.trainableCount(1), 0);
        assert.equal(await rl.store.dropOlderThan(2), 1, 't-text (untrained) leaves at the next generation; trained t-new stays');
      });

      test('the export reads the same scored samples in the same order on both engines (oldest first, ties by turn id in byte order, past a page), token ids exact', async () => {
        const { rl, conversation } = stores;
        // Two samples per millisecond, their turn ids differing in case: a collation other than byte order would swap them.
        const ids = Array.from({ length: 205 }, (_, index) => `${index % 2 === 0 ? 'x' : 'X'}-${String(1_000 - index).padStart(4, '0')}`);
        for (const [index, turnId] of ids.entries()) {
          await rl.record({ ...sample(turnId, index + 1, 1), createdAt: 5_000 + Math.floor(index / 2) });
          await rl.store.saveVerdict(turnId, index === 7 ? { ...scored, reward: -1 } : scored);
        }
        await rl.record(sample('unscored', 999, 1));
        const expected = ids
          .map((turnId, index) => ({ turnId, createdAt: 5_000 + Math.floor(index / 2) }))
          .sort((a, b) => a.createdAt - b.createdAt || (a.turnId < b.turnId ? -1 : a.turnId > b.turnId ? 1 : 0))
          .map((row) => row.turnId);
        const read: string[] = [];
        for await (const row of rl.store.scored(1, false)) read.push(row.turn_id);
        assert.deepEqual(read, expected);
        const lines: string[] = [];
        const report = await exportSamples(rl.store, conversation.reads, { format: 'datum', currentGeneration: 1, includeDropped: false }, (line) =>
          lines.push(JSON.stringify(line)),
        );
        assert.deepEqual([report.scored, report.written], [205, 205]);
        const first = JSON.parse(lines[0]!) as { model_input: { chunks: Array<{ tokens: number[] }> }; loss_fn_inputs: { advantages: { data: number[] } } };
        assert.deepEqual(first.model_input.chunks[0]!.tokens, [5, 6, 7, 8]);
        datumExports.push(lines.join('\n'));
        assert.equal(datumExports.at(-1), datumExports[0], 'the same bytes on either engine');
      });
    });

    describe('team members', () => {
      test('an added member is identified by their key; an unknown or malformed key by nobody; a name is taken once', async () => {
        const { members } = stores;
        const alice = await members.add('Alice');
        assert.equal(alice.member.name, 'alice', 'names are lower-cased');
        assert.ok(alice.key.startsWith(alice.member.keyHint.replace('…', '')), 'the hint is the start of the key');
        const bob = await members.add('bob');
        assert.deepEqual(await stores.identifyMember(alice.key), alice.member);
        assert.deepEqual(await stores.identifyMember(bob.key), bob.member);
        assert.equal(await stores.identifyMember(`${alice.key.slice(0, -1)}${alice.key.endsWith('A') ? 'B' : 'A'}`), undefined);
        assert.equal(await stores.identifyMember('not a key'), undefined);
        await assert.rejects(async () => members.add('alice'), /already exists/);
        assert.deepEqual(
          (await members.list()).map((member) => member.name),
          ['alice', 'bob'],
        );
      });

      test('rotating a key: the new key identifies the member, the old one nobody', async () => {
        const { members } = stores;
        const first = await members.add('alice');
        const rotated = await members.rotateKey('alice');
        assert.notEqual(rotated.key, first.key);
        assert.equal(rotated.member.id, first.member.id);
        assert.equal(typeof rotated.member.keyRotatedAt, 'number');
        assert.equal((await stores.identifyMember(rotated.key))?.id, first.member.id);
        assert.equal(await stores.identifyMember(first.key), undefined);
        await assert.rejects(async () => members.rotateKey('nobody'), /No member named nobody/);
      });

      test('a removed member’s key identifies nobody; removing an unknown member is refused', async () => {
        const { members } = stores;
        const alice = await members.add('alice');
        const bob = await members.add('bob');
        assert.deepEqual(await members.remove('alice'), alice.member);
        assert.equal(await stores.identifyMember(alice.key), undefined);
        assert.deepEqual(await stores.identifyMember(bob.key), bob.member, 'the others keep their keys');
        await assert.rejects(async () => members.remove('alice'), /No member named alice/);
        assert.deepEqual(
          (await members.list()).map((member) => member.name),
          ['bob'],
        );
      });
    });
  });
}
