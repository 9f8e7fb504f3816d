import type pg from 'pg';
import type { Logger } from '../../logging/index.js';
import { SkillMirror } from '../../skills/mirror.js';
import { PgSkillKeys } from './skill-key-jobs.js';
import type { PgSkillStore } from './skill-store.js';
import { SkillSubscription } from './skill-subscription.js';

/** The team's skills as one process keeps them: the in-memory copy, its search keys, and what keeps both in step. */
export interface FollowedSkills {
  mirror: SkillMirror;
  keys: PgSkillKeys;
  /** Not started: `start()` listens and loads the library; `stop()` before the pool closes. */
  subscription: SkillSubscription;
}

/**
 * The team store's skill library followed live (a node, `metaclaw mcp`): every skill with the keys
 * the team's search keys job wrote for it, caught up on each notification of the skills channel
 * (keys re-read first, as that job notifies the same channel) and every 30 s whatever was heard.
 */
export function followTeamSkills(url: string, pool: pg.Pool, store: PgSkillStore, options: { applicationName: string; logger?: Logger }): FollowedSkills {
  const keys = new PgSkillKeys();
  const mirror = new SkillMirror((skill) => keys.textOf(skill));
  const subscription = new SkillSubscription(url, store, mirror, {
    pollMs: 30_000,
    beforeApply: () => keys.refresh(pool, mirror),
    applicationName: options.applicationName,
    ...(options.logger ? { logger: options.logger } : {}),
  });
  return { mirror, keys, subscription };
}
