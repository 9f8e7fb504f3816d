import type { Db } from '../store/index.js';

/**
 * The store-side figures of `/metrics`, read when Prometheus scrapes (a handful of GROUP BY
 * queries over indexed or small tables), never on the request path.
 */
export function storeFigures(db: Db, queue: () => Record<string, number>, skillCategories: () => readonly string[]) {
  const jobs = db.prepare<[], { kind: string; status: string; count: number }>('SELECT kind, status, COUNT(*) AS count FROM jobs GROUP BY kind, status');
  const memories = db.prepare<[], { type: string; count: number }>("SELECT type, COUNT(*) AS count FROM memory_units WHERE status = 'active' GROUP BY type");
  const scores = db.prepare<[], { score: number; count: number }>(
    'SELECT reward AS score, COUNT(*) AS count FROM rl_samples WHERE reward IS NOT NULL GROUP BY reward',
  );
  const steps = db.prepare<[], { status: string; count: number }>('SELECT status, COUNT(*) AS count FROM rl_steps GROUP BY status');
  return {
    queue,
    jobs: () => jobs.all(),
    skills: () => {
      const counts = new Map<string, number>();
      for (const category of skillCategories()) counts.set(category, (counts.get(category) ?? 0) + 1);
      return [...counts].map(([category, count]) => ({ category, count }));
    },
    memories: () => memories.all(),
    judgeScores: () => scores.all(),
    trainingSteps: () => steps.all(),
  };
}
