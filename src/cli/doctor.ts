import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, statfsSync } from 'node:fs';
import { isClawType, ledgerPath, ledgerProblem, verifyClaw } from '../claws/index.js';
import { UpstreamError } from '../errors.js';
import { homeIsFileProblem, loadConfig, metaclawHome, type LoadedConfig } from '../config/index.js';
import {
  describeExposedConfig,
  exposedConfigFile,
  keysInConfigFile,
  makeHomePrivate,
  octal,
  openHomeWarning,
  openPath,
  PRIVATE_FILE_MODE,
  resolveUpstreams,
} from '../config/index.js';
import { checkIntegrity, MIGRATIONS, openDatabase, REBUILD_DRIVER_FIX, schemaVersion } from '../store/index.js';
import { previewSchedule, schedulerEnabled, schedulerOffReason } from '../scheduler/index.js';
import { decideMode, describeJudge, type EngineReport, type RlReport } from '../rl/index.js';
import { describeRetrieval, judgeSettings, retrievalModes, storedProbe, teamSkillsRetrieval } from '../runtime/index.js';
import { probeUpstream } from '../upstream/index.js';
import { VERSION } from '../version.js';
import { baseUrl, CliExit, print } from './context.js';
import { callJson, type ProxyCallOptions } from './proxy-client.js';
import { clawEnvironment, clawName, wiringTarget } from './wiring.js';
import { checkTeamMembers, checkTeamStore } from './doctor-team.js';
import { checkPythonMemory } from './doctor-python-memory.js';
import { counted } from './plural.js';
import { trainerOpeningFailed } from './training-state.js';
import { onSkillsBackend } from './skills-backend.js';
import { skillsHealth, skillsHealthLine, type SkillsHealth } from './skills-health.js';
import { SkillLibrary } from '../skills/index.js';
import { silentLogger } from '../logging/index.js';

export interface DoctorOptions {
  config?: string;
  json?: boolean;
  /** false with --no-canary */
  canary?: boolean;
  /** make $METACLAW_HOME and a config file holding keys private */
  fix?: boolean;
}

type Verdict = 'pass' | 'warn' | 'fail' | 'skip';

export type DoctorCheck = Check;

interface Check {
  name: string;
  verdict: Verdict;
  detail: string;
  /** what to do about it (for warn and fail) */
  fix?: string;
}

const MIB = 1024 * 1024;

/**
 * `metaclaw doctor`: answers "does learning actually reach my agent?" in plain words. Every check
 * runs even when an earlier one fails (each says what to do), and the exit code is 1 if any failed.
 */
export async function doctorCommand(options: DoctorOptions): Promise<void> {
  const checks: Check[] = [];
  const config = checkConfig(options, checks);
  checkVersions(checks);
  if (config) {
    checkPrivacy(config, options.fix === true, checks);
    checkDisk(config, checks);
    checkDatabase(config, checks);
    await checkSkills(config, checks);
    checkPythonMemory(config, checks);
    checkTeamMembers(config, checks);
    await checkTeamStore(config, checks);
    await checkUpstream(config, checks);
    await checkAgent(config, checks);
    const running = await checkProxy(config, checks);
    checkRetrieval(config, running, checks);
    await checkScheduler(config, checks);
    checkMode(config, running, checks);
    checkTraining(running, checks);
    if (options.canary === false) checks.push({ name: 'canary', verdict: 'skip', detail: 'skipped (--no-canary)' });
    else await runCanary(config, running, checks);
  }
  report(checks, options.json === true);
  if (checks.some((check) => check.verdict === 'fail')) throw new CliExit('', 1);
}

function report(checks: Check[], json: boolean): void {
  if (json) {
    print(JSON.stringify({ ok: !checks.some((check) => check.verdict === 'fail'), checks }, null, 2));
    return;
  }
  const marks: Record<Verdict, string> = { pass: '✔', warn: '!', fail: '✘', skip: '-' };
  for (const check of checks) {
    print(`${marks[check.verdict]} ${check.name}: ${check.detail}`);
    if (check.fix && check.verdict !== 'pass') print(`    → ${check.fix}`);
  }
  const failed = checks.filter((check) => check.verdict === 'fail').length;
  const warned = checks.filter((check) => check.verdict === 'warn').length;
  print('');
  print(failed === 0 ? `All checks passed${warned > 0 ? ` (${counted(warned, 'warning')})` : ''}.` : `${counted(failed, 'check')} failed.`);
}

function checkConfig(options: DoctorOptions, checks: Check[]): LoadedConfig | undefined {
  try {
    const config = loadConfig(options.config ? { configFile: options.config } : {});
    const warnings = config.warnings;
    if (!config.fileExists)
      checks.push({
        name: 'config',
        verdict: 'warn',
        detail: `no ${config.file}: running on defaults`,
        fix: 'run `metaclaw setup` to choose your provider, model and agent',
      });
    else if (warnings.length > 0)
      checks.push({
        name: 'config',
        verdict: 'warn',
        detail: `${config.file} is valid, with ${warnings.length} warning(s): ${warnings.join('; ')}`,
        fix: 'fix or remove the keys named above (`metaclaw config keys` lists the valid ones)',
      });
    else checks.push({ name: 'config', verdict: 'pass', detail: `${config.file} is valid` });
    return config;
  } catch (error) {
    checks.push({
      name: 'config',
      verdict: 'fail',
      detail: (error as Error).message,
      fix: homeIsFileProblem(metaclawHome())
        ? 'point METACLAW_HOME at a folder (or move the file out of the way); nothing else can be checked until then'
        : 'edit the file (or `metaclaw config set KEY VALUE`); nothing else can be checked until it loads',
    });
    return undefined;
  }
}

/** Whether other users can reach MetaClaw's data and keys; `--fix` makes them the owner's alone. */
function checkPrivacy(config: LoadedConfig, fix: boolean, checks: Check[]): void {
  const fixed: string[] = [];
  const open: string[] = [];
  const home = openPath(config.home);
  if (home && fix && home.ours) {
    makeHomePrivate(config.home);
    fixed.push(`${home.path} is now 0700 (it was ${octal(home.mode)})`);
  } else if (home)
    open.push(home.ours ? `${home.path} (MetaClaw's data, logs and keys) is open to other users (mode ${octal(home.mode)})` : openHomeWarning(home));
  const exposed = exposedConfigFile(config);
  if (exposed && fix && exposed.ours) {
    chmodSync(exposed.path, PRIVATE_FILE_MODE);
    fixed.push(`${exposed.path} is now 0600 (it was ${octal(exposed.mode)})`);
  } else if (exposed) open.push(`${describeExposedConfig(exposed)}${exposed.ours ? '' : `; as its owner, run \`chmod 600 ${exposed.path}\``}`);
  if (open.length > 0)
    checks.push({ name: 'privacy', verdict: 'warn', detail: open.join('; '), fix: 'run `metaclaw doctor --fix` to make them readable by you alone' });
  else if (fixed.length > 0) checks.push({ name: 'privacy', verdict: 'pass', detail: `fixed: ${fixed.join('; ')}` });
  else if (!existsSync(config.home))
    checks.push({ name: 'privacy', verdict: 'pass', detail: `${config.home} does not exist yet (\`metaclaw start\` creates it as 0700)` });
  else
    checks.push({
      name: 'privacy',
      verdict: 'pass',
      detail: `${config.home}${keysInConfigFile(config).length > 0 ? ` and the keys in ${config.file} are` : ' is'} readable by you alone`,
    });
}

function checkVersions(checks: Check[]): void {
  const major = Number(process.versions.node.split('.')[0]);
  let sqlite: string;
  try {
    const db = openDatabase(':memory:', { migrations: [] });
    sqlite = (db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v;
    db.close();
  } catch (error) {
    checks.push({
      name: 'versions',
      verdict: 'fail',
      // The driver's own message ends with the same fix: shown once, on the fix line.
      detail: `SQLite does not load: ${(error as Error).message.replace(`; ${REBUILD_DRIVER_FIX}.`, '')}`,
      fix: REBUILD_DRIVER_FIX,
    });
    return;
  }
  const detail = `MetaClaw-TS ${VERSION}, Node ${process.versions.node}, SQLite ${sqlite}`;
  if (major < 20) checks.push({ name: 'versions', verdict: 'fail', detail, fix: 'MetaClaw-TS needs Node 20 or newer' });
  else checks.push({ name: 'versions', verdict: 'pass', detail });
}

function checkDisk(config: LoadedConfig, checks: Check[]): void {
  let folder = config.home;
  while (!existsSync(folder) && folder !== '/') folder = folder.replace(/\/[^/]*$/, '') || '/';
  try {
    const stats = statfsSync(folder);
    const free = stats.bavail * stats.bsize;
    const text = `${(free / 1024 / MIB).toFixed(1)} GiB free for ${config.home}`;
    if (free < 100 * MIB)
      checks.push({
        name: 'disk',
        verdict: 'fail',
        detail: text,
        fix: 'free some space: on a full disk the proxy keeps serving, but recording and learning pause until space is freed',
      });
    else if (free < 1024 * MIB)
      checks.push({ name: 'disk', verdict: 'warn', detail: text, fix: 'less than 1 GiB left; lower store.payload_retention_days or free some space' });
    else checks.push({ name: 'disk', verdict: 'pass', detail: text });
  } catch (error) {
    checks.push({ name: 'disk', verdict: 'warn', detail: `cannot tell the free space: ${(error as Error).message}` });
  }
}

/**
 * The skill library's health, as `metaclaw skills doctor` checks it (invalid files, text that reads
 * like prompt injection), in one line: the team store's library on a node, else the skills folder,
 * read as the proxy loads it, without the database (the database line checks that, read-only).
 */
async function checkSkills(config: LoadedConfig, checks: Check[]): Promise<void> {
  const push = (health: SkillsHealth, where: string): void => {
    checks.push({ name: 'skills', ...skillsHealthLine(health, where) });
  };
  if (!config.values['store.url']) {
    const library = new SkillLibrary(config.paths.skillsDir, silentLogger());
    library.scan();
    push(skillsHealth(library.all(), library.problems()), library.dir);
    return;
  }
  try {
    await onSkillsBackend(config, async (skills) =>
      push(
        skillsHealth(
          (await skills.list()).map(({ skill }) => skill),
          skills.problems(),
        ),
        skills.where,
      ),
    );
  } catch {
    checks.push({ name: 'skills', verdict: 'skip', detail: 'the team store could not be read (the team store line says why)' });
  }
}

function checkDatabase(config: LoadedConfig, checks: Check[]): void {
  const path = config.paths.database;
  // A node serves from the team store (its own check): this install's database is read by no node, and start creates none.
  if (config.values['store.url']) {
    checks.push({ name: 'database', verdict: 'skip', detail: `${path} is not used: a team store is configured (the team store line checks it)` });
    return;
  }
  if (!existsSync(path)) {
    checks.push({ name: 'database', verdict: 'warn', detail: `${path} does not exist yet`, fix: '`metaclaw start` creates it' });
    return;
  }
  try {
    const db = openDatabase(path, { readonly: true });
    try {
      const problems = checkIntegrity(db).filter((line) => line !== 'ok');
      const version = schemaVersion(db);
      const latest = MIGRATIONS.at(-1)?.version ?? 0;
      if (problems.length > 0)
        checks.push({
          name: 'database',
          verdict: 'fail',
          detail: `integrity check failed: ${problems.slice(0, 3).join('; ')}`,
          fix: `stop MetaClaw, back up ${path}, then recover it with \`sqlite3 ${path} .recover\``,
        });
      else if (version > latest)
        checks.push({
          name: 'database',
          verdict: 'fail',
          detail: `schema version ${version} is newer than this MetaClaw (${latest})`,
          fix: 'upgrade MetaClaw-TS',
        });
      else
        checks.push({
          name: 'database',
          verdict: 'pass',
          detail: `${path}: integrity ok, schema version ${version}${version < latest ? ` (updated to ${latest} at the next start)` : ''}`,
        });
    } finally {
      db.close();
    }
  } catch (error) {
    checks.push({
      name: 'database',
      verdict: 'fail',
      detail: `cannot open ${path}: ${(error as Error).message}`,
      fix: 'check the file permissions, or move the file aside to start afresh',
    });
  }
}

async function checkUpstream(config: LoadedConfig, checks: Check[]): Promise<void> {
  let main;
  try {
    main = resolveUpstreams(config, process.env)[0];
  } catch (error) {
    checks.push({ name: 'upstream', verdict: 'fail', detail: (error as Error).message, fix: 'run `metaclaw setup`' });
    return;
  }
  if (!main) {
    checks.push({ name: 'upstream', verdict: 'fail', detail: 'no upstream is configured', fix: 'run `metaclaw setup`' });
    return;
  }
  if (!main.apiKey) {
    const probe = await probeUpstream({ baseUrl: main.baseUrl, format: main.format, apiKey: undefined, model: undefined }, 10_000);
    const reachable = probe.ok || /rejected the key|HTTP \d/.test(probe.detail);
    checks.push(
      reachable
        ? {
            name: 'upstream',
            verdict: 'pass',
            detail: `${main.baseUrl} answers; no key is configured, so the proxy passes your agent's own key through (it cannot be checked from here)`,
          }
        : { name: 'upstream', verdict: 'fail', detail: probe.detail, fix: 'check llm.api_base (`metaclaw config get llm.api_base`) and your network' },
    );
    return;
  }
  const probe = await probeUpstream({ baseUrl: main.baseUrl, format: main.format, apiKey: main.apiKey, model: main.model || undefined }, 15_000);
  if (!probe.ok)
    checks.push({
      name: 'upstream',
      verdict: 'fail',
      detail: probe.detail,
      fix: /key/.test(probe.detail)
        ? 'set a valid key: `metaclaw setup --api-key-env VAR` or `metaclaw config set llm.api_key …`'
        : 'check llm.api_base and llm.model_id (`metaclaw setup` checks them for you)',
    });
  else if (probe.detail.includes('does not list the model'))
    checks.push({ name: 'upstream', verdict: 'warn', detail: probe.detail, fix: 'set llm.model_id to one of the listed models' });
  else checks.push({ name: 'upstream', verdict: 'pass', detail: probe.detail });
}

async function checkAgent(config: LoadedConfig, checks: Check[]): Promise<void> {
  // Unwiring (and `uninstall`) restores the agents' files from the ledger alone, whatever claw_type says.
  const ledger = ledgerProblem(config.home);
  if (ledger !== undefined)
    checks.push({
      name: 'wiring ledger',
      verdict: 'fail',
      detail: ledger,
      fix: `until ${ledgerPath(config.home)} reads, \`metaclaw claw unwire\` cannot restore any agent`,
    });
  const type = config.values['claw_type'];
  if (type === 'none' || !isClawType(type)) {
    checks.push({
      name: 'agent',
      verdict: 'skip',
      detail: 'claw_type is none: MetaClaw wires no agent; point yours at the proxy yourself',
      fix: 'or choose one with `metaclaw setup --claw …`',
    });
    return;
  }
  try {
    const result = await verifyClaw(type, wiringTarget(config), clawEnvironment(config));
    if (result.wired) checks.push({ name: 'agent', verdict: 'pass', detail: `${clawName(type)} is wired to ${wiringTarget(config).proxyUrl}` });
    else
      checks.push({
        name: 'agent',
        verdict: 'fail',
        detail: `${clawName(type)} does not send its requests through this proxy: ${result.problems.join('; ')}`,
        fix: '`metaclaw claw wire` (or `metaclaw start`) wires it; nothing is learned until it does',
      });
  } catch (error) {
    checks.push({
      name: 'agent',
      verdict: 'fail',
      detail: (error as Error).message,
      fix: `check that ${clawName(type)} is installed and its config file is valid`,
    });
  }
}

interface ProxyContact {
  base: string;
  headers: Record<string, string>;
  status: Record<string, unknown>;
}

async function checkProxy(config: LoadedConfig, checks: Check[]): Promise<ProxyContact | undefined> {
  const base = baseUrl(config.values['proxy.host'], config.values['proxy.port']);
  const headers: Record<string, string> = config.values['proxy.api_key'] ? { 'x-metaclaw-api-key': config.values['proxy.api_key'] } : {};
  try {
    const response = await callJson(`${base}/status`, { headers, timeoutMs: 3_000 });
    if (response.status === 401) {
      checks.push({
        name: 'proxy',
        verdict: 'fail',
        detail: `${base} answers but rejects this config's proxy.api_key`,
        fix: 'another MetaClaw (or another program) holds this port; check `metaclaw status` and proxy.port',
      });
      return undefined;
    }
    if (typeof response.body !== 'object' || response.body === null) throw new UpstreamError(`${base}/status did not answer JSON`);
    const status = response.body as Record<string, unknown>;
    const learning = (status['learning'] ?? {}) as { dead_lettered?: number; paused_reason?: string | null; queue?: Record<string, number> };
    // A node of a team store reports the team's queue under learning.
    const queue = (status['queue'] ?? learning.queue ?? {}) as Record<string, number>;
    // The dead jobs in the store (until retried or dismissed), not only those this process buried.
    const dead = queue['dead'] ?? learning.dead_lettered ?? 0;
    const detail = `running at ${base} (version ${String(status['version'])}, ${String(status['mode'])} mode, ${queue['queued'] ?? 0} learning job(s) queued)`;
    const store = (status['store'] ?? {}) as {
      writable?: boolean;
      paused_since?: string | null;
      /** paused only by another connection's lock */
      busy?: boolean;
      last_error?: { code?: string; message?: string } | null;
      recording?: { held?: number };
      /** a node of a team store: PostgreSQL out of reach (its spool holds turns, or it lost its listener) */
      degraded?: boolean;
    };
    if (store.writable === false) {
      checks.push({
        name: 'proxy',
        verdict: 'fail',
        detail: `${detail}; it cannot write its store since ${store.paused_since} (${store.last_error?.code}: ${store.last_error?.message}): it serves your agent, but ${store.recording?.held ?? 0} turn(s) wait to be recorded and learning is paused`,
        fix:
          store.busy === true
            ? `another program holds the write lock of ${config.paths.database} (a sqlite3 shell, a backup, a second MetaClaw): end it; recording and learning resume by themselves`
            : `free some space on the disk holding ${config.home}; recording and learning resume by themselves`,
      });
      return { base, headers, status };
    }
    if (store.degraded === true) {
      checks.push({
        name: 'proxy',
        verdict: 'warn',
        detail: `${detail}; team store out of reach: serving goes on, ${store.recording?.held ?? 0} turn(s) wait on this node`,
        fix: 'check that PostgreSQL runs and this node reaches it; waiting turns are written, in order, once it answers',
      });
      return { base, headers, status };
    }
    if (dead > 0)
      checks.push({
        name: 'proxy',
        verdict: 'warn',
        detail: `${detail}; ${dead} learning job(s) failed for good`,
        fix: '`metaclaw jobs` lists them with why (often the learning LLM rejects the request); once that is fixed, `metaclaw jobs retry --all-dead`, or `metaclaw jobs dismiss --all-dead` to give up on them',
      });
    else if (learning.paused_reason) checks.push({ name: 'proxy', verdict: 'warn', detail: `${detail}; learning is paused: ${learning.paused_reason}` });
    else checks.push({ name: 'proxy', verdict: 'pass', detail });
    return { base, headers, status };
  } catch {
    checks.push({
      name: 'proxy',
      verdict: 'fail',
      detail: `nothing answers at ${base}`,
      fix: 'run `metaclaw start` (or `metaclaw service install` to start it at login)',
    });
    return undefined;
  }
}

type Described = ReturnType<typeof describeRetrieval>;

/** Which retrieval skills and memory use and why: the running proxy's own word, else the config and the last embeddings probe. */
function checkRetrieval(config: LoadedConfig, proxy: ProxyContact | undefined, checks: Check[]): void {
  const team = Boolean(config.values['store.url']);
  const part = (name: 'skills' | 'memory') => (proxy?.status[name] as { retrieval?: Described } | undefined)?.retrieval;
  let skills = part('skills');
  let memory = part('memory');
  if (!skills || !memory) {
    let probe;
    // A node decides from its config alone: this install's embeddings probe is the personal proxy's.
    if (!team && existsSync(config.paths.database)) {
      const db = openDatabase(config.paths.database, { readonly: true });
      try {
        probe = storedProbe(db);
      } catch {
        probe = undefined;
      } finally {
        db.close();
      }
    }
    const decided = retrievalModes(config, process.env, probe);
    skills = describeRetrieval(team ? teamSkillsRetrieval(config) : decided.skills);
    memory = describeRetrieval(decided.memory);
  }
  const line = (name: string, decision: Described) => `${name} ${decision.mode}${decision.model ? ` (${decision.model})` : ''}: ${decision.reason}`;
  const detail = `${proxy ? '' : 'at the next start: '}${line('skills', skills)}; ${line('memory', memory)}`;
  checks.push({ name: 'retrieval', verdict: 'pass', detail });
}

/** The configured and the effective mode and why (the running proxy's word, else the config and environment now). */
function checkMode(config: LoadedConfig, proxy: ProxyContact | undefined, checks: Check[]): void {
  const running = (proxy?.status['rl'] as RlReport | undefined)?.mode;
  const decided = decideMode(config.values);
  const mode = running ?? decided;
  const where = running ? '' : 'at the next start: ';
  const judge = decided.recording ? `; RL samples are recorded and judged by ${describeJudge(judgeSettings(config)).endpoint}` : '';
  if (mode.effective === mode.configured) {
    checks.push({ name: 'mode', verdict: 'pass', detail: `${where}${mode.effective} (${mode.reason})${judge}` });
    return;
  }
  checks.push({
    name: 'mode',
    verdict: 'warn',
    detail: `${where}configured ${mode.configured}, running as ${mode.effective}: ${mode.reason}${judge}`,
    fix:
      decided.missing === 'backend'
        ? 'set rl.backend to tinker, mint or auto (Weaver and file train nothing here) to train, or set mode: skills_only'
        : 'set rl.api_key (or TINKER_API_KEY / MINT_API_KEY in the environment) to train, or set mode: skills_only',
  });
}

/** The running proxy's training engine (modes rl and auto with a backend): open, serving which step, or why not. */
function checkTraining(proxy: ProxyContact | undefined, checks: Check[]): void {
  const training = (proxy?.status['rl'] as { training?: EngineReport | null } | undefined)?.training;
  if (!training) return;
  const where = `${training.backend.kind} at ${training.backend.base_url}, base model ${training.base_model}`;
  if (training.state === 'ready') {
    const served = training.served ? `step ${training.served.step}${training.served.pinned ? ' (pinned by a rollback)' : ''}` : 'no policy yet';
    checks.push({ name: 'training', verdict: 'pass', detail: `${where}: open; main turns are served from ${served}; ${training.window}` });
  } else if (training.state === 'failed')
    checks.push({
      name: 'training',
      verdict: 'fail',
      detail: `${where}: ${training.error ?? 'could not be opened'}; the normal upstream serves every turn and nothing trains${training.retry_at ? ` (the proxy tries again at ${new Date(training.retry_at).toLocaleTimeString()})` : ''}`,
      fix: 'check rl.api_key, rl.base_url, rl.model (a model the service offers) and rl.tokenizer_path; a fixed tokenizer folder or a service back up is picked up by the next try, a changed key needs `metaclaw stop && metaclaw start`',
    });
  else checks.push({ name: 'training', verdict: 'warn', detail: `${where}: ${training.state} (the normal upstream serves until it is open)` });
  const trainerFailed = trainerOpeningFailed(training);
  if (trainerFailed)
    checks.push({
      name: 'trainer',
      verdict: 'warn',
      detail: `${where}: ${trainerFailed}`,
      fix: 'another node with its own key may train meanwhile; check rl.api_key, rl.base_url and rl.model on this node (the service must offer the model), or whether the service is up',
    });
}

/**
 * Which idle sources work on this machine (keyboard idle is probed for real; proxy idle and sleep
 * hours always work) and whether the calendar loads. Reported even with the scheduler off.
 */
async function checkScheduler(config: LoadedConfig, checks: Check[]): Promise<void> {
  const preview = await previewSchedule(config, undefined);
  const keyboard = preview.keyboard.available
    ? `keyboard idle via ${preview.keyboard.method}`
    : `keyboard idle unavailable (${preview.keyboard.reason}), proxy idle stands in`;
  const calendar = preview.calendar
    ? preview.calendar.error
      ? `calendar ${preview.calendar.source} does not load: ${preview.calendar.error}`
      : `calendar ${preview.calendar.source}: ${preview.calendar.events} events, ${preview.calendar.busy_intervals} busy stretches in the next days`
    : 'no calendar (scheduler.calendar.ics_url, or Google Calendar with credentials_path)';
  const sources = `sleep hours ${config.values['scheduler.sleep_start']}–${config.values['scheduler.sleep_end']}; ${keyboard}; proxy idle after ${config.values['scheduler.idle_threshold_minutes']} min; ${calendar}`;
  if (!schedulerEnabled(config)) {
    checks.push({ name: 'scheduler', verdict: 'skip', detail: `${schedulerOffReason(config)}; on this machine: ${sources}` });
    return;
  }
  if (preview.calendar?.error)
    checks.push({
      name: 'scheduler',
      verdict: 'warn',
      detail: sources,
      fix: config.values['scheduler.calendar.ics_url']
        ? 'check scheduler.calendar.ics_url (a readable .ics file, or a URL that answers with one)'
        : 'run `metaclaw scheduler calendar-auth` to sign in to Google Calendar again',
    });
  else checks.push({ name: 'scheduler', verdict: 'pass', detail: sources });
}

/**
 * A marked request through the proxy: a core memory in a throwaway scope, a query taken from a skill
 * in the library, `X-MetaClaw-Learning: off` so nothing learns from it. Then the turn record shows
 * whether both blocks reached the upstream.
 */
async function runCanary(config: LoadedConfig, proxy: ProxyContact | undefined, checks: Check[]): Promise<void> {
  if (!proxy) {
    checks.push({
      name: 'canary',
      verdict: 'fail',
      detail: 'the canary cannot go through the proxy: it is not running, so no request from your agent is learned from',
      fix: 'run `metaclaw start`, then `metaclaw doctor` again',
    });
    return;
  }
  const nonce = randomBytes(4).toString('hex');
  const scope = `metaclaw-doctor-${nonce}`;
  const sessionId = `metaclaw-doctor-${nonce}`;
  const marker = `canary-${nonce}`;
  const { base, headers } = proxy;
  const skillsOn = config.values['skills.enabled'];
  const memoryOn = config.values['memory.enabled'];
  let query = 'Say OK.';
  let expectSkills = false;
  if (skillsOn) {
    const listed = await fetchJson(`${base}/v1/skills`, { headers });
    const first = (listed?.['data'] as Array<{ name: string; description: string }> | undefined)?.[0];
    if (first) {
      query = first.description;
      expectSkills = true;
    } else if (!listed)
      checks.push({
        name: 'canary skills',
        verdict: 'skip',
        detail: "this key cannot list the skill library (a team member's key does not open /v1/skills), so no skills block is checked",
      });
    else
      checks.push({
        name: 'canary skills',
        verdict: 'warn',
        detail: 'the skill library is empty, so no skills block can be checked',
        fix: '`metaclaw skills install-starter` installs 42 starter skills',
      });
  }
  // The canary's memory lives in its own scope, reached like an agent reaches its own: by the scope header.
  const scoped = { ...headers, 'x-memory-scope': scope };
  let checkMemory = memoryOn;
  /** The canary memory's id while it exists: deleted by id at the end, wherever the proxy put it. */
  let canaryUnit: string | undefined;
  if (memoryOn) {
    const added = await fetchJson(`${base}/v1/memory`, {
      method: 'POST',
      headers: scoped,
      body: { type: 'preference', content: `Health check ${marker}: keep answers short.`, core: true },
    });
    if (typeof added?.['id'] === 'string') canaryUnit = added['id'];
    if (!added)
      checks.push({
        name: 'canary memory',
        verdict: 'fail',
        detail: 'could not add the canary memory through the proxy API',
        fix: 'see the proxy log (`metaclaw status` names it)',
      });
    else if (added['scope'] !== scope) {
      // A team member's key fixes the scope: the canary's standing rule would be the member's own. Not even for a moment.
      await deleteUnit(base, scoped, canaryUnit);
      canaryUnit = undefined;
      checkMemory = false;
      checks.push({
        name: 'canary memory',
        verdict: 'skip',
        detail: `this key writes memory to scope ${String(added['scope'])} only (a team member's key), so the canary adds none there and the memory block is not checked`,
      });
    }
  }
  try {
    const model = config.values['llm.model_id'] || config.values['proxy.served_model_name'];
    let response: Response;
    try {
      response = await fetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: { ...scoped, 'content-type': 'application/json', 'x-session-id': sessionId, 'x-metaclaw-learning': 'off' },
        body: JSON.stringify({
          model,
          max_tokens: 16,
          messages: [
            { role: 'system', content: 'You are a health check. Answer in one word.' },
            { role: 'user', content: query },
          ],
        }),
        signal: AbortSignal.timeout(60_000),
      });
      await response.text();
    } catch (error) {
      checks.push({ name: 'canary', verdict: 'fail', detail: `the request through the proxy failed: ${(error as Error).message}`, fix: 'see the proxy log' });
      return;
    }
    const requestId = response.headers.get('x-metaclaw-request-id');
    const record = requestId ? await waitForRecord(`${base}/v1/requests/${requestId}`, headers) : undefined;
    if (!record) {
      checks.push({
        name: 'canary',
        verdict: 'fail',
        detail: `the proxy answered HTTP ${response.status} but recorded no turn${requestId ? ` (request ${requestId})` : ''}`,
        fix: 'see the proxy log: recording is failing, so nothing can be learned',
      });
      return;
    }
    const forwarded = JSON.stringify((record['forwarded'] as { body?: unknown } | undefined)?.body ?? '');
    const outcome = record['outcome'] as { status?: number; result?: string; error?: string | null };
    const upstreamNote =
      outcome.result === 'ok' ? 'the upstream answered' : `the upstream answered HTTP ${outcome.status ?? '?'}${outcome.error ? ` (${outcome.error})` : ''}`;
    const missing: string[] = [];
    if (forwarded === '""') missing.push('nothing was forwarded upstream');
    if (expectSkills && !forwarded.includes('## Active Skills')) missing.push('no skills block reached the upstream');
    if (checkMemory && !forwarded.includes(marker)) missing.push('the memory block did not reach the upstream');
    // A team member's sessions are stored behind the member's name (`alice~<id>`).
    const recorded = record['session_id'] === sessionId || String(record['session_id']).endsWith(`~${sessionId}`);
    if (!recorded) missing.push(`the turn was recorded under session ${String(record['session_id'])}, not ${sessionId}`);
    if (missing.length > 0) {
      checks.push({
        name: 'canary',
        verdict: 'fail',
        detail: `${missing.join('; ')} (${upstreamNote})`,
        fix:
          skillsOn || memoryOn
            ? 'see `metaclaw status` for context failures and the proxy log; `curl /v1/requests/<id>` shows what was added'
            : 'skills and memory are both off: `metaclaw config set skills.enabled true`',
      });
      return;
    }
    const parts = [expectSkills ? 'skills block' : undefined, checkMemory ? 'memory block' : undefined].filter(Boolean).join(' and ');
    const delivered = `${parts ? `${parts} reached the upstream` : 'the request went through'}; turn ${requestId} recorded in session ${String(record['session_id'])}`;
    if (outcome.result === 'ok') checks.push({ name: 'canary', verdict: 'pass', detail: `${delivered}; ${upstreamNote}` });
    else
      checks.push({
        name: 'canary',
        verdict: outcome.status === 401 && config.values['llm.api_key'] === '' ? 'warn' : 'fail',
        detail: `${delivered}, but ${upstreamNote}`,
        fix:
          outcome.status === 401
            ? "no key is configured, so the upstream needs your agent's own key (the canary has none): fine if your agent sends one"
            : 'see the upstream check above',
      });
  } finally {
    await fetchJson(`${base}/v1/sessions/${sessionId}/end`, { method: 'POST', headers });
    await deleteUnit(base, scoped, canaryUnit);
    if (memoryOn) await fetchJson(`${base}/v1/memory?scope=${encodeURIComponent(scope)}`, { method: 'DELETE', headers: scoped });
  }
}

/** Deletes the canary's memory by its id (a scope's deletion would miss it where a key fixed another scope). */
async function deleteUnit(base: string, headers: Record<string, string>, id: string | undefined): Promise<void> {
  if (id !== undefined) await fetchJson(`${base}/v1/memory/${encodeURIComponent(id)}`, { method: 'DELETE', headers });
}

/** A proxy API call's JSON object, or undefined when it failed in any way. */
async function fetchJson(url: string, options: Omit<ProxyCallOptions, 'timeoutMs'>): Promise<Record<string, unknown> | undefined> {
  try {
    const response = await callJson(url, { ...options, timeoutMs: 5_000 });
    const ok = response.status >= 200 && response.status < 300 && typeof response.body === 'object' && response.body !== null;
    return ok ? (response.body as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Turns are written in small batches after the answer: poll briefly for the record. */
async function waitForRecord(url: string, headers: Record<string, string>): Promise<Record<string, unknown> | undefined> {
  for (let attempt = 0; attempt < 30; attempt++) {
    const record = await fetchJson(url, { headers });
    if (record) return record;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return undefined;
}
