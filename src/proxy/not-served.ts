import { RequestError } from '../errors.js';
import type { ProxyApp } from './types.js';

/** The one code of a route a node of a team store does not serve (clients and tests match on it). */
export const NOT_SERVED_CODE = 'not_served_by_team_node';

/**
 * The answer of a management route that reads what only a personal install holds (RL training)
 * or that is turned off on this node: 501 in the client's error format rather than a
 * bare 404, worded the same wherever a node refuses. `why` says what instead (default: the CLI).
 */
export function notServedByTeamNode(path: string, why?: string): RequestError {
  return new RequestError(
    501,
    'api_error',
    NOT_SERVED_CODE,
    `${path} is not served by a node of a team store${why ? `: ${why}` : ' yet: use `metaclaw store` and `metaclaw team` for the team store; model requests are served here'}.`,
  );
}

/** Answers every method on each path (and below it) with `notServedByTeamNode`; registered after the routes a node serves. */
export function notServedRoutes(paths: ReadonlyArray<{ path: string; why?: string }>): (app: ProxyApp) => void {
  return (app) => {
    for (const { path, why } of paths)
      for (const route of [path, `${path}/*`])
        app.all(route, () => {
          throw notServedByTeamNode(path, why);
        });
  };
}
