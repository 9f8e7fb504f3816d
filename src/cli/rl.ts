import { closeSync, writeSync } from 'node:fs';
import { Option, type Command } from 'commander';
import type { LoadedConfig } from '../config/index.js';
import { ConversationStore } from '../conversation/index.js';
import {
  decideMode,
  EXPORT_FORMATS,
  exportSamples,
  RlBuffer,
  rlReport,
  type EngineReport,
  type ExportFormat,
  type RlReport,
  type ScoredSampleSource,
  type TurnSource,
} from '../rl/index.js';
import { TrainingSteps, type StepRecord } from '../rl/loop/index.js';
import { judgeSettings } from '../runtime/settings.js';
import { SkillHistory } from '../skills/index.js';
import { openDatabase, type Db } from '../store/index.js';
import { CliExit, loadCliConfig, openPrivateFile, print, printError } from './context.js';
import { judgeProgress, stepRetryText, trainerOpeningFailed, trainingState } from './training-state.js';
import { adminHeaders, callJson, getJson, runningProxy } from './proxy-client.js';
import { onServedStore } from './store.js';

interface RlOptions {
  config?: string;
  json?: boolean;
}

interface ExportOptions {
  config?: string;
  format: ExportFormat;
  out?: string;
  includeDropped?: boolean;
}

/**
 * `metaclaw rl …`: the sample buffer and the steps taken are read from the database (the proxy need
 * not run); training control (a step now, rollback) goes to the running proxy with the admin token.
 */
export function registerRlCommands(program: Command): void {
  const rl = program.command('rl').description('reinforcement learning: the sample buffer, the judge, training steps, checkpoints, export');
  rl.command('status')
    .description('the mode and why, the training backend and served policy, the last steps, the sample buffer, mean reward by day and skill generation')
    .option('-c, --config <path>', 'config file')
    .option('--json', 'machine-readable output')
    .action(async (options: RlOptions) => statusCommand(options));
  rl.command('train-step')
    .description('run one training step now on the judged samples waiting (needs the running proxy in mode rl or auto)')
    .option('-c, --config <path>', 'config file')
    .option('--json', 'machine-readable output')
    .action(async (options: RlOptions) => trainStepCommand(options));
  rl.command('checkpoints')
    .description('the steps whose weights can be served again, and which one serves now')
    .option('-c, --config <path>', 'config file')
    .option('--json', 'machine-readable output')
    .action(async (options: RlOptions) => checkpointsCommand(options));
  rl.command('rollback')
    .description(
      "serve an earlier step's weights (pinned: later steps train but do not replace it), step 0 for the weights the run started from, or --latest to follow training again",
    )
    .argument('[step]', 'the step to serve (see `metaclaw rl checkpoints`); 0: the LoRA the training run started from')
    .option('--latest', 'serve the newest step again and let new steps replace it')
    .option('-c, --config <path>', 'config file')
    .option('--json', 'machine-readable output')
    .action(async (step: string | undefined, options: RlOptions & { latest?: boolean }) => rollbackCommand(step, options));
  rl.command('export')
    .description('write scored samples as JSONL: Tinker datums, SFT conversations, DPO pairs or KTO labels')
    .addOption(
      new Option('--format <format>', 'datum (needs token ids) | sft (good answers) | dpo (good/bad pairs) | kto (good/bad labels)')
        .choices(EXPORT_FORMATS)
        .default('sft'),
    )
    .option('--out <file>', 'write to this file (default: standard output)')
    .option('--include-dropped', 'also samples of older skill generations (left out of training)')
    .option('-c, --config <path>', 'config file')
    .action(async (options: ExportOptions) => exportCommand(options));
}

/**
 * `rl export` on the store the proxy serves from (onServedStore): a team store's samples, turns and
 * skill generation when store.url is set, else the install's own database. Both go through
 * exportSamples, so they write the same lines.
 */
async function exportCommand(options: ExportOptions): Promise<void> {
  const config = loadCliConfig(options.config ? { config: options.config } : {});
  return onServedStore(config, {
    team: async (postgres, pool) =>
      runExport(
        {
          buffer: new postgres.PgRlSamples(pool),
          conversation: new postgres.PgConversationReads(pool),
          generation: await new postgres.PgSkillStore(pool).generation(),
        },
        options,
      ),
    personal: (db) => runExport({ buffer: new RlBuffer(db), conversation: new ConversationStore(db), generation: generationOf(db, config) }, options),
  });
}

function generationOf(db: Db, config: LoadedConfig): number {
  return new SkillHistory(db, config.paths.skillsDir).generation;
}

function report(db: Db, config: LoadedConfig): RlReport {
  return rlReport(db, decideMode(config.values), judgeSettings(config), generationOf(db, config));
}

/** Where an export reads: the scored samples, their turns, and the skill generation now. */
interface ExportSources {
  buffer: ScoredSampleSource;
  conversation: TurnSource;
  generation: number;
}

async function runExport(sources: ExportSources, options: ExportOptions): Promise<void> {
  const fd = options.out ? openPrivateFile(options.out) : undefined;
  try {
    const result = await exportSamples(
      sources.buffer,
      sources.conversation,
      { format: options.format, currentGeneration: sources.generation, includeDropped: options.includeDropped === true },
      (line) => (fd === undefined ? writeOut(`${JSON.stringify(line)}\n`) : void writeSync(fd, `${JSON.stringify(line)}\n`)),
    );
    const skipped = Object.entries(result.skipped)
      .filter(([, count]) => count > 0)
      .map(([reason, count]) => `${count} ${reason.replaceAll('_', ' ')}`);
    printError(
      `exported ${result.written} ${options.format} line(s) from ${result.scored} scored sample(s)${options.out ? ` to ${options.out}` : ''}${skipped.length > 0 ? `; left out: ${skipped.join(', ')}` : ''}`,
    );
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * One export line on standard output, waiting while a pipe is full: writeSync(1) there throws
 * EAGAIN once a slow reader (`| gzip`, a trainer reading as it goes) lets 64 KB pile up. A reader
 * that closes the pipe (`| head`) ends the command quietly (main.ts's EPIPE handler).
 */
function writeOut(text: string): Promise<void> | undefined {
  if (process.stdout.write(text)) return undefined;
  return new Promise((resolve) => process.stdout.once('drain', resolve));
}

interface StatusView extends RlReport {
  /** the running proxy's training engine; null when it runs without one, absent when it is not running */
  training?: EngineReport | null;
  /** the last steps (a team node's report has no trigger) */
  steps: Array<Omit<ReturnType<typeof presentStep>, 'trigger' | 'status'> & { status: string }>;
}

async function statusCommand(options: RlOptions): Promise<void> {
  const config = loadCliConfig(options.config ? { config: options.config } : {});
  if (config.values['store.url']) return printReport(await teamStatus(config), options.json === true);
  const db = openDatabase(config.paths.database);
  let view: StatusView;
  try {
    view = { ...report(db, config), steps: new TrainingSteps(db).recent(5).map(presentStep) };
  } finally {
    db.close();
  }
  const proxy = await runningProxy(config);
  if (proxy) {
    const response = await getJson(`${proxy.base}/status`, proxy.apiKey ? { apiKey: proxy.apiKey } : {});
    const training = (response.body as { rl?: { training?: EngineReport | null } } | undefined)?.rl?.training;
    if (response.status === 200 && training !== undefined) view.training = training;
  }
  printReport(view, options.json === true);
}

/** A node of a team store: the team's buffer and the node's training report (the team's last steps) as the running node reads them (GET /v1/rl). */
async function teamStatus(config: LoadedConfig): Promise<StatusView> {
  const proxy = await runningProxy(config);
  if (!proxy) throw new CliExit('MetaClaw is not running: the RL buffer of a team store is read through a running node (`metaclaw start`).');
  const answer = answerOf(await getJson(`${proxy.base}/v1/rl`, proxy.apiKey ? { apiKey: proxy.apiKey } : {})) as unknown as RlReport & {
    training?: EngineReport | null;
  };
  const training = answer.training ?? null;
  return { ...answer, training, steps: training?.last_steps ?? [] };
}

/** A running proxy with RL training, or a clear reason why not. */
async function trainingProxy(config: LoadedConfig): Promise<{ base: string; headers: Record<string, string>; apiKey?: string }> {
  const proxy = await runningProxy(config);
  if (!proxy) throw new CliExit('MetaClaw is not running: start it in mode rl or auto (`metaclaw start --mode rl`) to train.');
  return { base: proxy.base, headers: adminHeaders(config), ...(proxy.apiKey ? { apiKey: proxy.apiKey } : {}) };
}

/** The proxy's answer, or a CliExit carrying its error message. */
function answerOf(response: { status: number; body: unknown }): Record<string, unknown> {
  if (response.status === 200) return response.body as Record<string, unknown>;
  const message = (response.body as { error?: { message?: string } } | undefined)?.error?.message ?? JSON.stringify(response.body);
  throw new CliExit(`The proxy refused (${response.status}): ${message}`);
}

async function trainStepCommand(options: RlOptions): Promise<void> {
  const config = loadCliConfig(options.config ? { config: options.config } : {});
  const proxy = await trainingProxy(config);
  // A step on a real backend takes minutes (forward-backward, optimizer step, saving weights).
  const outcome = answerOf(await callJson(`${proxy.base}/v1/rl/train_step`, { method: 'POST', ...proxy, timeoutMs: 30 * 60_000 }));
  if (options.json) return print(JSON.stringify(outcome, null, 2));
  const status = outcome['status'];
  if (status === 'done') {
    const metrics = outcome['metrics'] as { loss: number; metrics: Record<string, number> };
    const reward = metrics.metrics['reward:mean'];
    print(
      `step ${String(outcome['step'])}: trained on ${String(outcome['samples'])} sample(s), loss ${metrics.loss.toFixed(4)}${reward === undefined ? '' : `, mean reward ${signed(reward)}`}; ${outcome['served'] ? 'its weights serve the agent now' : 'a rolled-back policy stays pinned (`metaclaw rl rollback --latest` to follow training)'}`,
    );
  } else if (status === 'skipped') throw new CliExit(`No step: ${String(outcome['reason'])}.`);
  else if (status === 'empty')
    print(
      `step ${String(outcome['step'])}: nothing to learn from its ${String(outcome['samples'])} sample(s) (${String(outcome['reason'])}); they are used up.`,
    );
  else {
    const setAside =
      typeof outcome['setAside'] === 'number'
        ? ` The backend has refused this batch again and again: its ${outcome['setAside']} sample(s) are set aside, and the next batch trains.`
        : '';
    throw new CliExit(`step ${String(outcome['step'])} ${String(status)}: ${String(outcome['error'] ?? outcome['reason'])}${setAside}`);
  }
}

async function checkpointsCommand(options: RlOptions): Promise<void> {
  const config = loadCliConfig(options.config ? { config: options.config } : {});
  const proxy = await trainingProxy(config);
  const answer = answerOf(await getJson(`${proxy.base}/v1/rl/checkpoints`, proxy.apiKey ? { apiKey: proxy.apiKey } : {}));
  if (options.json) return print(JSON.stringify(answer, null, 2));
  const served = answer['served'] as { step: number; samplerPath: string; pinned: boolean } | null;
  print(served ? `serving    step ${served.step} (${served.samplerPath})${served.pinned ? ', pinned by a rollback' : ''}` : 'serving    nothing yet');
  const rows = answer['data'] as Array<{ step: number; samples: number; loss: number | null; sampler_path: string; finished_at: string }>;
  if (rows.length === 0) print('No step has saved weights yet.');
  for (const row of rows)
    print(
      `  step ${String(row.step).padStart(4)}  ${row.finished_at}  ${row.samples} sample(s), loss ${row.loss === null ? '-' : row.loss.toFixed(4)}  ${row.sampler_path}`,
    );
  const start = answer['start'] as { step: 0; sampler_path: string; saved_at: string } | null | undefined;
  if (start) print(`  step ${'0'.padStart(4)}  ${start.saved_at}  the weights the training run started from  ${start.sampler_path}`);
}

async function rollbackCommand(step: string | undefined, options: RlOptions & { latest?: boolean }): Promise<void> {
  if (step === undefined && options.latest !== true) throw new CliExit('Give a step to serve (see `metaclaw rl checkpoints`) or --latest.');
  if (step !== undefined && options.latest === true) throw new CliExit('Give a step to serve or --latest, not both.');
  const number = step === undefined ? undefined : Number(step);
  if (number !== undefined && !(step?.trim() !== '' && Number.isInteger(number) && number >= 0)) throw new CliExit(`"${step}" is not a step number.`);
  const config = loadCliConfig(options.config ? { config: options.config } : {});
  const proxy = await trainingProxy(config);
  const body = number === undefined ? { latest: true } : { step: number };
  const answer = answerOf(await callJson(`${proxy.base}/v1/rl/rollback`, { method: 'POST', ...proxy, body }));
  if (options.json) return print(JSON.stringify(answer, null, 2));
  const served = answer['served'] as { step: number; pinned: boolean };
  const which = served.step === 0 ? 'step 0 (the weights this training run started from)' : `step ${served.step}`;
  print(
    served.pinned
      ? `Serving ${which} now; later steps still train but do not replace it until \`metaclaw rl rollback --latest\`.`
      : `Serving the newest step (${served.step}); new steps replace it as they finish.`,
  );
}

function presentStep(record: StepRecord) {
  return {
    step: record.step,
    status: record.status,
    trigger: record.trigger,
    samples: record.samples,
    loss: record.loss,
    reward: record.metrics['reward:mean'] ?? null,
    finished_at: record.finishedAt === null ? null : new Date(record.finishedAt).toISOString(),
    error: record.error,
  };
}

/** What answers main turns: the served step only while the backend is open; until then the normal upstream. */
function servingText(training: EngineReport): string {
  const served = training.served;
  const step = served ? `step ${served.step}${served.pinned ? ' (pinned by a rollback)' : ''}` : undefined;
  if (training.state !== 'ready') return `the normal upstream until the backend opens${step ? ` (then ${step})` : ''}`;
  return step ?? 'the normal upstream (no policy yet)';
}

function printTraining(status: StatusView): void {
  const training = status.training;
  if (training === undefined)
    print(`training   MetaClaw is not running; ${status.steps.length > 0 ? 'the last steps as recorded:' : 'no training steps recorded'}`);
  else if (training === null) print('training   off in this run (mode skills_only)');
  else {
    const state = trainingState(training, 'ready');
    print(`training   ${training.backend.kind} at ${training.backend.base_url}, ${training.base_model}: ${state}`);
    print(
      `           serving ${servingText(training)}; ${training.ready_samples} of ${training.batch_size} samples ready for the next step; trigger: ${training.trigger === 'manual' ? 'only `metaclaw rl train-step`' : training.trigger === 'window' ? 'in idle windows' : 'whenever a batch is full'}`,
    );
    const retry = stepRetryText(training);
    if (retry) print(`           ${retry} (\`metaclaw rl train-step\` tries now)`);
    const trainerFailed = trainerOpeningFailed(training);
    if (trainerFailed) print(`trainer    FAILED: ${trainerFailed}`);
    print(`window     ${training.window}`);
  }
  for (const step of status.steps)
    print(
      `  step ${String(step.step).padStart(4)}  ${step.status.padEnd(9)} ${step.samples} sample(s), loss ${step.loss === null ? '-' : step.loss.toFixed(4)}, reward ${signed(step.reward)}${step.error ? ` (${step.error})` : ''}`,
    );
}

function printReport(status: StatusView, json: boolean): void {
  if (json) return print(JSON.stringify(status, null, 2));
  const { mode, buffer, judge } = status;
  print(
    mode.effective === mode.configured
      ? `mode       ${mode.effective} (${mode.reason})`
      : `mode       configured ${mode.configured}, running as ${mode.effective}: ${mode.reason}`,
  );
  print(
    judge
      ? `judge      ${judge.votes} vote(s) per turn, ${judge.model} at ${judge.endpoint}`
      : 'judge      off (samples are recorded in modes rl and auto, or with rl.enabled)',
  );
  printTraining(status);
  const state = buffer.by_state;
  print(
    `buffer     ${buffer.samples} sample(s): ${judgeProgress(state)}, ${state.scored} scored, ${state.tie} tied, ${state.failed} judge failed, ${state.dropped} dropped, ${state.trained} trained`,
  );
  print(
    `           ${buffer.trainable} trainable, ${buffer.text_only} without token ids (served by the normal upstream; exportable as text); judged ${percent(buffer.judged_share)}, mean reward ${signed(buffer.mean_reward)}`,
  );
  // A buffer read from an older running node has no such figure.
  if ((state.set_aside ?? 0) > 0) print(`set aside  ${state.set_aside} sample(s) never train: ${buffer.set_aside_reason ?? 'the backend refused their batch'}`);
  const teacher = buffer.teacher;
  if (teacher.queued + teacher.done + teacher.failed > 0)
    print(
      `teacher    ${teacher.done} with the OPD teacher's logprobs, ${teacher.queued} waiting for it, ${teacher.failed} refused (trained without the KL term)`,
    );
  if (buffer.by_day.length > 0) {
    print('by day');
    for (const day of buffer.by_day) print(`  ${day.day}  ${day.samples} sample(s), ${day.scored} scored, mean reward ${signed(day.mean_reward)}`);
  }
  if (buffer.by_generation.length > 0) {
    print(`by skill generation (now ${buffer.current_generation})`);
    for (const row of buffer.by_generation)
      print(
        `  ${String(row.generation).padStart(4)}  ${row.samples} sample(s), ${row.scored} scored, mean reward ${signed(row.mean_reward)}, ${row.dropped} dropped`,
      );
  }
}

function percent(share: number | null): string {
  return share === null ? '-' : `${Math.round(share * 100)}%`;
}

function signed(value: number | null): string {
  if (value === null) return '-';
  return `${value > 0 ? '+' : ''}${value.toFixed(2)}`;
}
