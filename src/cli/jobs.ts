import { Option, type Command } from 'commander';
import type { LoadedConfig } from '../config/index.js';
import {
  describeResult,
  dismissJobs,
  JOB_LIST_MAX,
  listJobs,
  retryJobs,
  statusWord,
  type DismissResult,
  type JobListStatus,
  type JobSelection,
  type JobView,
  type RetryResult,
} from '../learning/job-admin.js';
import { JobQueue } from '../learning/index.js';
import type { JobQueueStore } from '../store/ports.js';
import { CliExit, loadCliConfig, print } from './context.js';
import { counted } from './plural.js';
import { CLI_INSTANCE, onServedStore } from './store.js';

interface JobsOptions {
  config?: string;
  json?: boolean;
}

interface ListOptions extends JobsOptions {
  status: JobListStatus | 'running';
  kind?: string;
  limit: string;
}

interface ActOptions extends JobsOptions {
  allDead?: boolean;
  kind?: string;
}

/**
 * `metaclaw jobs …`: the learning queue read and changed in the store itself (SQLite, or the team's
 * PostgreSQL when store.url is set), so it works whether or not the proxy runs; a running proxy
 * polls the queue every second and picks a retried job up by itself.
 */
export function registerJobsCommands(program: Command): void {
  const jobs = program.command('jobs').description('the learning queue: failed jobs and why, and sending them back once the cause is fixed');
  jobs
    .command('list', { isDefault: true })
    .description('jobs, newest first: the dead ones (failed for good) by default, with their last error')
    .addOption(new Option('--status <status>', 'which jobs').choices(['dead', 'queued', 'running', 'done', 'all']).default('dead'))
    .option('--kind <kind>', 'only jobs of this kind (e.g. memory.extract)')
    .option('--limit <n>', `at most this many (1 to ${JOB_LIST_MAX})`, '50')
    .option('-c, --config <path>', 'config file')
    .option('--json', 'machine-readable output')
    .action(async (options: ListOptions) => listCommand(options));
  jobs
    .command('retry')
    .description('queue dead jobs again with fresh attempts (after fixing what made them fail)')
    .argument('[ids...]', 'the job ids (see `metaclaw jobs`)')
    .option('--all-dead', 'every dead job (with --kind, every dead job of that kind)')
    .option('--kind <kind>', 'with --all-dead: only jobs of this kind')
    .option('-c, --config <path>', 'config file')
    .option('--json', 'machine-readable output')
    .action(async (ids: string[], options: ActOptions) => actCommand('retry', ids, options));
  jobs
    .command('dismiss')
    .description('delete dead jobs you will not retry (doctor stops warning about them)')
    .argument('[ids...]', 'the job ids (see `metaclaw jobs`)')
    .option('--all-dead', 'every dead job (with --kind, every dead job of that kind)')
    .option('--kind <kind>', 'with --all-dead: only jobs of this kind')
    .option('-c, --config <path>', 'config file')
    .option('--json', 'machine-readable output')
    .action(async (ids: string[], options: ActOptions) => actCommand('dismiss', ids, options));
}

async function withQueue<T>(config: LoadedConfig, work: (queue: JobQueueStore) => Promise<T>): Promise<T> {
  const maxAttempts = config.values['learning.max_attempts'];
  return onServedStore(config, {
    team: (postgres, pool) => work(new postgres.PgJobQueue(pool, CLI_INSTANCE, maxAttempts)),
    personal: (db) => work(new JobQueue(db, CLI_INSTANCE, maxAttempts)),
  });
}

async function listCommand(options: ListOptions): Promise<void> {
  const limit = Number(options.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > JOB_LIST_MAX)
    throw new CliExit(`--limit: "${options.limit}" is not a whole number from 1 to ${JOB_LIST_MAX}.`);
  const config = loadCliConfig(options.config ? { config: options.config } : {});
  const status = options.status === 'running' ? 'leased' : options.status;
  const rows = await withQueue(config, (queue) => listJobs(queue, { status, limit, ...(options.kind ? { kind: options.kind } : {}) }));
  if (options.json) return print(JSON.stringify({ object: 'list', data: rows }, null, 2));
  if (rows.length === 0)
    return print(`No ${options.status === 'all' ? '' : `${options.status} `}learning jobs${options.kind ? ` of kind ${options.kind}` : ''}.`);
  for (const row of rows) print(describeJob(row));
  if (status === 'dead')
    print(
      '\nWhat a job logged: `metaclaw logs --job ID`. Once the cause is fixed: `metaclaw jobs retry ID…` (or --all-dead); to give up on them: `metaclaw jobs dismiss ID…` (or --all-dead).',
    );
}

function describeJob(job: JobView): string {
  const head = `${String(job.id).padStart(6)}  ${job.kind}${job.subject ? ` (${job.subject})` : ''}  ${statusWord(job.status)}, attempt ${job.attempts} of ${job.max_attempts}, ${counted(job.tokens_used, 'token')}, queued ${job.created_at}`;
  return job.error ? `${head}\n        ${job.error.replace(/\s+/g, ' ').slice(0, 300)}` : head;
}

async function actCommand(action: 'retry' | 'dismiss', ids: string[], options: ActOptions): Promise<void> {
  if (ids.length > 0 && options.allDead) throw new CliExit('Give job ids or --all-dead, not both.');
  if (ids.length === 0 && !options.allDead) throw new CliExit(`Give the ids of the jobs to ${action} (see \`metaclaw jobs\`) or --all-dead.`);
  if (options.kind && !options.allDead) throw new CliExit('--kind goes with --all-dead.');
  const numbers = ids.map((id) => {
    const number = Number(id);
    if (!/^[0-9]+$/.test(id) || !Number.isSafeInteger(number) || number < 1) throw new CliExit(`"${id}" is not a job id.`);
    return number;
  });
  const selection: JobSelection = options.allDead ? { allDead: true, ...(options.kind ? { kind: options.kind } : {}) } : { ids: numbers };
  const config = loadCliConfig(options.config ? { config: options.config } : {});
  const results = await withQueue<Array<RetryResult | DismissResult>>(config, (queue) =>
    action === 'retry' ? retryJobs(queue, selection) : dismissJobs(queue, selection),
  );
  const done = results.filter((result) => result.outcome === (action === 'retry' ? 'queued' : 'dismissed')).length;
  if (options.json) print(JSON.stringify({ object: 'list', data: results, [action === 'retry' ? 'queued' : 'dismissed']: done }, null, 2));
  else if (results.length === 0) print(`No dead learning jobs${options.kind ? ` of kind ${options.kind}` : ''}.`);
  else {
    for (const result of results) print(describeResult(result));
    print(
      action === 'retry'
        ? `${done} of ${results.length} job(s) queued again; a running MetaClaw picks them up within a second.`
        : `${done} of ${results.length} job(s) dismissed.`,
    );
  }
  // Asking for a job that is not there, or not dead, is a mistake worth an exit code.
  if (results.some((result) => result.outcome === 'missing' || result.outcome === 'not_dead')) process.exitCode = 1;
}
