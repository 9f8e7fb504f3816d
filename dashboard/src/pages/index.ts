import type { ComponentType } from 'preact';
import { LearningPage } from './learning.js';
import { LogPage } from './log.js';
import { MemoryPage } from './memory.js';
import { OverviewPage } from './overview.js';
import { SessionsPage } from './sessions.js';
import { SkillsPage } from './skills.js';

export interface PageProps {
  /** the address's parts after the page's own: `#/sessions/abc` gives ['abc'] */
  params: string[];
}

export interface Page {
  /** the first part of the address (`#/<path>`) */
  path: string;
  title: string;
  component: ComponentType<PageProps>;
}

/** The pages, in the order the navigation shows them. */
export const PAGES: Page[] = [
  { path: 'overview', title: 'Overview', component: OverviewPage },
  { path: 'sessions', title: 'Sessions', component: SessionsPage },
  { path: 'skills', title: 'Skills', component: SkillsPage },
  { path: 'memory', title: 'Memory', component: MemoryPage },
  { path: 'learning', title: 'Learning', component: LearningPage },
  { path: 'log', title: 'Log', component: LogPage },
];
