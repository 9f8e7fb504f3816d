import type { ProxyApp } from './types.js';

/** What the route reads: the node's RL report, read from the team store now. */
export interface TeamRlStatusSource {
  report(): Promise<unknown>;
}

/**
 * RL on a node of a team store, for the owner (the proxy key; a member key is refused like on every
 * management route): the team's sample buffer, the judge and the node's training report. Training
 * control (train_step, steps, checkpoints, rollback) is rl-routes.ts's, over the team's steps.
 */
export function teamRlRoutes(source: TeamRlStatusSource): (app: ProxyApp) => void {
  return (app) => {
    for (const path of ['/v1/rl', '/v1/rl/status']) app.get(path, async (c) => c.json(await source.report()));
  };
}
