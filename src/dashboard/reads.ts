import type { z } from 'zod';
import { learningData, type LearningView } from './learning.js';
import { memoryData, memoryDetail, sqliteMemoryReads, type MemoryDetailView, type MemoryListView } from './memory.js';
import { overviewData, type OverviewView } from './overview.js';
import { sessionDetail, sessionList, type sessionDetailQuery, type SessionDetailView, type sessionListQuery, type SessionListView } from './sessions.js';
import { skillDetailData, skillLogData, skillsListData, sqliteSkillsReads, type SkillDetailView, type SkillLogView, type SkillsListView } from './skills.js';
import type { DashboardSources } from './types.js';

/**
 * The dashboard's read port: each data route's answer, from whichever store the proxy runs on (the
 * personal SQLite store, or a team node's PostgreSQL: dashboard/team-reads.ts). The shapes are the
 * pages' (views.ts), the same from both.
 */
export interface DashboardReads {
  overview(): Promise<OverviewView>;
  learning(days: number): Promise<LearningView>;
  sessions(query: z.infer<typeof sessionListQuery>): Promise<SessionListView>;
  session(id: string, query: z.infer<typeof sessionDetailQuery>): Promise<SessionDetailView>;
  memory(query: Record<string, string>): Promise<MemoryListView>;
  memoryDetail(id: string): Promise<MemoryDetailView>;
  skills(q: string, page: number): Promise<SkillsListView>;
  skill(name: string, choice: { from?: number | undefined; to?: number | undefined }): Promise<SkillDetailView>;
  skillLog(count: number): Promise<SkillLogView>;
}

/** The personal install's dashboard: its own services and SQLite store, read synchronously as before. */
export function sqliteDashboardReads(sources: DashboardSources): DashboardReads {
  const memory = sqliteMemoryReads(sources);
  const skills = sqliteSkillsReads(sources.skills);
  return {
    overview: async () => overviewData(sources),
    learning: async (days) => learningData(sources.db, days),
    sessions: async (query) => sessionList(sources.db, query),
    session: async (id, query) => sessionDetail(sources.db, sources.conversation, id, query),
    memory: (query) => memoryData(memory, query),
    memoryDetail: (id) => memoryDetail(memory, id),
    skills: (q, page) => skillsListData(skills, q, page),
    skill: (name, choice) => skillDetailData(skills, name, choice),
    skillLog: (count) => skillLogData(skills, count),
  };
}
