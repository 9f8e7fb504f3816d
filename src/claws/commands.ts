/** Running agent CLIs: outcomes that never throw for a missing binary, restarts, and undo commands. */
import type { ClawEnvironment, CommandOutcome } from './types.js';
import type { LedgerCommand } from './ledger.js';

export const COMMAND_TIMEOUT_MS = 15_000;
export const SERVICE_TIMEOUT_MS = 90_000;

export interface Restart {
  /** its program must be on PATH */
  command: LedgerCommand;
  /** e.g. "CoPaw's daemon" */
  label: string;
}

export type Attempt = { ran: true; outcome: CommandOutcome } | { ran: false; reason: string };

/** Runs a command; a missing binary is reported, not thrown. */
export async function attempt(environment: ClawEnvironment, command: LedgerCommand, timeoutMs = COMMAND_TIMEOUT_MS): Promise<Attempt> {
  try {
    return { ran: true, outcome: await environment.run(command.command, command.args, { timeoutMs }) };
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? `\`${command.command}\` is not installed` : String(error);
    return { ran: false, reason };
  }
}

export function commandText(command: LedgerCommand): string {
  return [command.command, ...command.args].join(' ');
}

/** The last non-empty line of a command's output, for messages. */
export function outputSummary(outcome: CommandOutcome): string {
  const lines = `${outcome.stderr}\n${outcome.stdout}`
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  return lines[lines.length - 1] ?? `exit code ${outcome.code}`;
}

/** Restarts an agent's service when its CLI is present; never fails, says what happened. */
export async function restartAgent(
  environment: ClawEnvironment,
  restart: Restart | undefined,
  agentName: string,
): Promise<{ restarted: boolean; message: string }> {
  if (restart === undefined) return { restarted: false, message: `Restart ${agentName} yourself so it picks up the change.` };
  const binary = restart.command.command;
  if (environment.which(binary) === undefined) {
    return {
      restarted: false,
      message: `\`${binary}\` is not on PATH, so ${restart.label} was not restarted; restart ${agentName} yourself so it picks up the change.`,
    };
  }
  const result = await attempt(environment, restart.command, SERVICE_TIMEOUT_MS);
  if (!result.ran) return { restarted: false, message: `Could not restart ${restart.label} (${result.reason}); restart ${agentName} yourself.` };
  if (result.outcome.code !== 0) {
    return { restarted: false, message: `\`${commandText(restart.command)}\` failed (${outputSummary(result.outcome)}); restart ${agentName} yourself.` };
  }
  return { restarted: true, message: `Restarted ${restart.label} (\`${commandText(restart.command)}\`).` };
}
