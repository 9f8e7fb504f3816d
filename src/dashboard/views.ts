/**
 * What each dashboard data route answers, as the pages read it: the browser code imports these
 * types (type-only, erased from the bundle), so a page and its route cannot drift apart.
 */
export type { OverviewView } from './overview.js';
export type { SessionListView, SessionDetailView } from './sessions.js';
export type { SkillsListView, SkillDetailView, SkillLogView } from './skills.js';
export type { MemoryListView, MemoryDetailView } from './memory.js';
export type { LearningView } from './learning.js';
