import { Command } from 'commander';
import { VERSION } from '../version.js';
import { CliExit } from './context.js';

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
  .action(async (options) => (await import('./start.js')).startCommand(options));

program
  .command('stop')
  .description('stop the running proxy (SIGTERM, then SIGKILL after the timeout)')
  .option('-c, --config <path>', 'config file')
  .option('--timeout <seconds>', 'seconds to wait before SIGKILL')
  .action(async (options) => (await import('./stop.js')).stopCommand(options));

program
  .command('status')
  .description('show whether the proxy answers, and what it has done')
  .option('-c, --config <path>', 'config file')
  .option('--json', 'machine-readable output')
  .action(async (options) => (await import('./status.js')).statusCommand(options));

program
  .command('config')
  .description('show | get KEY | set KEY VALUE | unset KEY | keys | path  (also MetaClaw\'s "config KEY [VALUE]")')
  .argument('[args...]')
  .option('-c, --config <path>', 'config file')
  .option('--json', 'machine-readable output')
  .option('--reveal', 'show secrets in clear')
  .action(async (args: string[], options) => (await import('./config.js')).configCommand(args, options));

const sessions = program.command('sessions').description('recorded sessions and their turns');
sessions
  .command('list')
  .description('recent sessions')
  .option('-c, --config <path>', 'config file')
  .option('--limit <n>', 'how many', '20')
  .option('--json', 'machine-readable output')
  .action(async (options) => (await import('./sessions.js')).sessionsListCommand(options));
sessions
  .command('show')
  .description('one session with its turns')
  .argument('<id>')
  .option('-c, --config <path>', 'config file')
  .option('--json', 'machine-readable output')
  .action(async (id: string, options) => (await import('./sessions.js')).sessionsShowCommand(id, options));

// Command groups register their own subcommands; loading them only when used keeps `--help` fast.
if (process.argv[2] === 'skills') (await import('./skills.js')).registerSkillsCommands(program);
else program.command('skills').description('the skill library: list, edit, review, history, credit (metaclaw skills --help)');
if (process.argv[2] === 'memory') (await import('./memory.js')).registerMemoryCommands(program);
else program.command('memory').description('long-term memory: search, add, edit, forget, stats, export, import (metaclaw memory --help)');

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CliExit) {
    if (error.message) process.stderr.write(`${error.message}\n`);
    process.exit(error.code);
  }
  throw error;
}
