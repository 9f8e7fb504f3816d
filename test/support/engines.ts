/**
 * The stores of both engines behind one async interface, so one suite (test/store-engines.test.ts)
 * runs the same test bodies against the personal store (SQLite: synchronous classes, wrapped in
 * promises) and the team store (PostgreSQL). Each adapter is a thin pass-through to the store's
 * public methods; what an adapter adds of its own (the test clock, a member cache) is marked.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { ConversationStore, TurnWriter, type FinishedTurn, type SessionEndReason, type SessionRow, type TurnRow } from '../../src/conversation/index.js';
import { LearningBudget, type SpendSummary } from '../../src/learning/budget.js';
import type { Job, JobRow, QueueCounts } from '../../src/learning/job-model.js';
import { JobQueue } from '../../src/learning/queue.js';
import { silentLogger } from '../../src/logging/index.js';
import { loadConfig } from '../../src/config/index.js';
import { MemoryService, type IngestTurn } from '../../src/memory/service.js';
import type { MemoryDraft, MemoryUnit } from '../../src/memory/types.js';
import type { VersionRow } from '../../src/skills/history.js';
import { SkillsService } from '../../src/skills/service.js';
import type { Skill, SkillDraft } from '../../src/skills/types.js';
import { RlBuffer, type NewSample, type RlSampleStore } from '../../src/rl/buffer/index.js';
import { memorySettings } from '../../src/runtime/settings.js';
import { openDatabase } from '../../src/store/index.js';
import {
  migratePostgres,
  PgRlSamples,
  sampleRecording,
  openPool,
  PgConversationReads,
  PgJobQueue,
  PgLearningBudget,
  PgMemberDirectory,
  PgMemoryApi,
  PgMemoryWriter,
  PgSkillStore,
  PgTurnSink,
  type LeasedJob,
} from '../../src/store/postgres/index.js';
import { PgMemorySearch } from '../../src/store/postgres/memory-search.js';
import { MemberCache } from '../../src/team/member-cache.js';
import { MemberDirectory, type IssuedKey, type Member } from '../../src/team/members.js';
import { uniqueTerms } from '../../src/text/index.js';
import { postgresSkip, startPostgres, type TestPostgres } from './postgres.js';

export interface QueueUnderTest {
  enqueue(kind: string, payload: unknown, options?: { dedupeKey?: string; maxAttempts?: number }): Promise<number | undefined>;
  lease(kinds: readonly string[], leaseMs?: number): Promise<Job | undefined>;
  complete(job: Job): Promise<void>;
  fail(job: Job, error: string, retryable: boolean): Promise<string>;
  release(job: Job): Promise<void>;
  revive(id: number): Promise<boolean>;
  get(id: number): Promise<JobRow | undefined>;
  counts(): Promise<QueueCounts>;
  /** The test clock: a queued job's backoff is over now (its run_after set back; no store method does this). */
  makeDue(id: number): Promise<void>;
}

export interface BudgetUnderTest {
  record(kind: string, tokens: number, calls: number, now: Date): Promise<void>;
  summary(now: Date): Promise<SpendSummary>;
  pauseReason(now: Date): Promise<string | undefined>;
}

export interface MemoryUnderTest {
  add(draft: MemoryDraft, options?: { rawKey?: string }): Promise<MemoryUnit | undefined>;
  get(id: string): Promise<MemoryUnit | undefined>;
  /** Ids of the active units a keyword search of `query`'s terms finds in `scope`, best first. */
  search(scope: string, query: string, limit?: number): Promise<string[]>;
  /** `old` is replaced by `by` and leaves default search results. */
  supersede(old: MemoryUnit, by: MemoryUnit): Promise<void>;
  /** `unit` is deleted for good. */
  forget(unit: MemoryUnit): Promise<void>;
  /** A conversation's turns kept as raw turns of a session (`POST /v1/memory/ingest`): the ids of those stored, in order. */
  ingest(scope: string, sessionId: string, turns: readonly IngestTurn[]): Promise<string[]>;
}

export interface StoredSkillUnderTest {
  readonly skill: Skill;
  readonly version: number;
  /** The library generation of the write that made this version. */
  readonly generation: number;
}

export interface SkillsUnderTest {
  /** Writes the next version of a skill (created when new). */
  write(draft: SkillDraft, source: string): Promise<{ version: number; generation: number }>;
  get(name: string): Promise<StoredSkillUnderTest | undefined>;
  /** Removes a live skill; the generation of the removal. */
  remove(name: string, source: string): Promise<number>;
  generation(): Promise<number>;
  versions(name: string): Promise<VersionRow[]>;
}

export interface ConversationUnderTest {
  /** Records finished turns; one error (or undefined) per turn. */
  write(turns: readonly FinishedTurn[]): Promise<unknown[]>;
  summary(turnId: string): Promise<TurnRow | undefined>;
  receivedBody(turnId: string): Promise<unknown>;
  session(id: string): Promise<SessionRow | undefined>;
  counts(): Promise<{ sessions: number; openSessions: number; turns: number }>;
  /** Whether this call ended the session. */
  endSession(id: string, reason: SessionEndReason, now: number): Promise<boolean>;
  /** The sessions this call ended for being idle since before `cutoff`. */
  endIdleSessions(cutoff: number): Promise<string[]>;
}

export interface MembersUnderTest {
  add(name: string): Promise<IssuedKey>;
  /** The member a presented key belongs to, as the proxy recognises keys on this engine. */
  identify(key: string): Promise<Member | undefined>;
  rotate(name: string): Promise<IssuedKey>;
  remove(name: string): Promise<Member>;
  list(): Promise<Member[]>;
}

/** One empty store of an engine. */
export interface StoresUnderTest {
  readonly queue: QueueUnderTest;
  budget(dailyTokens: number): BudgetUnderTest;
  readonly memory: MemoryUnderTest;
  readonly skills: SkillsUnderTest;
  readonly conversation: ConversationUnderTest;
  readonly members: MembersUnderTest;
  /** The RL sample buffer: recording (the turn writer's part) and the port the judge and training use. */
  readonly rl: { record(sample: NewSample): Promise<void>; store: RlSampleStore };
  close(): Promise<void>;
}

export interface EngineUnderTest {
  readonly name: string;
  /** Why this engine cannot run here, or false. */
  readonly skip: string | false;
  start(): Promise<void>;
  /** A new empty, migrated store. */
  open(): Promise<StoresUnderTest>;
  stop(): Promise<void>;
}

const MAX_ATTEMPTS = 3;
const NODE = 'engines-test';

/** Memory as configured by default, without extraction (ingesting turns then queues nothing). */
const memoryDefaults = () => ({ ...memorySettings(loadConfig({ env: { METACLAW_HOME: '/nonexistent-metaclaw-home' } })), autoExtract: false });

const sqliteEngine = (): EngineUnderTest => ({
  name: 'SQLite (personal store)',
  skip: false,
  start: () => Promise.resolve(),
  stop: () => Promise.resolve(),
  open() {
    const db = openDatabase(':memory:');
    const skillsDir = mkdtempSync(join(tmpdir(), 'metaclaw-engines-skills-'));
    const jobs = new JobQueue(db, NODE, MAX_ATTEMPTS);
    // The memory service's own store: its ingestion writes there.
    const service = new MemoryService({ db, logger: silentLogger(), settings: memoryDefaults() });
    const memory = service.store;
    const skills = new SkillsService({
      db,
      logger: silentLogger(),
      settings: {
        enabled: true,
        dir: skillsDir,
        retrievalMode: 'template',
        topK: 3,
        fullBodyTopN: 1,
        maxTokens: 2_000,
        minRelevance: 0.1,
        autoEvolve: false,
        evolveEveryNTurns: 10,
        review: 'auto',
        maxNewSkills: 3,
        embedding: { apiBase: '', apiKey: '', model: '' },
        evolver: { apiBase: '', apiKey: '', model: '' },
      },
    });
    const writer = new TurnWriter(db, [], undefined, true);
    const conversation = new ConversationStore(db);
    const members = new MemberDirectory(db);
    // A throw becomes a rejection, as the PostgreSQL stores report errors.
    const run = <T>(work: () => T): Promise<T> => new Promise<T>((resolve) => resolve(work()));
    return Promise.resolve({
      queue: {
        enqueue: (kind, payload, options = {}) => run(() => jobs.enqueue(kind, payload, options)),
        lease: (kinds, leaseMs = 60_000) => run(() => jobs.lease(new Set(kinds), leaseMs)),
        complete: (job) => run(() => jobs.complete(job.id)),
        fail: (job, error, retryable) => run(() => jobs.fail(job, error, { retryable })),
        release: (job) => run(() => jobs.release(job.id)),
        revive: (id) => run(() => jobs.revive(id)),
        get: (id) => run(() => jobs.get(id)),
        counts: () => run(() => jobs.counts()),
        makeDue: (id) => run(() => void db.prepare('UPDATE jobs SET run_after = 0 WHERE id = ?').run(id)),
      },
      budget(dailyTokens) {
        const budget = new LearningBudget(db, dailyTokens);
        return {
          record: (kind, tokens, calls, now) => run(() => budget.record(kind, tokens, calls, now)),
          summary: (now) => run(() => budget.summary(now)),
          pauseReason: (now) => run(() => budget.pauseReason(now)),
        };
      },
      memory: {
        add: (draft, options = {}) => run(() => memory.add(draft, options)),
        get: (id) => run(() => memory.get(id)),
        search: (scope, query, limit = 10) => run(() => memory.search(scope, uniqueTerms(query), limit).candidates.map((candidate) => candidate.unit.id)),
        supersede: (old, by) => run(() => void memory.supersede(old.id, by.id)),
        forget: (unit) => run(() => void memory.delete(unit.id)),
        ingest: (scope, sessionId, turns) => run(() => service.ingest(scope, sessionId, turns).stored.map((stored) => stored.id)),
      },
      skills: {
        write: (draft, source) =>
          run(() => {
            const written = skills.applyDraft(draft, skills.library.get(draft.name) ? 'update' : 'create', source);
            return { version: written.version, generation: written.generation };
          }),
        get: (name) =>
          run(() => {
            const skill = skills.library.get(name);
            // The personal library keeps a version's generation in the skill's own frontmatter.
            return skill ? { skill, version: skill.version, generation: skill.generation ?? 0 } : undefined;
          }),
        remove: (name, source) => run(() => skills.remove(name, source).generation),
        generation: () => run(() => skills.history.generation),
        versions: (name) => run(() => skills.history.versions(name)),
      },
      conversation: {
        write: (turns) => run(() => writer.write(turns)),
        summary: (id) => run(() => conversation.getTurnSummary(id)),
        receivedBody: (id) => run(() => conversation.receivedBody(id)),
        session: (id) => run(() => conversation.getSession(id)),
        counts: () => run(() => conversation.counts()),
        endSession: (id, reason, now) => run(() => writer.endSession(id, reason, now)),
        endIdleSessions: (cutoff) => run(() => writer.endIdleSessions(cutoff)),
      },
      members: {
        add: (name) => run(() => members.add(name)),
        identify: (key) => run(() => members.byKey(key)),
        rotate: (name) => run(() => members.rotateKey(name)),
        remove: (name) => run(() => members.remove(name)),
        list: () => run(() => members.list()),
      },
      rl: (() => {
        const buffer = new RlBuffer(db);
        return { record: (sample: NewSample) => run(() => buffer.record(sample)), store: buffer };
      })(),
      close() {
        skills.close();
        db.close();
        rmSync(skillsDir, { recursive: true, force: true });
        return Promise.resolve();
      },
    });
  },
});

const postgresEngine = (): EngineUnderTest => {
  let server: TestPostgres | undefined;
  let admin: pg.Pool | undefined;
  let databases = 0;
  return {
    name: 'PostgreSQL (team store)',
    skip: postgresSkip(),
    async start() {
      server = await startPostgres();
      // Migrated once; every store is a copy of it (CREATE DATABASE … TEMPLATE is much faster than migrating each).
      const template = openPool(server.createDatabase('engines_template'));
      try {
        await migratePostgres(template);
      } finally {
        await template.end();
      }
      admin = openPool(server.url, { max: 1 });
    },
    async stop() {
      await admin?.end();
      server?.stop();
    },
    async open() {
      const name = `engines_${++databases}`;
      await admin!.query(`CREATE DATABASE ${name} TEMPLATE engines_template`);
      const pool = openPool(server!.url.replace(/\/postgres$/, `/${name}`), { max: 4 });
      const jobs = new PgJobQueue(pool, NODE, MAX_ATTEMPTS);
      // The queue's writes carry the lease's fencing token: the adapter keeps each leased job to hand it back.
      const held = new Map<number, LeasedJob>();
      const leased = (job: Job): LeasedJob => {
        const found = held.get(job.id);
        if (!found) throw new Error(`job ${job.id} is not held by this adapter`);
        return found;
      };
      const writer = new PgMemoryWriter(pool);
      const search = new PgMemorySearch(pool);
      const api = new PgMemoryApi(pool, silentLogger(), { queue: jobs, settings: memoryDefaults() });
      const skills = new PgSkillStore(pool);
      const sink = new PgTurnSink(pool);
      const reads = new PgConversationReads(pool, sink);
      const members = new PgMemberDirectory(pool);
      return {
        queue: {
          enqueue: (kind, payload, options = {}) => jobs.enqueue(kind, payload, options),
          async lease(kinds, leaseMs = 60_000) {
            const job = await jobs.lease(new Set(kinds), leaseMs);
            if (job) held.set(job.id, job);
            return job;
          },
          complete: async (job) => void (await jobs.complete(leased(job))),
          fail: (job, error, retryable) => jobs.fail(leased(job), error, { retryable }),
          release: async (job) => void (await jobs.release(leased(job))),
          revive: (id) => jobs.revive(id),
          get: (id) => jobs.get(id),
          counts: () => jobs.counts(),
          makeDue: async (id) => void (await pool.query('UPDATE jobs SET run_after = 0 WHERE id = $1', [id])),
        },
        budget(dailyTokens) {
          const budget = new PgLearningBudget(pool, dailyTokens, NODE);
          return {
            record: (kind, tokens, calls, now) => budget.record(kind, tokens, calls, now),
            summary: (now) => budget.summary(now),
            pauseReason: (now) => budget.pauseReason(now),
          };
        },
        memory: {
          add: (draft, options = {}) => writer.add(draft, options),
          get: (id) => api.get(id),
          search: async (scope, query, limit = 10) => (await search.search(scope, uniqueTerms(query), limit)).hits.map((hit) => hit.id),
          // The team store's index is what recall reads a unit's status from (memory-search.ts): superseding there is what takes it out.
          supersede: (old) => search.setActive(old.sequence, false),
          forget: async (unit) => void (await api.forget(unit.id)),
          ingest: async (scope, sessionId, turns) => (await api.ingest(scope, sessionId, turns)).stored.map((stored) => stored.id),
        },
        skills: {
          write: async (draft, source) => {
            const written = await skills.write(draft, { basedOn: (await skills.get(draft.name))?.version ?? 0, source });
            return { version: written.version, generation: written.generation };
          },
          get: async (name) => {
            const stored = await skills.get(name);
            return stored ? { skill: stored.skill, version: stored.version, generation: stored.generation } : undefined;
          },
          remove: async (name, source) => (await skills.remove(name, { basedOn: (await skills.get(name))?.version ?? 0, source })).generation,
          generation: () => skills.generation(),
          versions: (name) => skills.versions(name),
        },
        conversation: {
          write: (turns) => sink.write(turns),
          summary: (id) => reads.getTurnSummary(id),
          receivedBody: (id) => reads.receivedBody(id),
          session: (id) => reads.getSession(id),
          counts: () => reads.counts(),
          endSession: (id, reason, now) => sink.endSession(id, reason, now),
          endIdleSessions: (cutoff) => sink.endIdleSessions(cutoff),
        },
        members: {
          add: (name) => members.add(name),
          // A node recognises keys from its copy of the members (MemberCache), refreshed from the store.
          identify: async (key) => {
            const cache = new MemberCache();
            cache.replace(await members.rows());
            return cache.byKey(key);
          },
          rotate: (name) => members.rotateKey(name),
          remove: (name) => members.remove(name),
          list: () => members.list(),
        },
        rl: { record: (sample) => sampleRecording.record(pool, sample), store: new PgRlSamples(pool) },
        async close() {
          writer.close();
          api.close();
          await pool.end();
        },
      };
    },
  };
};

/** Both engines, SQLite first. */
export function engines(): EngineUnderTest[] {
  return [sqliteEngine(), postgresEngine()];
}
