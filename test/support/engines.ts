/**
 * The stores of both engines behind the product's ports (src/store/ports.ts), so one suite
 * (test/store-engines.test.ts) runs the same test bodies against the personal store (SQLite,
 * synchronous classes) and the team store (PostgreSQL); the bodies await every answer, as callers
 * of the ports do. Where a port covers a store, the suite gets the store's own object. Where the
 * engines' classes differ (memory search, skill writes, how a node recognises a key), a thin
 * adapter maps each to one behaviour; what an adapter adds of its own (the test clock) is marked.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { ConversationStore, TurnWriter } from '../../src/conversation/index.js';
import { LearningBudget } from '../../src/learning/budget.js';
import { JobQueue } from '../../src/learning/queue.js';
import { silentLogger } from '../../src/logging/index.js';
import { loadConfig } from '../../src/config/index.js';
import { MemoryService, type IngestTurn } from '../../src/memory/service.js';
import type { MemoryUnit } from '../../src/memory/types.js';
import { SkillsService } from '../../src/skills/service.js';
import type { Skill, SkillDraft } from '../../src/skills/types.js';
import { RlBuffer, type NewSample, type ScoredSampleSource } from '../../src/rl/buffer/index.js';
import { memorySettings } from '../../src/runtime/settings.js';
import { openDatabase } from '../../src/store/index.js';
import type {
  ConversationReadStore,
  JobQueueStore,
  LearningBudgetStore,
  MemberStore,
  MemoryUnitReader,
  MemoryUnitWriter,
  RlSampleStore,
  SkillVersionStore,
  TurnRecordSink,
} from '../../src/store/ports.js';
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
} from '../../src/store/postgres/index.js';
import { PgMemorySearch } from '../../src/store/postgres/memory-search.js';
import { MemberCache } from '../../src/team/member-cache.js';
import { MemberDirectory, type Member } from '../../src/team/members.js';
import { uniqueTerms } from '../../src/text/index.js';
import { postgresSkip, startPostgres, type TestPostgres } from './postgres.js';

/**
 * Memory as the suite uses it: writing and reading units go through the product's ports; keyword
 * search, superseding and forgetting differ between the engines' classes, so the adapter maps them.
 */
export interface MemoryUnderTest extends MemoryUnitWriter, MemoryUnitReader {
  /** Ids of the active units a keyword search of `query`'s terms finds in `scope`, best first. */
  search(scope: string, query: string, limit?: number): Promise<string[]>;
  /** `old` is replaced by `by` and leaves default search results. */
  supersede(old: MemoryUnit, by: MemoryUnit): Promise<void>;
  /** `unit` is deleted for good. */
  forget(unit: MemoryUnit): Promise<void>;
  /** `unit`'s text is changed (`PATCH /v1/memory/{id}`). */
  edit(unit: MemoryUnit, content: string): Promise<void>;
  /** A conversation's turns kept as raw turns of a session (`POST /v1/memory/ingest`): the ids of those stored, in order. */
  ingest(scope: string, sessionId: string, turns: readonly IngestTurn[]): Promise<string[]>;
}

export interface StoredSkillUnderTest {
  readonly skill: Skill;
  readonly version: number;
  /** The library generation of the write that made this version. */
  readonly generation: number;
}

/** Skills as the suite uses them: the version history is the product's port; writing and reading differ between the engines (a folder library, a versioned table). */
export interface SkillsUnderTest extends SkillVersionStore {
  /** Writes the next version of a skill (created when new). */
  write(draft: SkillDraft, source: string): Promise<{ version: number; generation: number }>;
  get(name: string): Promise<StoredSkillUnderTest | undefined>;
  /** Removes a live skill; the generation of the removal. */
  remove(name: string, source: string): Promise<number>;
  generation(): Promise<number>;
}

/** One empty store of an engine. */
export interface StoresUnderTest {
  /** The store's own queue, through the product's port. */
  readonly queue: JobQueueStore;
  /** The test clock: a queued job's backoff is over now (its run_after set back; no store method does this). */
  makeDue(id: number): Promise<void>;
  /** The store's own budget, through the product's port. */
  budget(dailyTokens: number): LearningBudgetStore;
  readonly memory: MemoryUnderTest;
  readonly skills: SkillsUnderTest;
  /** The store's own conversation classes: where finished turns are written, and the reads. */
  readonly conversation: { readonly sink: TurnRecordSink; readonly reads: ConversationReadStore };
  readonly members: MemberStore;
  /** The member a presented key belongs to, as the proxy recognises keys on this engine. */
  identifyMember(key: string): Promise<Member | undefined>;
  /** The RL sample buffer: recording (the turn writer's part) and the port the judge and training use. */
  readonly rl: { record(sample: NewSample): Promise<void>; store: RlSampleStore & ScoredSampleSource };
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
        searchKeys: false,
        evolveEveryNTurns: 10,
        review: 'auto',
        maxNewSkills: 3,
        embedding: { apiBase: '', apiKey: '', model: '' },
        evolver: { apiBase: '', apiKey: '', model: '' },
      },
    });
    const members = new MemberDirectory(db);
    // The store's answers are synchronous: a test awaits them all, as callers of the ports do.
    const run = <T>(work: () => T): Promise<T> => new Promise<T>((resolve) => resolve(work()));
    return Promise.resolve({
      queue: jobs,
      makeDue: (id) => run(() => void db.prepare('UPDATE jobs SET run_after = 0 WHERE id = ?').run(id)),
      budget: (dailyTokens) => new LearningBudget(db, dailyTokens),
      memory: {
        add: (draft, options = {}) => memory.add(draft, options),
        get: (id) => memory.get(id),
        search: (scope, query, limit = 10) => run(() => memory.search(scope, uniqueTerms(query), limit).candidates.map((candidate) => candidate.unit.id)),
        supersede: (old, by) => run(() => void memory.supersede(old.id, by.id)),
        forget: (unit) => run(() => void memory.delete(unit.id)),
        edit: (unit, content) => run(() => void memory.update(unit.id, { content })),
        ingest: async (scope, sessionId, turns) => (await service.ingest(scope, sessionId, turns)).stored.map((stored) => stored.id),
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
        versions: (name) => skills.history.versions(name),
      },
      conversation: { sink: new TurnWriter(db, [], undefined, true), reads: new ConversationStore(db) },
      members,
      identifyMember: (key) => run(() => members.byKey(key)),
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
      const writer = new PgMemoryWriter(pool);
      const search = new PgMemorySearch(pool);
      const api = new PgMemoryApi(pool, silentLogger(), { queue: jobs, settings: memoryDefaults() });
      const skills = new PgSkillStore(pool);
      const sink = new PgTurnSink(pool);
      const reads = new PgConversationReads(pool, sink);
      const members = new PgMemberDirectory(pool);
      return {
        // The suite hands back only the jobs this queue leased, and those carry their lease's fencing token.
        queue: jobs,
        makeDue: async (id) => void (await pool.query('UPDATE jobs SET run_after = 0 WHERE id = $1', [id])),
        budget: (dailyTokens) => new PgLearningBudget(pool, dailyTokens, NODE),
        memory: {
          add: (draft, options) => writer.add(draft, options),
          get: (id) => api.get(id),
          search: async (scope, query, limit = 10) => (await search.search(scope, uniqueTerms(query), limit)).hits.map((hit) => hit.id),
          // The team store's index is what recall reads a unit's status from (memory-search.ts): superseding there is what takes it out.
          supersede: (old) => search.setActive(old.sequence, false),
          forget: async (unit) => void (await api.forget(unit.id)),
          edit: async (unit, content) => void (await api.update(unit.id, { content })),
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
        conversation: { sink, reads },
        members,
        // A node recognises keys from its copy of the members (MemberCache), refreshed from the store.
        identifyMember: async (key) => {
          const cache = new MemberCache();
          cache.replace(await members.rows());
          return cache.byKey(key);
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
