import { setTimeout as sleep } from 'node:timers/promises';
import { prettyFactory } from 'pino-pretty';
import {
  lastLogLines,
  logFilter,
  logFilesNewestFirst,
  LogFollower,
  lineMatches,
  parseLogLine,
  parseSince,
  SINCE_FORMS,
  type LogFilter,
  type LogLevel,
  type LogLine,
} from '../logging/log-reader.js';
import { CliExit, loadCliConfigOrDefaults, numberArgument, print, printError } from './context.js';

export interface LogsOptions {
  config?: string;
  lines: string;
  follow?: boolean;
  level?: LogLevel;
  request?: string;
  job?: string;
  since?: string;
  json?: boolean;
}

/** The most lines a tail prints; past it, a filter says more than a longer tail would. */
const LOGS_MAX_LINES = 100_000;
/** How often a follower looks for new lines (the log is written at least every half second). */
const FOLLOW_POLL_MS = 200;

/** `--since`, checked. */
function sinceArgument(text: string): number {
  const since = parseSince(text);
  if (since === undefined) throw new CliExit(`--since ${JSON.stringify(text)}: ${SINCE_FORMS}.`);
  return since;
}

/**
 * `metaclaw logs`: the daemon's log (`$METACLAW_HOME/logs/metaclaw.log` and its rotated files) in a
 * form a person reads, filtered by level, request id, learning job or time; `--follow` goes on
 * printing what is written, across rotation. Works whether or not the proxy runs, and with a
 * config.yaml that does not load (when the log is most wanted).
 */
export async function logsCommand(options: LogsOptions): Promise<void> {
  const count = numberArgument(options.lines, '--lines', { min: 1, max: LOGS_MAX_LINES });
  const filter = logFilter({
    level: options.level,
    request: options.request,
    job: options.job === undefined ? undefined : numberArgument(options.job, '--job', { min: 1, max: Number.MAX_SAFE_INTEGER }),
    since: options.since === undefined ? undefined : sinceArgument(options.since),
  });
  const { config } = loadCliConfigOrDefaults(options, 'Reading the log of the default home folder.');
  const path = config.paths.logFile;
  const show = lineWriter(options.json === true);

  const follower = options.follow ? new LogFollower(path) : undefined;
  const tail = await lastLogLines(path, count, filter, follower?.start);
  if (tail.length === 0 && !follower) {
    printError(
      logFilesNewestFirst(path).length === 0
        ? `No log yet at ${path} (has the proxy run with this METACLAW_HOME?).`
        : `No log lines${describeFilter(filter)} in ${path} or its rotated files.`,
    );
    return;
  }
  for (const line of tail) show(line);
  if (!follower) return;

  if (tail.length === 0) printError(`Waiting for log lines${describeFilter(filter)} in ${path} (Ctrl-C to stop) …`);
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  process.once('SIGTERM', () => stop.abort());
  try {
    while (!stop.signal.aborted) {
      for (const raw of follower.poll()) {
        const line = parseLogLine(raw);
        if (lineMatches(line, filter)) show(line);
      }
      await sleep(FOLLOW_POLL_MS, undefined, { signal: stop.signal }).catch(() => undefined);
    }
  } finally {
    follower.close();
  }
}

/** Prints a line as written (`--json`), or an entry as pino-pretty lays it out, in local time. */
function lineWriter(json: boolean): (line: LogLine) => void {
  if (json) return (line) => print(line.raw);
  const pretty = prettyFactory({ colorize: false, ignore: 'pid,hostname', translateTime: 'SYS:yyyy-mm-dd HH:MM:ss.l' });
  // print() shows control characters as escapes: log lines carry text from agents and upstreams.
  return (line) => print(line.entry ? pretty(line.entry).trimEnd() : line.raw);
}

function describeFilter(filter: LogFilter): string {
  const parts = [
    filter.minLevel ? `at ${filter.minLevel} or above` : '',
    filter.requestId !== undefined ? `of request ${filter.requestId}` : '',
    filter.jobId !== undefined ? `of learning job ${filter.jobId}` : '',
    filter.sinceMs !== undefined ? `since ${new Date(filter.sinceMs).toISOString()}` : '',
  ].filter(Boolean);
  return parts.length > 0 ? ` ${parts.join(', ')}` : '';
}
