import type pg from 'pg';
import { z } from 'zod';
import type { SkillMirror } from '../skills/index.js';
import { parseSessionRow, parseTurnRow } from '../store/postgres/conversation-rows.js';
import type { PgConversationReads, PgJobQueue, PgLearningBudget, PgMemoryApi, PgSkillProposals, PgSkillStore } from '../store/postgres/index.js';
import type { SchedulerWindow } from '../scheduler/index.js';
import { sharedRows } from '../store/postgres/shared-rows.js';
import { PgSkillCredit } from '../store/postgres/skill-credit.js';
import { PgSkillEvolutions } from '../store/postgres/skill-evolutions.js';
import { fillMemoryContents, shownMemoryIds } from './injected.js';
import { injectedBlock } from './injected-text.js';
import { learningAxis, learningView, LEARNING_SQL, type DayCount, type JudgeRows, type SkillVersionEvent, type TrainingStep } from './learning.js';
import { memoryData, memoryDetail, type MemoryPageReads } from './memory.js';
import { ACTIVITY_SQL, activityWindow, eventSql, EVENTS_LIMIT, learningEvents, overviewView, type EventRows, type OverviewStatus } from './overview.js';
import type { DashboardReads } from './reads.js';
import {
  injectedViews,
  JOBS_LIMIT,
  sessionCursor,
  sessionDetailView,
  sessionListView,
  sessionNotFound,
  SESSIONS_PER_PAGE,
  sessionSql,
  TURNS_PER_PAGE,
  type InjectedTurnRow,
  type ProfiledSession,
  type SessionJobRow,
} from './sessions.js';
import { skillDetailData, skillLogData, skillsListData, type SkillsPageReads } from './skills.js';
import { POSTGRES_SQL } from './sql.js';
import type { LatencySummary } from './types.js';

const DAY_MS = 86_400_000;

/** What a node's status report tells the overview (TeamRuntime.statusReport()); the rest is read from the team store. */
export type NodeStatus = Pick<
  OverviewStatus,
  'version' | 'mode' | 'mode_reason' | 'started_at' | 'uptime_seconds' | 'auth_required' | 'upstream' | 'requests' | 'rl'
> & { learning: Pick<OverviewStatus['learning'], 'paused' | 'paused_reason'> };

/** A team node's services the dashboard reads: the team store's tables through the node's own readers. */
export interface TeamDashboardSources {
  pool: pg.Pool;
  status(): NodeStatus;
  conversation: PgConversationReads;
  queue: PgJobQueue;
  budget: PgLearningBudget;
  skills: { enabled: boolean; review: 'auto' | 'manual'; mirror: SkillMirror; store: PgSkillStore; proposals: PgSkillProposals };
  /** undefined when memory is turned off on this node */
  memory: PgMemoryApi | undefined;
  addedLatency(): LatencySummary;
  /** the windows this node's scheduler saw since it started (none where it runs no scheduler) */
  windows(from: number, to: number, limit: number): SchedulerWindow[];
}

async function scalar(pool: pg.Pool, sql: string, params: readonly unknown[] = []): Promise<number | null> {
  const row = (await sharedRows<Record<string, unknown>>(pool, sql, params))[0];
  const value = row === undefined ? null : Object.values(row)[0];
  return typeof value === 'number' ? value : null;
}

const PG_EVENTS = eventSql(POSTGRES_SQL);
const PG_SESSIONS = sessionSql(POSTGRES_SQL);
const profiled = (row: Record<string, unknown>): ProfiledSession => ({
  ...parseSessionRow(row),
  client_profile: z
    .string()
    .nullable()
    .parse(row['client_profile'] ?? null),
});
const injectedTurn = (row: Record<string, unknown>): InjectedTurnRow => ({
  ...parseTurnRow(row),
  injected_json: z
    .string()
    .nullable()
    .parse(row['injected_json'] ?? null),
});

/**
 * The dashboard on a node of a team store: the same pages over the team's tables, which have the
 * personal store's columns (store/postgres-schema.ts). What a node does not track is answered
 * honestly: no skill file problems (the store checks every write), the scheduler windows are
 * those this node saw since it started, and the latency and request figures are this node's own.
 */
export function teamDashboardReads(sources: TeamDashboardSources): DashboardReads {
  const { pool } = sources;
  const memory = teamMemoryReads(sources);
  const skills = teamSkillsReads(sources);
  return {
    async overview() {
      const now = Date.now();
      const { turnsSince, failuresSince } = activityWindow(now);
      const [counts, queue, spend, pending, memoryStats, mainTurnsLastDay, lastSkillAt, lastMemoryAt, failingExtractions, jobs, skillRows, memories] =
        await Promise.all([
          sources.conversation.counts(),
          sources.queue.counts(),
          sources.budget.summary(),
          sources.skills.proposals.pending(),
          sources.memory?.allStats(),
          scalar(pool, ACTIVITY_SQL.mainTurnsLastDay, [turnsSince]),
          scalar(pool, ACTIVITY_SQL.lastSkillAt),
          scalar(pool, ACTIVITY_SQL.lastMemoryAt),
          scalar(pool, ACTIVITY_SQL.failingExtractions, [failuresSince]),
          sharedRows<EventRows['jobs'][number]>(pool, PG_EVENTS.jobs, [EVENTS_LIMIT]),
          sharedRows<EventRows['skills'][number]>(pool, PG_EVENTS.skills, [EVENTS_LIMIT]),
          sharedRows<EventRows['memories'][number]>(pool, PG_EVENTS.memories, [EVENTS_LIMIT]),
        ]);
      const node = sources.status();
      const status: OverviewStatus = {
        ...node,
        sessions: { total: counts.sessions, open: counts.openSessions, turns: counts.turns },
        queue,
        learning: {
          paused: node.learning.paused,
          paused_reason: node.learning.paused_reason,
          spend: {
            tokens_today: spend.tokensToday,
            tokens_total: spend.tokensTotal,
            calls_today: spend.callsToday,
            calls_total: spend.callsTotal,
            daily_budget: sources.budget.dailyLimit,
            by_kind_today: spend.byKindToday,
          },
        },
        skills: {
          enabled: sources.skills.enabled,
          count: sources.skills.mirror.size,
          generation: sources.skills.mirror.generation,
          pending_proposals: pending.length,
        },
        memory: { enabled: sources.memory !== undefined, units: memoryStats?.total ?? 0, scopes: memoryStats?.scopes.length ?? 0 },
      };
      const activity = { mainTurnsLastDay: mainTurnsLastDay ?? 0, lastSkillAt, lastMemoryAt, failingExtractions: failingExtractions ?? 0 };
      return overviewView(status, activity, learningEvents({ jobs, skills: skillRows, memories }), sources.addedLatency(), now);
    },

    async learning(days) {
      const now = Date.now();
      const axis = learningAxis(days, now);
      const from = axis[0]!;
      const end = axis[axis.length - 1]! + DAY_MS;
      const counted = async (standing: boolean) => ({
        before: (await scalar(pool, LEARNING_SQL.memoriesBefore(standing), [from])) ?? 0,
        perDay: await sharedRows<DayCount>(pool, LEARNING_SQL.memoriesPerDay(standing), [from, end]),
      });
      const [skillVersions, learned, standing, perDay, perGeneration, training] = await Promise.all([
        sharedRows<SkillVersionEvent>(pool, LEARNING_SQL.skillVersions),
        counted(false),
        counted(true),
        sharedRows<JudgeRows['per_day'][number]>(pool, LEARNING_SQL.judgePerDay, [from]),
        sharedRows<JudgeRows['per_generation'][number]>(pool, LEARNING_SQL.judgePerGeneration),
        sharedRows<TrainingStep>(pool, LEARNING_SQL.trainingSteps),
      ]);
      // The node's own scheduler: every node runs the same windows, from when it started.
      const windows = sources.windows(from, now, 500);
      return learningView(axis, now, { skillVersions, learned, standing, judge: { per_day: perDay, per_generation: perGeneration }, training, windows });
    },

    async sessions(query) {
      const cursor = sessionCursor(query);
      const found = cursor
        ? await sharedRows<Record<string, unknown>>(pool, PG_SESSIONS.listBefore, [cursor.at, cursor.at, cursor.id, SESSIONS_PER_PAGE + 1])
        : await sharedRows<Record<string, unknown>>(pool, PG_SESSIONS.list, [SESSIONS_PER_PAGE + 1]);
      return sessionListView(found.map(profiled));
    },

    async session(id, query) {
      const [session] = await sharedRows<Record<string, unknown>>(pool, PG_SESSIONS.one, [id]);
      if (!session) throw sessionNotFound(id);
      const [turns, jobs] = await Promise.all([
        sharedRows<Record<string, unknown>>(pool, PG_SESSIONS.turns, [id, query.after ?? -1, TURNS_PER_PAGE + 1]),
        sharedRows<SessionJobRow>(pool, PG_SESSIONS.jobs, [id, id, JOBS_LIMIT]),
      ]);
      const turnRows = turns.map(injectedTurn);
      const shown = turnRows.slice(0, TURNS_PER_PAGE);
      // The injected block is cut out of each forwarded body, read (and decoded) first.
      const blocks = new Map<string, string | null>();
      const views = injectedViews(shown, () => null);
      await Promise.all(
        views.map(async (view, index) => {
          const turnId = shown[index]!.id;
          if (view && view.sections.length > 0) blocks.set(turnId, injectedBlock((await sources.conversation.getTurn(turnId))?.forwarded));
        }),
      );
      const injected = injectedViews(shown, (turnId) => blocks.get(turnId) ?? null);
      const ids = shownMemoryIds(injected);
      const units =
        ids.length === 0
          ? []
          : await sharedRows<{ id: string; type: string; content: string }>(pool, 'SELECT id, type, content FROM memory_units WHERE id = ANY(?::text[])', [
              ids,
            ]);
      fillMemoryContents(injected, new Map(units.map((unit) => [unit.id, unit])));
      return sessionDetailView(profiled(session), turnRows, injected, jobs);
    },

    memory: (query) => memoryData(memory, query),
    memoryDetail: (id) => memoryDetail(memory, id),
    skills: (q, page) => skillsListData(skills, q, page),
    skill: (name, choice) => skillDetailData(skills, name, choice),
    skillLog: (count) => skillLogData(skills, count),
  };
}

/** The team's memories, every member's scope (the pages are the owner's view); none when memory is off on this node. */
function teamMemoryReads(sources: TeamDashboardSources): MemoryPageReads {
  const api = sources.memory;
  return {
    scopes: async () => (api ? (await api.allStats()).scopes : []),
    search: (request) => (api ? api.search(request) : []),
    get: (id) => api?.get(id),
    units: (ids) => (api ? api.units(ids) : []),
    // The dashboard's queries are written once with `?` for both stores.
    query: (sql, params) => sharedRows(sources.pool, sql, params),
  };
}

/** The team's library as this node mirrors it, with the team store's history, proposals and credit. */
function teamSkillsReads(sources: TeamDashboardSources): SkillsPageReads {
  const { mirror, store, proposals, review } = sources.skills;
  const credit = new PgSkillCredit(sources.pool);
  return {
    list: async () => {
      const figures = await credit.figures();
      return mirror
        .all()
        .sort((a, b) => a.name.localeCompare(b.name))
        .map((skill) => ({ skill, credit: figures.get(skill.name) }));
    },
    generation: () => mirror.generation,
    review,
    index: mirror.index,
    get: (name) => mirror.get(name),
    pending: () => proposals.pending(),
    // Every write to the team store is checked: it holds no file that failed to parse.
    problems: () => [],
    versions: (name) => store.versions(name),
    creditOf: (name) => credit.figuresOf(name),
    recentSessions: (name) => credit.recentSessions(name, 10),
    text: async (skill) => (await store.get(skill.name))?.text ?? '',
    evolutionLines: (count) => new PgSkillEvolutions(sources.pool).lines(count),
    changesOnDisk: () => [],
    librarySwitches: () => [],
    proposal: (id) => proposals.get(id),
  };
}
