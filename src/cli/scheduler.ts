import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import type { LoadedConfig } from '../config/index.js';
import { errorMessage } from '../errors.js';
import { authorizeGoogleCalendar, previewSchedule, readOAuthClient, schedulerEnabled, schedulerOffReason, type SchedulerStatus } from '../scheduler/index.js';
import { openDatabase } from '../store/index.js';
import { CliExit, loadCliConfig, print } from './context.js';
import { getJson, runningProxy } from './proxy-client.js';

interface SchedulerOptions {
  config?: string;
  json?: boolean;
}

type Section = SchedulerStatus | { enabled: false; reason: string };

export function registerSchedulerCommands(program: Command): void {
  const group = program.command('scheduler').description('the idle-window scheduler that decides when RL training may run');
  group
    .command('status')
    .description('the state (IDLE_WAIT, WINDOW_OPEN, UPDATING, PAUSING), why, and what each window source says now')
    .option('-c, --config <path>', 'config file')
    .option('--json', 'machine-readable output')
    .action(async (options: SchedulerOptions) => schedulerStatusCommand(options));
  group
    .command('next-window')
    .description('when the next training window is expected, and by which source')
    .option('-c, --config <path>', 'config file')
    .option('--json', 'machine-readable output')
    .action(async (options: SchedulerOptions) => nextWindowCommand(options));
  group
    .command('calendar-auth')
    .description('sign in to Google Calendar (read-only) so meetings open training windows; writes scheduler.calendar.token_path')
    .option('--credentials <path>', 'the OAuth client file (default: scheduler.calendar.credentials_path)')
    .option('--no-browser', 'only print the sign-in URL')
    .option('-c, --config <path>', 'config file')
    .action(async (options: { credentials?: string; browser: boolean; config?: string }) => calendarAuthCommand(options));
}

async function calendarAuthCommand(options: { credentials?: string; browser: boolean; config?: string }): Promise<void> {
  const config = loadCliConfig(options.config ? { config: options.config } : {});
  const credentialsPath = options.credentials ?? config.values['scheduler.calendar.credentials_path'];
  if (!credentialsPath)
    throw new CliExit(
      'Give the OAuth client file: --credentials PATH, or set scheduler.calendar.credentials_path (Google Cloud → APIs & Services → Credentials → Create credentials → OAuth client ID → Desktop app → Download JSON; enable the Google Calendar API for the project).',
    );
  let client;
  try {
    client = readOAuthClient(credentialsPath);
  } catch (error) {
    throw new CliExit(errorMessage(error));
  }
  const tokenPath = config.values['scheduler.calendar.token_path'] || join(config.paths.home, 'calendar_token.json');
  const { scopes } = await authorizeGoogleCalendar({
    client,
    tokenPath,
    showUrl: (url) => {
      print('Open this address in a browser on this machine and allow read-only access to your calendar:');
      print(url);
      if (options.browser) openInBrowser(url);
    },
  }).catch((error: unknown) => {
    throw new CliExit(`Google Calendar sign-in failed: ${errorMessage(error)}`);
  });
  print(`Signed in (${scopes.join(' ')}); token written to ${tokenPath} (mode 0600).`);
  if (!options.credentials || config.values['scheduler.calendar.credentials_path']) return;
  print(
    `Set scheduler.calendar.credentials_path to ${credentialsPath} (\`metaclaw config set scheduler.calendar.credentials_path ${credentialsPath}\`) so the scheduler reads this calendar.`,
  );
}

/** Best effort: the URL is printed anyway. */
function openInBrowser(url: string): void {
  const command = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'explorer' : 'xdg-open';
  try {
    const child = spawn(command, [url], { stdio: 'ignore', detached: true });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    // no browser here: the printed URL is the way
  }
}

/** The running proxy's scheduler section, or undefined when no proxy answers. */
async function runningSection(config: LoadedConfig): Promise<{ base: string; section: Section } | undefined> {
  const proxy = await runningProxy(config);
  if (!proxy) return undefined;
  const { base, apiKey } = proxy;
  const response = await getJson(`${base}/status`, apiKey ? { apiKey } : {});
  if (response.status !== 200) throw new CliExit(`MetaClaw answers at ${base} but /status returned ${response.status}.`);
  const section = (response.body as { scheduler?: Section }).scheduler;
  if (!section) throw new CliExit(`The proxy at ${base} reports no scheduler (an older MetaClaw-TS?).`);
  return { base, section };
}

async function schedulerStatusCommand(options: SchedulerOptions): Promise<void> {
  const config = loadCliConfig(options.config ? { config: options.config } : {});
  const running = await runningSection(config);
  if (running) {
    if (options.json) print(JSON.stringify({ running: true, url: running.base, ...running.section }, null, 2));
    else printSection(running.section);
    return;
  }
  // Not running: what the last run left, and what would open a window now.
  const preview = await offlinePreview(config);
  const enabled = schedulerEnabled(config);
  if (options.json) {
    print(
      JSON.stringify(
        {
          running: false,
          enabled,
          ...(enabled ? {} : { reason: schedulerOffReason(config) }),
          last_state: preview.persisted
            ? { state: preview.persisted.state, since: new Date(preview.persisted.since).toISOString(), reason: preview.persisted.reason }
            : null,
          pending_step: preview.persisted?.step?.pending ? preview.persisted.step.id : null,
          sources: preview.decision.readings,
        },
        null,
        2,
      ),
    );
    return;
  }
  print(`MetaClaw is not running: no training window opens until it does. The scheduler is ${enabled ? 'on' : schedulerOffReason(config)}.`);
  if (preview.persisted)
    print(`  last state  ${preview.persisted.state} since ${new Date(preview.persisted.since).toLocaleString()}: ${preview.persisted.reason}`);
  if (preview.persisted?.step?.pending) print(`  pending     step ${preview.persisted.step.id} waits for the next window`);
  for (const reading of preview.decision.readings)
    print(`  ${reading.source.padEnd(14)}${reading.available ? (reading.open ? 'open  ' : 'closed') : 'n/a   '} ${reading.detail}`);
}

async function nextWindowCommand(options: SchedulerOptions): Promise<void> {
  const config = loadCliConfig(options.config ? { config: options.config } : {});
  const running = await runningSection(config);
  if (running) {
    const { section } = running;
    if (!section.enabled) {
      if (options.json) print(JSON.stringify({ running: true, ...section }));
      else print(`The scheduler is ${section.reason}.`);
      return;
    }
    if (options.json) {
      print(JSON.stringify({ running: true, state: section.state, window: section.window, next_window: section.next_window }, null, 2));
      return;
    }
    if (section.window.open) {
      print(
        `A window is open now (${section.window.sources.join(' + ')})${section.window.until ? ` until ${localTime(section.window.until)}` : ', until activity'}; state ${section.state}.`,
      );
      // The ones after it: a source that would open one now is this window.
      const later = section.next_window.filter((window) => Date.parse(window.at) > Date.now() + 5_000);
      if (later.length > 0) printExpected(later, 'Later');
      return;
    }
    if (section.window.blocked_by) print(`No window now: ${section.window.blocked_by}.`);
    printExpected(section.next_window);
    return;
  }
  const preview = await offlinePreview(config);
  const expected = preview.expected.map((window) => ({
    source: window.source,
    at: new Date(window.at).toISOString(),
    until: window.until === null ? null : new Date(window.until).toISOString(),
    detail: window.detail,
  }));
  if (options.json) {
    print(JSON.stringify({ running: false, enabled: schedulerEnabled(config), next_window: expected }, null, 2));
    return;
  }
  print('MetaClaw is not running; were it running now:');
  printExpected(expected);
}

function printExpected(expected: Array<{ source: string; at: string; until: string | null; detail: string }>, label = 'Next window'): void {
  if (expected.length === 0) {
    print('No window is expected in the next days.');
    return;
  }
  const [first, ...rest] = expected;
  print(`${label}: ${localTime(first!.at)} by ${first!.source} (${first!.detail})${first!.until ? `, until ${localTime(first!.until)}` : ''}.`);
  for (const window of rest.slice(0, 5)) print(`  then ${localTime(window.at)} by ${window.source} (${window.detail})`);
}

function printSection(section: Section): void {
  if (!section.enabled) {
    print(`Scheduler: ${section.reason}.`);
    return;
  }
  print(`Scheduler: ${section.state} since ${localTime(section.since)}: ${section.reason}`);
  print(
    `  window      ${section.window.open ? `open (${section.window.sources.join(' + ')})${section.window.until ? ` until ${localTime(section.window.until)}` : ''}` : `closed${section.window.blocked_by ? `: ${section.window.blocked_by}` : ''}`}`,
  );
  for (const reading of section.sources)
    print(`  ${reading.source.padEnd(14)}${reading.available ? (reading.open ? 'open  ' : 'closed') : 'n/a   '} ${reading.detail}`);
  if (section.step)
    print(`  step        ${section.step.id}${section.step.pending ? ' (pending: waits for the next window)' : ` since ${localTime(section.step.started_at)}`}`);
  if (section.last_step) print(`  last step   ${section.last_step.id}: ${section.last_step.outcome} at ${localTime(section.last_step.ended_at)}`);
  print(`  steps       ${section.steps.done} done, ${section.steps.abandoned} abandoned or interrupted`);
  const next = section.next_window[0];
  if (next && !section.window.open) print(`  next        ${localTime(next.at)} by ${next.source} (${next.detail})`);
}

/**
 * What would open a window now, and what the last run left. A node of a team keeps its scheduler's
 * state in memory (each node runs its own windows), so with store.url set the install's own database,
 * which holds at most what a personal run left before it joined the team, is not read.
 */
async function offlinePreview(config: LoadedConfig) {
  const path = config.paths.database;
  const db = !config.values['store.url'] && existsSync(path) ? openDatabase(path, { readonly: true }) : undefined;
  try {
    return await previewSchedule(config, db);
  } finally {
    db?.close();
  }
}

function localTime(iso: string): string {
  return new Date(iso).toLocaleString();
}
