import type { CheckpointStatus } from '../store/index.js';
import type { RlReport } from '../rl/index.js';
import { isProcessAlive, readPidFile } from '../runtime/index.js';
import { homePaths, metaclawHome, type LoadedConfig } from '../config/index.js';
import { VERSION } from '../version.js';
import { baseUrl, CliExit, loadCliConfig, print } from './context.js';
import { judgeProgress, trainerOpeningFailed, trainingState, type TrainingView } from './training-state.js';
import { getJson, isHealthy } from './proxy-client.js';
import { countsOf, REQUEST_FAILURES, REQUEST_REFUSALS } from '../proxy/stats.js';
import { counted } from './plural.js';

export interface StatusOptions {
  config?: string;
  json?: boolean;
}

/** `metaclaw status`: asks the running proxy (/healthz, /status); the pid file alone proves nothing. */
export async function statusCommand(options: StatusOptions): Promise<void> {
  let config: LoadedConfig;
  try {
    config = loadCliConfig(options.config ? { config: options.config } : {});
  } catch (error) {
    if (!(error instanceof CliExit)) throw error;
    return statusWithoutConfig(options, error.message);
  }
  const pid = readPidFile(config.paths.pidFile);
  const base = pid ? baseUrl(pid.host, pid.port) : baseUrl(config.values['proxy.host'], config.values['proxy.port']);
  const healthy = await isHealthy(base, 2_000);
  if (!healthy) {
    const state = pid && isProcessAlive(pid.pid) ? 'unresponsive' : 'stopped';
    if (options.json) print(JSON.stringify({ running: false, state, url: base, pid: pid?.pid ?? null }));
    else if (state === 'unresponsive')
      print(`MetaClaw: process ${pid!.pid} is alive but ${base}/healthz does not answer (starting, or stuck; see \`metaclaw logs\`).`);
    else print(`MetaClaw: not running${pid ? ' (stale pid file)' : ''} (${base}).`);
    throw new CliExit('', state === 'unresponsive' ? 2 : 1);
  }
  const apiKey = config.values['proxy.api_key'];
  const response = await getJson(`${base}/status`, apiKey ? { apiKey } : {});
  if (response.status !== 200)
    throw new CliExit(
      `MetaClaw answers at ${base} but /status returned ${response.status}${response.status === 401 ? ' (proxy.api_key in this config does not match the running proxy)' : ''}.`,
    );
  const status = response.body as StatusReport;
  if (options.json) {
    print(JSON.stringify({ running: true, url: base, ...status }, null, 2));
    return;
  }
  printStatus(base, status);
}

interface StatusReport {
  version: string;
  pid: number;
  mode: string;
  mode_configured?: string;
  mode_reason?: string;
  uptime_seconds: number;
  upstream: { name: string; base_url: string; format: string; model: string | null; key_source: string };
  fallbacks: Array<{ name: string; base_url: string }>;
  requests: { total: number; streaming: number; active: number; errors: Record<string, number>; tokens: { input: number; output: number } };
  sessions: { total: number; open: number; turns: number };
  queue: { queued: number; leased: number; done: number; dead: number };
  learning: { paused_reason: string | null; failed: number; spend: { tokens_today: number; tokens_total: number; daily_budget: number } };
  context: { providers: string[]; failures: number };
  /** absent from a proxy older than the scheduler */
  scheduler?: { enabled: boolean; state?: string; reason: string };
  rl?: (RlReport & { training?: TrainingView | null }) | null;
  /** absent from a proxy older than team members */
  team?: { members: number; shared_scope: string; shared_memories?: number };
  /** a node of a team store says which store and whether it is reachable */
  store?: {
    engine?: string;
    url?: string;
    degraded?: boolean;
    recording?: { held: number; written: number; replayed: number; outages: number };
    /** the personal store: whether writes go through, and what stopped them */
    writable?: boolean;
    paused_since?: string | null;
    busy?: boolean;
    last_error?: { code: string; message: string } | null;
    /** absent from a proxy older than checkpoint counts */
    checkpoints?: CheckpointStatus;
  };
  skills?: { enabled?: boolean; count?: number; generation?: number; invalid_files?: unknown[]; pending_proposals?: number };
}

/** A team node's learning section (its /status `learning`): what this node ran, and the team queue. */
interface TeamLearning {
  kinds?: string[];
  running?: number;
  completed?: number;
  failed?: number;
  leases_lost?: number;
  paused_reason?: string | null;
  queue?: { queued: number; leased: number; done: number; dead: number } | null;
}

/** A node of a team store: its store, what it holds in memory, its spool, and its share of the team's learning. */
function printTeamNode(base: string, status: StatusReport): void {
  const store = status.store!;
  const spool = store.recording;
  print(`MetaClaw-TS ${status.version}: running (pid ${status.pid}) at ${base}, up ${formatDuration(status.uptime_seconds)}, a node of a team store`);
  print(`  store       ${store.url} (postgres)${store.degraded ? ': DEGRADED, out of reach; serving goes on, turns wait on this node' : ''}`);
  print(
    `  upstream    ${status.upstream.base_url} (${status.upstream.format}, ${status.upstream.model ? `model ${status.upstream.model}` : "client's model"})`,
  );
  print(`  requests    ${status.requests.total} (${status.requests.streaming} streaming, ${status.requests.active} active)`);
  if (spool)
    print(
      `  recording   ${counted(spool.written, 'turn')} stored, ${spool.held} waiting, ${spool.replayed} stored after an outage (${counted(spool.outages, 'outage')})`,
    );
  print(`  team        ${counted(status.team?.members ?? 0, 'member')}; skills: ${status.skills?.count ?? 0} (generation ${status.skills?.generation ?? 0})`);
  print(`  context     ${status.context.providers.length > 0 ? status.context.providers.join(', ') : 'nothing injected'}`);
  const learning = status.learning as TeamLearning;
  const queue = learning.queue ? `team queue ${learning.queue.queued} waiting, ${learning.queue.leased} running, ${deadJobs(learning.queue.dead)}; ` : '';
  print(
    `  learning    ${queue}this node: ${learning.completed ?? 0} done, ${learning.failed ?? 0} failed, ${learning.running ?? 0} running (${(learning.kinds ?? []).join(', ') || 'no job kinds'})`,
  );
  if (learning.paused_reason) print(`  PAUSED      ${learning.paused_reason}`);
  printRlBuffer(status);
  printTraining(status);
}

/** The RL sample buffer (personal install or the team store's), when main turns are recorded as samples. */
function printRlBuffer(status: StatusReport): void {
  if (!status.rl?.recording) return;
  const buffer = status.rl.buffer;
  print(
    `  rl          ${counted(buffer.samples, 'sample')} (${buffer.by_state.scored} scored, ${judgeProgress(buffer.by_state)}, ${buffer.trainable} trainable, ${buffer.by_state.dropped} dropped); \`metaclaw rl status\` for more`,
  );
}

/**
 * The training engine (modes rl and auto with a backend): its state, why it failed, the last step.
 * A team node adds whether it trains, and why not when it could not open the team's run as trainer.
 */
function printTraining(status: StatusReport): void {
  const training = status.rl?.training;
  if (!training) return;
  const state = trainingState(training, `serving step ${training.served?.step ?? '-'}`);
  const last = training.last_steps[0];
  const trainerFailed = trainerOpeningFailed(training);
  // Only a team node says who trains; one that failed to open the run as trainer says why on the next line.
  const trainer = training.trainer === undefined || trainerFailed ? '' : `; ${training.trainer} trains`;
  print(
    `  training    ${training.backend.kind}, ${training.base_model}: ${state}${trainer}${last ? `; last step ${last.step} ${last.status}${last.loss === null ? '' : `, loss ${last.loss.toFixed(4)}`}` : ''}`,
  );
  if (trainerFailed) print(`  trainer     FAILED: ${trainerFailed}`);
}

function printStatus(base: string, status: StatusReport): void {
  if (status.store?.engine === 'postgres') return printTeamNode(base, status);
  const errors = countsOf(status.requests.errors, REQUEST_FAILURES).parts;
  const refused = countsOf(status.requests.errors, REQUEST_REFUSALS).parts;
  const budget = status.learning.spend.daily_budget > 0 ? `${status.learning.spend.daily_budget} tokens/day` : 'unlimited';
  print(
    `MetaClaw-TS ${status.version}: running (pid ${status.pid}) at ${base}, up ${formatDuration(status.uptime_seconds)}${status.version !== VERSION ? ` (this CLI is ${VERSION})` : ''}`,
  );
  print(
    `  mode        ${status.mode}${status.mode_configured && status.mode_configured !== status.mode ? ` (configured: ${status.mode_configured}; ${status.mode_reason ?? ''})` : ''}`,
  );
  printRlBuffer(status);
  printTraining(status);
  print(
    `  upstream    ${status.upstream.base_url} (${status.upstream.format}, ${status.upstream.model ? `model ${status.upstream.model}` : "client's model"}, key: ${status.upstream.key_source})`,
  );
  if (status.fallbacks.length > 0) print(`  fallbacks   ${status.fallbacks.map((target) => `${target.name} ${target.base_url}`).join(', ')}`);
  print(
    `  requests    ${status.requests.total} (${status.requests.streaming} streaming, ${status.requests.active} active${status.requests.errors['client_aborted'] ? `, ${status.requests.errors['client_aborted']} dropped by the client` : ''}); errors: ${errors.length > 0 ? errors.join(', ') : 'none'}${refused.length > 0 ? `; refused: ${refused.join(', ')}` : ''}`,
  );
  print(`  traffic     ${status.requests.tokens.input} input + ${status.requests.tokens.output} output tokens proxied`);
  print(`  sessions    ${status.sessions.total} (${status.sessions.open} open), ${counted(status.sessions.turns, 'turn')} recorded`);
  print(
    `  context     ${status.context.providers.length > 0 ? status.context.providers.join(', ') : 'nothing injected'}${status.context.failures > 0 ? ` (${counted(status.context.failures, 'failure')})` : ''}`,
  );
  if (status.skills) print(`  skills      ${skillsLine(status.skills)}`);
  print(
    `  learning    queue ${status.queue.queued} waiting, ${status.queue.leased} running, ${deadJobs(status.queue.dead)}; ${counted(status.learning.failed, 'failure')}`,
  );
  print(`  spend       ${counted(status.learning.spend.tokens_today, 'token')} today, ${status.learning.spend.tokens_total} in total (budget: ${budget})`);
  if (status.team && (status.team.members > 0 || (status.team.shared_memories ?? 0) > 0))
    print(
      `  team        ${counted(status.team.members, 'member')}; shared scope "${status.team.shared_scope}": ${counted(status.team.shared_memories ?? 0, 'memory', 'memories')}`,
    );
  if (status.scheduler) print(`  scheduler   ${status.scheduler.enabled ? `${status.scheduler.state}: ${status.scheduler.reason}` : status.scheduler.reason}`);
  if (status.learning.paused_reason) print(`  PAUSED      ${status.learning.paused_reason}`);
  const storeProblems = personalStoreProblems(status.store);
  if (storeProblems.length > 0) print(`  store       ${storeProblems.join('; ')}`);
}

/** The library: how many skills, its generation, proposals waiting for review, files skipped as invalid. */
function skillsLine(skills: NonNullable<StatusReport['skills']>): string {
  const count = skills.count ?? 0;
  const parts = [
    `${counted(count, 'skill')} (generation ${skills.generation ?? 0})${skills.enabled === false ? ', not injected (skills.enabled: false)' : ''}`,
  ];
  const pending = skills.pending_proposals ?? 0;
  if (pending > 0) parts.push(`${counted(pending, 'proposal')} waiting for review (metaclaw skills pending)`);
  const invalid = skills.invalid_files?.length ?? 0;
  if (invalid > 0) parts.push(`${counted(invalid, 'invalid file')} skipped (metaclaw skills doctor)`);
  return parts.join('; ');
}

/** What is wrong with the personal store, for a line of its own (nothing is printed while all is well). */
function personalStoreProblems(store: StatusReport['store']): string[] {
  const problems: string[] = [];
  if (store?.writable === false)
    problems.push(
      `NOT WRITABLE since ${store.paused_since ?? '?'}${store.last_error ? ` (${store.last_error.code}: ${store.last_error.message})` : ''}${store.busy ? ', another connection holds its write lock' : ''}; turns wait in the journal, learning is paused (\`metaclaw doctor\` says more)`,
    );
  const checkpoints = store?.checkpoints;
  if (checkpoints?.blocked)
    problems.push(
      `the WAL (${((checkpoints.wal_bytes ?? 0) / 1024 / 1024).toFixed(0)} MB) cannot be truncated: another connection holds a read transaction open (a \`sqlite3\` shell or a backup?)`,
    );
  if (checkpoints && checkpoints.failures > 0)
    problems.push(`${counted(checkpoints.failures, 'WAL checkpoint failure')}${checkpoints.last_error ? ` (last: ${checkpoints.last_error})` : ''}`);
  return problems;
}

function formatDuration(seconds: number): string {
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ${seconds % 60}s`;
  return `${Math.floor(seconds / 3600)}h ${Math.floor((seconds % 3600) / 60)}m`;
}

/**
 * A config.yaml edited into an error while the proxy runs: the pid file (in $METACLAW_HOME whatever
 * the config says) still tells whether it answers, which is what a user asks before fixing the file.
 * The details need /status, and its key is in the config, so only this much is said; exit 1.
 */
async function statusWithoutConfig(options: StatusOptions, problem: string): Promise<never> {
  const pid = readPidFile(homePaths(metaclawHome()).pidFile);
  const base = pid ? baseUrl(pid.host, pid.port) : undefined;
  const running = base !== undefined && (await isHealthy(base, 2_000));
  if (options.json) print(JSON.stringify({ running, state: running ? 'running' : 'stopped', url: base ?? null, pid: pid?.pid ?? null, config_error: problem }));
  else print(running ? `MetaClaw: running (pid ${pid!.pid}) at ${base}; the config does not load, so no more can be shown.` : 'MetaClaw: not running.');
  throw new CliExit(problem);
}

/** The dead jobs, and where to see them when there are any. */
function deadJobs(count: number): string {
  return count > 0 ? `${count} dead (see \`metaclaw jobs\`)` : '0 dead';
}
