import type { QueueCounts } from '../learning/index.js';
import type { Db } from '../store/index.js';
import type { StatusReport } from '../runtime/app.js';
import { countsOf, REQUEST_FAILURES, REQUEST_REFUSALS } from '../proxy/stats.js';
import { SQLITE_SQL, type SqlDialect } from './sql.js';
import { stepRetryText, trainerOpeningFailed, trainingState, type TrainingView } from '../cli/training-state.js';
import type { DashboardSources, LatencySummary } from './types.js';

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

/**
 * What the overview needs of the running proxy's status: a personal install passes its /status
 * report whole (the page's JSON keeps every field of it), a team node what it knows of the team.
 */
export interface OverviewStatus {
  version: string;
  mode: string;
  mode_reason: string;
  started_at: string;
  uptime_seconds: number;
  auth_required: boolean;
  upstream: StatusReport['upstream'];
  requests: StatusReport['requests'];
  sessions: StatusReport['sessions'];
  queue: QueueCounts;
  learning: { paused: boolean; paused_reason: string | null; spend: StatusReport['learning']['spend'] };
  skills: { enabled: boolean; count: number; generation: number; pending_proposals: number };
  memory: { enabled: boolean; units: number; scopes: number };
  rl: unknown;
}

/** The overview page: is the proxy serving, and is the agent learning? */
export function overviewData(sources: DashboardSources, now = Date.now()) {
  const events = learningEvents(learningEventRows(sources.db, EVENTS_LIMIT));
  return overviewView(sources.status(), recentActivity(sources.db, now), events, sources.addedLatency(), now);
}

/** The overview from what was read, whichever store it was read from. */
export function overviewView(status: OverviewStatus, activity: Activity, events: LearningEvent[], addedLatency: LatencySummary, now = Date.now()) {
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
      /** failures only: the upstream's or the proxy's (REQUEST_FAILURES) */
      errors_total: countsOf(status.requests.errors, REQUEST_FAILURES).total,
      /** requests refused as sent: no or a wrong key, a bad request, an unknown route */
      refused_total: countsOf(status.requests.errors, REQUEST_REFUSALS).total,
      tokens: status.requests.tokens,
      added_latency: addedLatency,
    },
    sessions: status.sessions,
    queue: status.queue,
    learning: status.learning,
    skills: { ...status.skills, last_change_at: iso(activity.lastSkillAt) },
    memory: { ...status.memory, last_learned_at: iso(activity.lastMemoryAt) },
    rl: status.rl,
    activity: { main_turns_last_day: activity.mainTurnsLastDay },
    events,
    warnings: warnings(status, activity),
  };
}

export interface Activity {
  mainTurnsLastDay: number;
  lastSkillAt: number | null;
  lastMemoryAt: number | null;
  failingExtractions: number;
}

/** Since when the overview counts main turns, and looks for failing extractions. */
export function activityWindow(now: number): { turnsSince: number; failuresSince: number } {
  return { turnsSince: now - DAY_MS, failuresSince: now - 6 * 3_600_000 };
}

/** The activity queries, with `?` for the times of activityWindow (each is one number). */
export const ACTIVITY_SQL = {
  mainTurnsLastDay: `SELECT count(*) FROM turns WHERE started_at >= ? AND turn_type = 'main'`,
  lastSkillAt: `SELECT max(created_at) FROM skill_versions`,
  // Raw turns are stored as they arrive; what was learned is everything an extractor, a rule or a person wrote.
  lastMemoryAt: `SELECT max(created_at) FROM memory_units WHERE origin <> 'raw_turn'`,
  failingExtractions: `SELECT count(*) FROM jobs WHERE kind LIKE 'memory.%' AND last_error IS NOT NULL AND updated_at >= ?`,
};

function recentActivity(db: Db, now: number): Activity {
  const { turnsSince, failuresSince } = activityWindow(now);
  const scalar = (sql: string, ...args: unknown[]) =>
    (db
      .prepare(sql)
      .pluck()
      .get(...args) as number | null | undefined) ?? null;
  return {
    mainTurnsLastDay: scalar(ACTIVITY_SQL.mainTurnsLastDay, turnsSince) ?? 0,
    lastSkillAt: scalar(ACTIVITY_SQL.lastSkillAt),
    lastMemoryAt: scalar(ACTIVITY_SQL.lastMemoryAt),
    failingExtractions: scalar(ACTIVITY_SQL.failingExtractions, failuresSince) ?? 0,
  };
}

/** Events the overview shows at most. */
export const EVENTS_LIMIT = 15;

/** The rows the overview's events are made of: finished jobs, skill changes (a bank installed at once is one row), learned memories. */
export interface EventRows {
  jobs: Array<{ kind: string; status: string; last_error: string | null; tokens_used: number; at: number; session_id: unknown }>;
  skills: Array<{ name: string; skills: number; version: number; action: string; source: string | null; at: number }>;
  memories: Array<{ type: string; origin: string; scope: string; content: string; source_session: string | null; at: number }>;
}

/**
 * The latest finished learning jobs, skill changes and learned memories, each newest first, with
 * `?` for the limit. (`+status` keeps SQLite on the updated_at index, read backwards, instead of
 * sorting every finished job.)
 */
export function eventSql(sql: SqlDialect): Record<keyof EventRows, string> {
  return {
    jobs: `SELECT kind, status, last_error, tokens_used, coalesce(finished_at, updated_at) AS at, ${sql.json('payload', 'sessionId')} AS session_id FROM jobs
       WHERE ${sql.noIndex}status IN ('done', 'dead') ORDER BY updated_at DESC LIMIT ?`,
    skills: `SELECT min(name) AS name, count(*) AS skills, max(version) AS version, action, source, max(created_at) AS at FROM skill_versions
       GROUP BY generation, action, source ORDER BY max(id) DESC LIMIT ?`,
    memories: `SELECT type, origin, scope, content, source_session, created_at AS at FROM memory_units WHERE origin <> 'raw_turn' ORDER BY rowid DESC LIMIT ?`,
  };
}

const SQLITE_EVENTS = eventSql(SQLITE_SQL);

function learningEventRows(db: Db, limit: number): EventRows {
  return {
    jobs: db.prepare(SQLITE_EVENTS.jobs).all(limit) as EventRows['jobs'],
    skills: db.prepare(SQLITE_EVENTS.skills).all(limit) as EventRows['skills'],
    memories: db.prepare(SQLITE_EVENTS.memories).all(limit) as EventRows['memories'],
  };
}

/** The events of the rows, newest first, `limit` at most. */
export function learningEvents({ jobs, skills, memories }: EventRows, limit = EVENTS_LIMIT): LearningEvent[] {
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
function warnings(status: OverviewStatus, activity: Activity): Warning[] {
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
  found.push(...trainingWarnings(status.rl));
  if (!learningOn)
    found.push({ code: 'learning_off', message: 'Skills and memory are both turned off (skills.enabled, memory.enabled): the proxy only forwards.' });
  return found;
}

/**
 * RL training that does not train (modes rl and auto): a backend that cannot be opened, automatic
 * steps that keep failing, a team node that cannot open the team's run as its trainer. The same
 * words as `metaclaw rl status`.
 */
function trainingWarnings(rl: unknown): Warning[] {
  const training = trainingOf(rl);
  if (!training) return [];
  const found: Warning[] = [];
  const where = `${training.backend.kind} at ${training.backend.base_url}`;
  if (training.state === 'failed')
    found.push({ code: 'training_failed', message: `RL training cannot open the ${where}: ${trainingState(training, 'ready').replace(/^FAILED: /, '')}.` });
  const retry = stepRetryText(training);
  if (retry) found.push({ code: 'training_steps_failing', message: `RL training (${where}): ${retry}; \`metaclaw rl status\` shows the steps' errors.` });
  const trainer = trainerOpeningFailed(training);
  if (trainer) found.push({ code: 'trainer_opening_failed', message: `RL training (${where}): ${trainer}.` });
  return found;
}

/** The training report in the status's `rl` (null when RL is off, absent on a node without it). */
function trainingOf(rl: unknown): TrainingView | undefined {
  if (typeof rl !== 'object' || rl === null || !('training' in rl)) return undefined;
  const training = rl.training;
  return typeof training === 'object' && training !== null && 'state' in training && 'backend' in training ? (training as TrainingView) : undefined;
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

export type OverviewView = ReturnType<typeof overviewView>;
