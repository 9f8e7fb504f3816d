import type pg from 'pg';
import { z } from 'zod';
import type { Db } from '../store/index.js';
import type { StoreFigures } from './proxy-metrics.js';

/**
 * The store-side figures of `/metrics`, read when Prometheus scrapes (a handful of GROUP BY
 * queries over indexed or small tables), never on the request path. The tables and columns are
 * the same in SQLite and in the team store (store/postgres-schema.ts), so each query is written
 * once for both.
 */
const FIGURES_SQL = {
  jobs: 'SELECT kind, status, COUNT(*) AS count FROM jobs GROUP BY kind, status',
  memories: "SELECT type, COUNT(*) AS count FROM memory_units WHERE status = 'active' GROUP BY type",
  judgeScores: 'SELECT reward AS score, COUNT(*) AS count FROM rl_samples WHERE reward IS NOT NULL GROUP BY reward',
  trainingSteps: 'SELECT status, COUNT(*) AS count FROM rl_steps GROUP BY status',
} as const;

// PostgreSQL answers COUNT(*) as BIGINT, which `pg` hands over as text.
const count = z.coerce.number();
const FIGURE_ROWS = {
  jobs: z.array(z.object({ kind: z.string(), status: z.string(), count })),
  memories: z.array(z.object({ type: z.string(), count })),
  judgeScores: z.array(z.object({ score: z.number(), count })),
  trainingSteps: z.array(z.object({ status: z.string(), count })),
};

type Figure = keyof typeof FIGURES_SQL;

/** Runs one of the queries on a store: at once (SQLite) or as a promise (the team store). */
type Rows = (sql: string) => unknown[] | Promise<unknown[]>;

function figuresOver(rows: Rows, queue: StoreFigures['queue'], skillCategories: () => readonly string[]): StoreFigures {
  const read =
    <F extends Figure>(figure: F) =>
    () => {
      const parse = (found: unknown[]) => FIGURE_ROWS[figure].parse(found) as z.infer<(typeof FIGURE_ROWS)[F]>;
      const answer = rows(FIGURES_SQL[figure]);
      return answer instanceof Promise ? answer.then(parse) : parse(answer);
    };
  return {
    queue,
    jobs: read('jobs'),
    skills: () => {
      const counts = new Map<string, number>();
      for (const category of skillCategories()) counts.set(category, (counts.get(category) ?? 0) + 1);
      return [...counts].map(([category, count]) => ({ category, count }));
    },
    memories: read('memories'),
    judgeScores: read('judgeScores'),
    trainingSteps: read('trainingSteps'),
  };
}

/** The personal store's figures (SQLite: each statement prepared once, read synchronously). */
export function storeFigures(db: Db, queue: () => Record<string, number>, skillCategories: () => readonly string[]): StoreFigures {
  const statements = new Map<string, { all(): unknown[] }>(Object.values(FIGURES_SQL).map((sql) => [sql, db.prepare(sql)]));
  return figuresOver((sql) => statements.get(sql)!.all(), queue, skillCategories);
}

/**
 * A team node's figures: the same queries over the team store, so they count the work of every
 * node. Memories are counted across every member's scope — counts only, no contents; `/metrics`
 * needs the proxy key on a node (a member key is refused).
 */
export function teamStoreFigures(pool: pg.Pool, queue: () => Promise<Record<string, number>>, skillCategories: () => readonly string[]): StoreFigures {
  return figuresOver(async (sql) => (await pool.query(sql)).rows as unknown[], queue, skillCategories);
}
