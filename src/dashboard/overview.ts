import type { Db } from '../store/index.js';
import type { StatusReport } from '../runtime/app.js';
import type { DashboardSources } from './types.js';

const DAY_MS = 86_400_000;
/** Main turns in a day past which "nothing learned" is worth a warning (a few turns teach little). */
const STALE_AFTER_TURNS = 10;

export interface LearningEvent {
  at: string;
  what: 'job' | 'skill' | 'memory';
  title: string;
  detail: string | null;
  ok: boolean;
  /** the session it came from, when known (the sessions page shows it) */
  session_id: string | null;
}

export interface Warning {
  code: string;
  message: string;
}

/** The overview page: is the proxy serving, and is the agent learning? */
export function overviewData(sources: DashboardSources, now = Date.now()) {
  const status = sources.status();
  const activity = recentActivity(sources.db, now);
  return {
    generated_at: new Date(now).toISOString(),
    version: status.version,
    mode: status.mode,
    mode_reason: status.mode_reason,
    started_at: status.started_at,
    uptime_seconds: status.uptime_seconds,
    auth_required: status.auth_required,
    upstream: status.upstream,
    requests: {
      total: status.requests.total,
      active: status.requests.active,
      streaming: status.requests.streaming,
      errors: status.requests.errors,
      errors_total: Object.values(status.requests.errors).reduce((sum, count) => sum + count, 0),
      tokens: status.requests.tokens,
      added_latency: sources.addedLatency(),
    },
    sessions: status.sessions,
    queue: status.queue,
    learning: status.learning,
    skills: { ...status.skills, last_change_at: iso(activity.lastSkillAt) },
    memory: { ...status.memory, last_learned_at: iso(activity.lastMemoryAt) },
    rl: status.rl,
    activity: { main_turns_last_day: activity.mainTurnsLastDay },
    events: learningEvents(sources.db),
    warnings: warnings(status, activity),
  };
}

interface Activity {
  mainTurnsLastDay: number;
  lastSkillAt: number | null;
  lastMemoryAt: number | null;
  failingExtractions: number;
}

function recentActivity(db: Db, now: number): Activity {
  const since = now - DAY_MS;
  const scalar = (sql: string, ...args: unknown[]) =>
    (db
      .prepare(sql)
      .pluck()
      .get(...args) as number | null | undefined) ?? null;
  return {
    mainTurnsLastDay: scalar(`SELECT count(*) FROM turns WHERE started_at >= ? AND turn_type = 'main'`, since) ?? 0,
    lastSkillAt: scalar(`SELECT max(created_at) FROM skill_versions`),
    // Raw turns are stored as they arrive; what was learned is everything an extractor, a rule or a person wrote.
    lastMemoryAt: scalar(`SELECT max(created_at) FROM memory_units WHERE origin <> 'raw_turn'`),
    failingExtractions: scalar(`SELECT count(*) FROM jobs WHERE kind LIKE 'memory.%' AND last_error IS NOT NULL AND updated_at >= ?`, now - 6 * 3_600_000) ?? 0,
  };
}

/**
 * The latest finished learning jobs, skill changes and learned memories, newest first. (`+status`
 * keeps SQLite on the updated_at index, read backwards, instead of sorting every finished job.)
 */
function learningEvents(db: Db, limit = 15): LearningEvent[] {
  const jobs = db
    .prepare(
      `SELECT kind, status, last_error, tokens_used, coalesce(finished_at, updated_at) AS at, json_extract(payload, '$.sessionId') AS session_id FROM jobs
       WHERE +status IN ('done', 'dead') ORDER BY updated_at DESC LIMIT ?`,
    )
    .all(limit) as Array<{ kind: string; status: string; last_error: string | null; tokens_used: number; at: number; session_id: unknown }>;
  // A bank installed or imported at once is one event, not one per skill.
  const skills = db
    .prepare(
      `SELECT min(name) AS name, count(*) AS skills, max(version) AS version, action, source, max(created_at) AS at FROM skill_versions
       GROUP BY generation, action, source ORDER BY max(id) DESC LIMIT ?`,
    )
    .all(limit) as Array<{ name: string; skills: number; version: number; action: string; source: string | null; at: number }>;
  const memories = db
    .prepare(`SELECT type, origin, scope, content, source_session, created_at AS at FROM memory_units WHERE origin <> 'raw_turn' ORDER BY rowid DESC LIMIT ?`)
    .all(limit) as Array<{ type: string; origin: string; scope: string; content: string; source_session: string | null; at: number }>;
  const events: Array<LearningEvent & { time: number }> = [
    ...jobs.map((job) => ({
      time: job.at,
      at: new Date(job.at).toISOString(),
      what: 'job' as const,
      title: `${job.kind} ${job.status === 'dead' ? 'failed for good' : 'done'}`,
      detail: job.status === 'dead' ? job.last_error : job.tokens_used > 0 ? `${job.tokens_used} tokens` : null,
      ok: job.status !== 'dead',
      session_id: typeof job.session_id === 'string' ? job.session_id : null,
    })),
    ...skills.map((row) => ({
      time: row.at,
      at: new Date(row.at).toISOString(),
      what: 'skill' as const,
      title: row.skills > 1 ? `${row.skills} skills (${row.action})` : `skill ${row.name} v${row.version} (${row.action})`,
      detail: row.source,
      ok: true,
      session_id: null,
    })),
    ...memories.map((row) => ({
      time: row.at,
      at: new Date(row.at).toISOString(),
      what: 'memory' as const,
      title: `${row.type} memory (${row.origin}) in ${row.scope}`,
      detail: row.content.length > 160 ? `${row.content.slice(0, 157)}…` : row.content,
      ok: true,
      session_id: row.source_session,
    })),
  ];
  return events
    .sort((a, b) => b.time - a.time)
    .slice(0, limit)
    .map(({ time: _time, ...event }) => event);
}

/** Why learning may not be happening, in words a user can act on. */
function warnings(status: StatusReport, activity: Activity): Warning[] {
  const found: Warning[] = [];
  if (status.queue.dead > 0) {
    found.push({
      code: 'dead_jobs',
      message: `${status.queue.dead} learning job(s) failed for good (dead-lettered): their errors are in the events below and in \`metaclaw doctor\`.`,
    });
  }
  if (status.learning.paused) found.push({ code: 'learning_paused', message: `Learning is paused: ${status.learning.paused_reason ?? 'no reason given'}.` });
  if (activity.failingExtractions > 0) {
    found.push({
      code: 'extraction_failing',
      message: `Memory jobs failed ${activity.failingExtractions} time(s) in the last 6 hours; check the learning model's address and key (\`metaclaw doctor\`).`,
    });
  }
  const learningOn = status.skills.enabled || status.memory.enabled;
  const lastLearned = Math.max(activity.lastSkillAt ?? 0, activity.lastMemoryAt ?? 0);
  if (learningOn && activity.mainTurnsLastDay >= STALE_AFTER_TURNS && Date.now() - lastLearned > DAY_MS) {
    found.push({
      code: 'not_learning',
      message: `${activity.mainTurnsLastDay} turns arrived in the last day, but no skill or memory was written ${lastLearned === 0 ? 'yet' : 'since ' + new Date(lastLearned).toISOString()}.`,
    });
  }
  if (!learningOn)
    found.push({ code: 'learning_off', message: 'Skills and memory are both turned off (skills.enabled, memory.enabled): the proxy only forwards.' });
  return found;
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

export type OverviewView = ReturnType<typeof overviewData>;
