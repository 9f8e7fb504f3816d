import { Argument, Command, Option } from 'commander';
import { ConfigError, StoreError } from '../errors.js';
import { VERSION } from '../version.js';
import { CONFIG_LOG_LEVELS } from '../logging/levels.js';
import type { CompletionShell } from './completion.js';
import type { ConfigOptions } from './config.js';
import { CliExit, pathErrorText, printError } from './context.js';
import type { DoctorOptions } from './doctor.js';
import type { LogsOptions } from './logs.js';
import type { ServiceOptions } from './service.js';
import type { SessionsOptions } from './sessions.js';
import type { SetupOptions } from './setup.js';
import type { StartOptions } from './start.js';
import type { StatusOptions } from './status.js';
import type { StopOptions } from './stop.js';
import type { UninstallOptions } from './uninstall.js';

// `metaclaw skills list | head` closes the pipe early: that is not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

const program = new Command();
program
  .name('metaclaw')
  .description('MetaClaw-TS: a local proxy that lets your AI agent learn skills and memories from every conversation.')
  .version(VERSION, '-v, --version')
  .showHelpAfterError();

program
  .command('start')
  .description('start the proxy (in the background unless --foreground) and wait until it answers')
  .option('--foreground', 'run in this terminal instead of daemonising')
  .option('-d, --daemon', 'run in the background (the default; accepted for MetaClaw compatibility)')
  .option('--port <port>', 'listen on this port for this run (overrides proxy.port)')
  .option('--host <host>', 'listen on this address for this run (overrides proxy.host)')
  .option('--mode <mode>', 'skills_only | rl | auto for this run (overrides mode)')
  .option('-c, --config <path>', 'use this config file instead of $METACLAW_HOME/config.yaml')
  .option('--wait <seconds>', 'how long to wait for the proxy to answer', '20')
  .option('--claw <type>', 'wire this agent instead of claw_type (openclaw, copaw, …, none)')
  .option('--no-wire', 'do not wire any agent this time')
  .option('--store <url>', 'serve from this PostgreSQL team store, as one node of a team (also store.url or METACLAW_DATABASE_URL)')
  .action(async (options: StartOptions) => (await import('./start.js')).startCommand(options));

program
  .command('stop')
  .description('stop the running proxy (SIGTERM, then SIGKILL after the timeout)')
  .option('-c, --config <path>', 'config file')
  .option('--timeout <seconds>', 'seconds to wait before SIGKILL')
  .option('--unwire', "also restore every agent's configuration exactly as it was before MetaClaw")
  .action(async (options: StopOptions) => (await import('./stop.js')).stopCommand(options));

program
  .command('status')
  .description('show whether the proxy answers, and what it has done')
  .option('-c, --config <path>', 'config file')
  .option('--json', 'machine-readable output')
  .action(async (options: StatusOptions) => (await import('./status.js')).statusCommand(options));

program
  .command('config')
  .description('show | get KEY | set KEY VALUE | unset KEY | keys | path | schema  (also MetaClaw\'s "config KEY [VALUE]")')
  .argument('[args...]')
  .option('-c, --config <path>', 'config file')
  .option('--json', 'machine-readable output')
  .option('--reveal', 'show secrets in clear')
  .action(async (args: string[], options: ConfigOptions) => (await import('./config.js')).configCommand(args, options));

program
  .command('setup')
  .description('choose your provider, model, key and agent; checks them against the real API and writes the config')
  .option('-c, --config <path>', 'config file to create or update')
  .option('--mode <mode>', 'skills_only | rl | auto')
  .option('--provider <id>', 'kimi | qwen | openai | anthropic | deepseek | minimax | novita | openrouter | volcengine | ollama | custom')
  .option('--api-base <url>', "the provider's base URL (default: the preset's)")
  .option('--api-format <format>', 'openai | anthropic (default: detected from the provider and URL)')
  .option('--model <id>', "model id (default: the preset's)")
  .option('--api-key-env <VAR>', 'read the API key from this environment variable (keys are never taken as arguments)')
  .option(
    '--claw <type>',
    'the agent to wire: openclaw | copaw | ironclaw | picoclaw | zeroclaw | nanoclaw | nemoclaw | hermes | claude-code | codex | qwen-code | opencode | none',
  )
  .option('--port <port>', 'proxy port')
  .option('--starter-skills', 'install the starter skills (the default)')
  .option('--no-starter-skills', 'do not install the starter skills')
  .option('--memory', 'keep long-term memory (the default)')
  .option('--no-memory', 'turn long-term memory off')
  .option('--no-verify', 'write the config without checking the upstream')
  .option('-y, --yes', 'no questions: use flags, the existing config and the defaults')
  .action(async (options: SetupOptions) => (await import('./setup.js')).setupCommand(options));

program
  .command('doctor')
  .description('check config, upstream, agent wiring, database, disk, and send a canary through the proxy')
  .option('-c, --config <path>', 'config file')
  .option('--json', 'machine-readable output')
  .option('--no-canary', 'skip the end-to-end canary request')
  .option('--fix', 'make $METACLAW_HOME (0700) and a config file holding keys (0600) readable by you alone')
  .action(async (options: DoctorOptions) => (await import('./doctor.js')).doctorCommand(options));

program
  .command('uninstall')
  .description('stop the proxy, restore every wired agent exactly, remove the service and $METACLAW_HOME')
  .option('-c, --config <path>', 'config file')
  .option('-y, --yes', 'do not ask for confirmation')
  .option('--keep-data', 'keep skills, memories and the database; remove the rest')
  .action(async (options: UninstallOptions) => (await import('./uninstall.js')).uninstallCommand(options));

const service = program.command('service').description('run the proxy at login (systemd user unit on Linux, launchd agent on macOS)');
for (const [name, text] of [
  ['install', 'write and enable the service so the proxy starts at login'],
  ['uninstall', 'stop, disable and remove the service'],
  ['status', 'is the service installed and running?'],
] as const) {
  service
    .command(name)
    .description(text)
    .option('-c, --config <path>', 'config file')
    .option('--no-enable', 'only write the file (do not call systemctl/launchctl)')
    .action(async (options: ServiceOptions) => (await import('./service.js')).serviceCommand(name, options));
}

program
  .command('logs')
  .description("the proxy's log, readable: the last lines, filtered by level, request, learning job or time; --follow for new ones")
  .option('-n, --lines <n>', 'how many lines (the last ones that pass the filters)', '50')
  .option('-f, --follow', 'go on printing new lines as they are written (across log rotation) until Ctrl-C')
  .addOption(new Option('--level <level>', 'this level and above').choices(CONFIG_LOG_LEVELS))
  .option('--request <id>', 'one request (its x-metaclaw-request-id)')
  .option('--job <id>', 'one learning job (see `metaclaw jobs`)')
  .option('--since <when>', 'a span back from now (30m, 2h, 1d) or a date and time')
  .option('-c, --config <path>', 'config file')
  .option('--json', 'the JSON lines as written')
  .action(async (options: LogsOptions) => (await import('./logs.js')).logsCommand(options));

const sessions = program.command('sessions').description('recorded sessions and their turns');
sessions
  .command('list')
  .description('recent sessions')
  .option('-c, --config <path>', 'config file')
  .option('--limit <n>', 'how many', '20')
  .option('--json', 'machine-readable output')
  .action(async (options: SessionsOptions) => (await import('./sessions.js')).sessionsListCommand(options));
sessions
  .command('show')
  .description('one session with its turns')
  .argument('<id>')
  .option('-c, --config <path>', 'config file')
  .option('--json', 'machine-readable output')
  .action(async (id: string, options: SessionsOptions) => (await import('./sessions.js')).sessionsShowCommand(id, options));

program
  .command('mcp')
  .description("serve MetaClaw's memory and skills to MCP clients (Claude Code, Cursor, OpenClaw) over stdio")
  .option('-c, --config <path>', 'config file')
  .action(async (options: { config?: string }) => (await import('./mcp.js')).mcpCommand(options));

program
  .command('completion')
  .description('print the shell completion script for bash, zsh or fish (see the README for where to put it)')
  .addArgument(new Argument('<shell>', 'bash | zsh | fish').choices(['bash', 'zsh', 'fish']))
  .action(async (shell: CompletionShell) => (await import('./completion.js')).completionCommand(program, shell));

// Command groups register their own subcommands; loading them only when used keeps `--help` fast.
// The completion script covers every subcommand, so it loads them all.
const loads = (group: string) => process.argv[2] === group || process.argv[2] === 'completion';
if (loads('skills')) (await import('./skills.js')).registerSkillsCommands(program);
else program.command('skills').description('the skill library: list, edit, review, history, credit (metaclaw skills --help)');
if (loads('claw')) (await import('./claw.js')).registerClawCommands(program);
else program.command('claw').description('wire your agent to the proxy, unwire it exactly, verify, install the OpenClaw plugin (metaclaw claw --help)');
if (loads('memory')) (await import('./memory.js')).registerMemoryCommands(program);
else program.command('memory').description('long-term memory: search, add, edit, forget, stats, export, import (metaclaw memory --help)');
if (loads('team')) (await import('./team.js')).registerTeamCommands(program);
else program.command('team').description('team members: per-member keys and private memory scopes (metaclaw team --help)');
if (loads('scheduler')) (await import('./scheduler.js')).registerSchedulerCommands(program);
else program.command('scheduler').description('when RL training may run: status, next-window, calendar-auth (metaclaw scheduler --help)');
if (loads('rl')) (await import('./rl.js')).registerRlCommands(program);
else program.command('rl').description('reinforcement learning: the sample buffer, the judge, training steps, checkpoints, export (metaclaw rl --help)');
if (loads('jobs')) (await import('./jobs.js')).registerJobsCommands(program);
else program.command('jobs').description('the learning queue: failed jobs and why, retry them (metaclaw jobs --help)');
if (loads('store')) (await import('./store.js')).registerStoreCommands(program);
else program.command('store').description('the team store (PostgreSQL): migrate, status, import-sqlite (metaclaw store --help)');

showNumberDefaultsBare(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CliExit) {
    if (error.message) printError(error.message);
    process.exit(error.exitCode);
  }
  // A bad config or home (METACLAW_HOME naming a file), or a database file this version cannot use
  // (not a database, newer schema, a folder it may not write), is the user's to fix, wherever it is found.
  if (error instanceof ConfigError || error instanceof StoreError) {
    printError(error.message);
    process.exit(1);
  }
  // A path the user gave that cannot be read or written is theirs to fix: one line, not a stack.
  const pathProblem = pathErrorText(error);
  if (pathProblem !== undefined) {
    printError(pathProblem);
    process.exit(1);
  }
  throw error;
}

/**
 * Commander shows a default as JSON, so a number held as text (as every option value arrives) read
 * `(default: "20")` in `--help`, as if the quotes were part of it: shown bare, `(default: 20)`.
 */
function showNumberDefaultsBare(command: Command): void {
  for (const option of command.options)
    if (typeof option.defaultValue === 'string' && /^\d+(\.\d+)?$/.test(option.defaultValue)) option.defaultValueDescription ??= option.defaultValue;
  for (const subcommand of command.commands) showNumberDefaultsBare(subcommand);
}
