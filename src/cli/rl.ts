import { closeSync, openSync, writeSync } from 'node:fs';
import { Option, type Command } from 'commander';
import type { LoadedConfig } from '../config/index.js';
import { ConversationStore } from '../conversation/index.js';
import { decideMode, EXPORT_FORMATS, exportSamples, RlBuffer, rlReport, type ExportFormat, type RlReport } from '../rl/index.js';
import { judgeSettings } from '../runtime/settings.js';
import { SkillHistory } from '../skills/index.js';
import { openDatabase, type Db } from '../store/index.js';
import { loadCliConfig, print, printError } from './context.js';

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

/** `metaclaw rl …`: the RL sample buffer, read from the database (the proxy need not run). */
export function registerRlCommands(program: Command): void {
  const rl = program.command('rl').description('reinforcement learning: the sample buffer, the judge, export');
  rl.command('status')
    .description('the mode and why, the judge, the sample buffer by state, mean reward by day and by skill generation')
    .option('-c, --config <path>', 'config file')
    .option('--json', 'machine-readable output')
    .action((options: RlOptions) => withDatabase(options, (db, config) => printReport(report(db, config), options.json === true)));
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
    .action((options: ExportOptions) => withDatabase(options, (db, config) => runExport(db, config, options)));
}

function withDatabase(options: { config?: string }, action: (db: Db, config: LoadedConfig) => void): void {
  const config = loadCliConfig(options.config ? { config: options.config } : {});
  const db = openDatabase(config.paths.database);
  try {
    action(db, config);
  } finally {
    db.close();
  }
}

function generationOf(db: Db, config: LoadedConfig): number {
  return new SkillHistory(db, config.paths.skillsDir).generation;
}

function report(db: Db, config: LoadedConfig): RlReport {
  return rlReport(db, decideMode(config.values), judgeSettings(config), generationOf(db, config));
}

function runExport(db: Db, config: LoadedConfig, options: ExportOptions): void {
  const fd = options.out ? openSync(options.out, 'w', 0o600) : 1;
  try {
    const result = exportSamples(
      new RlBuffer(db),
      new ConversationStore(db),
      { format: options.format, currentGeneration: generationOf(db, config), includeDropped: options.includeDropped === true },
      (line) => writeSync(fd, `${JSON.stringify(line)}\n`),
    );
    const skipped = Object.entries(result.skipped)
      .filter(([, count]) => count > 0)
      .map(([reason, count]) => `${count} ${reason.replaceAll('_', ' ')}`);
    printError(
      `exported ${result.written} ${options.format} line(s) from ${result.scored} scored sample(s)${options.out ? ` to ${options.out}` : ''}${skipped.length > 0 ? `; left out: ${skipped.join(', ')}` : ''}`,
    );
  } finally {
    if (fd !== 1) closeSync(fd);
  }
}

function printReport(status: RlReport, json: boolean): void {
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
  const state = buffer.by_state;
  print(
    `buffer     ${buffer.samples} sample(s): ${state.waiting} waiting for the next turn, ${state.queued} queued for the judge, ${state.scored} scored, ${state.tie} tied, ${state.failed} judge failed, ${state.dropped} dropped, ${state.trained} trained`,
  );
  print(
    `           ${buffer.trainable} trainable, ${buffer.text_only} without token ids (served by the normal upstream; exportable as text); judged ${percent(buffer.judged_share)}, mean reward ${signed(buffer.mean_reward)}`,
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
