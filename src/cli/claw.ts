import type { Command } from 'commander';
import {
  ALL_CLAW_TYPES,
  ClawError,
  detectClaws,
  isClawType,
  ledgerProblem,
  unwireAll,
  unwireClaw,
  verifyClaw,
  wireClaw,
  type ClawType,
} from '../claws/index.js';
import type { LoadedConfig } from '../config/index.js';
import { CliExit, loadCliConfig, print, printError } from './context.js';
import { installOpenClawPlugin } from './openclaw-plugin.js';
import { clawEnvironment, clawName, wiringTarget } from './wiring.js';

/** Wires the configured agent (after `start`); never fails the start: problems are printed. */
export async function wireConfiguredClaw(config: LoadedConfig, override?: string, options: { asked?: boolean } = {}): Promise<void> {
  const type = override ?? config.values['claw_type'];
  if (type === 'none') {
    // `start` wires nothing then; `claw wire` was asked to wire and must say why it did not.
    if (options.asked) throw new CliExit('claw_type is none, so there is no agent to wire: name one, `metaclaw claw wire TYPE` (see `metaclaw claw list`).');
    return;
  }
  if (!isClawType(type)) {
    if (options.asked) throw new CliExit(`"${type}" is not an agent MetaClaw knows.`);
    print(`Not wiring: "${type}" is not an agent MetaClaw knows.`);
    return;
  }
  try {
    const result = await wireClaw(type, wiringTarget(config), clawEnvironment(config));
    print(
      result.changed
        ? `Wired ${clawName(type)} to the proxy (${result.configPath ?? 'its settings'}${result.backupPath ? `; original backed up to ${result.backupPath}` : ''}).`
        : `${clawName(type)} is already wired to the proxy.`,
    );
    for (const message of result.messages) print(`  ${message}`);
  } catch (error) {
    // From `claw wire` a failure is the command's failure (exit 1), and no proxy need be running.
    if (options.asked) throw new CliExit(`Could not wire ${clawName(type)}: ${(error as Error).message}`);
    print(`Could not wire ${clawName(type)}: ${(error as Error).message}`);
    print('  The proxy is running; fix the above, then `metaclaw claw wire`.');
  }
}

/** Undoes every wiring the ledger records; resolves with how many agents could not be restored. */
export async function unwireEverythingReport(config: LoadedConfig): Promise<number> {
  const results = await unwireAll(clawEnvironment(config));
  if (results.length === 0) print('   No agent was wired by MetaClaw.');
  for (const item of results) {
    if (item.error) print(`   Could not unwire ${clawName(item.type)}: ${item.error.message}`);
    else if (item.result)
      print(
        item.result.exact
          ? `   Restored ${clawName(item.type)}'s configuration exactly as it was.`
          : `   Unwired ${clawName(item.type)}; ${item.result.messages.join(' ')}`,
      );
  }
  return results.filter((item) => item.error).length;
}

/** `stop --unwire`, `claw unwire`: a failure is an exit code, not just a line. */
export async function unwireEverything(config: LoadedConfig): Promise<void> {
  const failures = await unwireEverythingReport(config);
  if (failures > 0) throw new CliExit(`${failures} agent(s) could not be restored; the backups are kept in ${config.home}/claws for a retry.`);
}

/** `metaclaw claw …`: wire, unwire, verify and detect agents; install the OpenClaw plugin. */
export function registerClawCommands(program: Command): void {
  const claw = program.command('claw').description('wire your agent to the proxy and undo it exactly');
  const common = (command: Command) => command.option('-c, --config <path>', 'config file');
  const resolve = (type: string | undefined, config: LoadedConfig): ClawType => {
    const chosen = type ?? config.values['claw_type'];
    if (!isClawType(chosen)) throw new CliExit(`"${chosen}" is not an agent MetaClaw knows; choose one of ${ALL_CLAW_TYPES.join(', ')}.`);
    return chosen;
  };
  const guard =
    <T extends unknown[]>(action: (...args: T) => Promise<void>) =>
    async (...args: T) => {
      try {
        await action(...args);
      } catch (error) {
        if (error instanceof ClawError) throw new CliExit(error.message);
        throw error;
      }
    };

  common(claw.command('list').description('agents found on this machine, and which are wired').option('--json', 'machine-readable output')).action(
    guard(async (options: { config?: string; json?: boolean }) => {
      const config = loadCliConfig(options.config ? { config: options.config } : {});
      const environment = clawEnvironment(config);
      const detections = await detectClaws(environment);
      // The agents are still listed; only which of them are wired is unknown.
      const problem = ledgerProblem(environment.metaclawHome);
      if (problem !== undefined) printError(`warning: which agents are wired is unknown. ${problem}`);
      if (options.json) return print(JSON.stringify(detections, null, 2));
      const width = Math.max(...ALL_CLAW_TYPES.map((type) => type.length));
      const states = detections.map((item) => `${item.installed ? 'found' : 'not found'}${item.wired ? ', wired' : ''}`);
      // The paths line up in one column, whatever each agent's state says.
      const stateWidth = Math.max(...states.map((state) => state.length));
      detections.forEach((item, index) =>
        print(`${item.type.padEnd(width)} ${item.configPath ? `${states[index]!.padEnd(stateWidth)}  ${item.configPath}` : states[index]!}`),
      );
    }),
  );
  common(claw.command('wire').description('point the agent at the proxy (default: claw_type)').argument('[type]')).action(
    guard(async (type: string | undefined, options: { config?: string }) => {
      const config = loadCliConfig(options.config ? { config: options.config } : {});
      await wireConfiguredClaw(config, resolve(type, config), { asked: true });
    }),
  );
  common(claw.command('unwire').description("restore the agent's configuration (default: every wired agent)").argument('[type]')).action(
    guard(async (type: string | undefined, options: { config?: string }) => {
      const config = loadCliConfig(options.config ? { config: options.config } : {});
      if (!type) return unwireEverything(config);
      const result = await unwireClaw(resolve(type, config), clawEnvironment(config));
      print(result.restored ? (result.exact ? 'Restored exactly as it was.' : `Unwired. ${result.messages.join(' ')}`) : 'Nothing to undo.');
    }),
  );
  common(claw.command('verify').description('is the agent wired to this proxy?').argument('[type]')).action(
    guard(async (type: string | undefined, options: { config?: string }) => {
      const config = loadCliConfig(options.config ? { config: options.config } : {});
      const chosen = resolve(type, config);
      const result = await verifyClaw(chosen, wiringTarget(config), clawEnvironment(config));
      print(result.wired ? `${clawName(chosen)} is wired to ${wiringTarget(config).proxyUrl}.` : `${clawName(chosen)} is not wired to this proxy:`);
      for (const problem of result.problems) print(`  ${problem}`);
      for (const message of result.messages) print(`  (${message})`);
      // What to run: wiring again points the agent at this proxy, with its current key.
      if (!result.wired) throw new CliExit(`Fix: run \`metaclaw claw wire ${chosen}\`.`, 1);
    }),
  );
  common(claw.command('install-plugin').description('install the MetaClaw plugin into an agent (openclaw)').argument('<type>')).action(
    guard(async (type: string, options: { config?: string }) => {
      if (type !== 'openclaw') throw new CliExit('Only OpenClaw has a MetaClaw plugin.');
      const config = loadCliConfig(options.config ? { config: options.config } : {});
      const result = await installOpenClawPlugin(config);
      for (const line of result) print(line);
    }),
  );
}
