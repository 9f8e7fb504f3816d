/**
 * MetaClaw for OpenClaw.
 *
 * - On gateway start (a service), makes sure the MetaClaw proxy answers, starting it if needed,
 *   and that OpenClaw is wired to it (`metaclaw start --claw openclaw` / `metaclaw claw wire openclaw`,
 *   both idempotent: nothing is written when nothing changes).
 * - On `session_end` (not a conversation hook, so it needs no `allowConversationAccess`), tells the
 *   proxy the session is over, so skill evolution and memory extraction run exactly then.
 *
 * It does not wrap `fetch` or touch any other plugin's traffic: sessions are identified by the
 * session-affinity headers OpenClaw sends to the `metaclaw` provider.
 */
import { spawn } from 'node:child_process';

interface PluginConfig {
  proxyUrl?: string;
  proxyKey?: string;
  autoStart?: boolean;
  metaclawCommand?: string[];
}

interface Logger {
  info?(message: string): void;
  warn?(message: string): void;
}

interface PluginApi {
  pluginConfig?: PluginConfig;
  logger?: Logger;
  on(hook: string, handler: (event: Record<string, unknown>, context: Record<string, unknown>) => unknown): void;
  registerService?(service: { id: string; start: () => Promise<void> | void; stop?: () => Promise<void> | void }): void;
}

/** Session ends that are not really ends: the conversation goes on after the gateway comes back. */
const NOT_AN_END = new Set(['shutdown', 'restart']);

function headers(config: PluginConfig): Record<string, string> {
  const result: Record<string, string> = { 'content-type': 'application/json' };
  if (config.proxyKey) result['x-metaclaw-api-key'] = config.proxyKey;
  return result;
}

async function healthy(proxyUrl: string): Promise<boolean> {
  try {
    const response = await fetch(`${proxyUrl}/healthz`, { signal: AbortSignal.timeout(1_500) });
    return response.ok;
  } catch {
    return false;
  }
}

function runMetaclaw(command: string[], args: string[], logger: Logger | undefined): Promise<number> {
  return new Promise((resolve) => {
    const [program, ...prefix] = command;
    if (!program) {
      resolve(1);
      return;
    }
    const child = spawn(program, [...prefix, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', (error) => {
      logger?.warn?.(`metaclaw: cannot run ${program}: ${error.message}`);
      resolve(1);
    });
    child.on('close', (code) => {
      if (code === 0) logger?.info?.(`metaclaw: ${output.trim().split('\n')[0] ?? 'ok'}`);
      else logger?.warn?.(`metaclaw ${args.join(' ')} failed (${code}): ${output.trim().slice(0, 500)}`);
      resolve(code ?? 1);
    });
  });
}

export default {
  id: 'metaclaw',
  name: 'MetaClaw',
  description: 'Keeps the MetaClaw proxy running and reports OpenClaw session ends to it.',
  register(api: PluginApi): void {
    const config = api.pluginConfig ?? {};
    const proxyUrl = (config.proxyUrl ?? 'http://127.0.0.1:30000').replace(/\/+$/, '');
    const command = config.metaclawCommand && config.metaclawCommand.length > 0 ? config.metaclawCommand : ['metaclaw'];

    api.registerService?.({
      id: 'metaclaw-proxy',
      start: async () => {
        if (config.autoStart === false) return;
        if (await healthy(proxyUrl)) await runMetaclaw(command, ['claw', 'wire', 'openclaw'], api.logger);
        else await runMetaclaw(command, ['start', '--claw', 'openclaw'], api.logger);
      },
    });

    api.on('session_end', async (event) => {
      const sessionId = typeof event['sessionId'] === 'string' ? event['sessionId'] : undefined;
      const reason = typeof event['reason'] === 'string' ? event['reason'] : 'unknown';
      if (!sessionId || NOT_AN_END.has(reason)) return;
      try {
        const response = await fetch(`${proxyUrl}/v1/sessions/${encodeURIComponent(sessionId)}/end`, {
          method: 'POST',
          headers: headers(config),
          body: JSON.stringify({ reason: `openclaw:${reason}` }),
          signal: AbortSignal.timeout(1_500),
        });
        if (!response.ok && response.status !== 404) api.logger?.warn?.(`metaclaw: ending session ${sessionId} answered ${response.status}`);
      } catch (error) {
        api.logger?.warn?.(`metaclaw: could not report the end of session ${sessionId}: ${(error as Error).message}`);
      }
    });
  },
};
