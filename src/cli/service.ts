import { join } from 'node:path';
import { isProcessAlive, readPidFile } from '../runtime/index.js';
import { installService, serviceEnvironment, serviceStatus, uninstallService, type ServiceHost } from '../service/index.js';
import { CliExit, errorText, loadCliConfig, print } from './context.js';
import { stopProxy } from './stop.js';
import { clawEnvironment, metaclawCommand } from './wiring.js';
import { PROXY_NODE_FLAGS } from '../runtime/memory-bounds.js';

export interface ServiceOptions {
  config?: string;
  /** false with --no-enable */
  enable?: boolean;
}

/** `metaclaw service install|uninstall|status`. */
export async function serviceCommand(action: 'install' | 'uninstall' | 'status', options: ServiceOptions): Promise<void> {
  const config = loadCliConfig(options.config ? { config: options.config } : {});
  const host: ServiceHost = clawEnvironment(config);
  const enable = options.enable !== false;
  try {
    if (action === 'status') {
      const status = await serviceStatus(host);
      print(
        status.installed
          ? `Installed: ${status.file} (${status.kind}${status.state ? `, ${status.state}` : ''}).`
          : `Not installed (${status.file} does not exist).`,
      );
      return;
    }
    if (action === 'uninstall') {
      const report = await uninstallService(host, { enable });
      for (const step of report.steps) print(step);
      return;
    }
    const handOver = async () => {
      const running = readPidFile(config.paths.pidFile);
      if (!running || !isProcessAlive(running.pid)) return;
      print(`Stopping the proxy started by hand (pid ${running.pid}) so that the service can take over.`);
      await stopProxy(config);
    };
    const report = await installService(
      host,
      {
        command: proxyCommand(),
        args: options.config ? ['--config', config.file] : [],
        environment: serviceEnvironment(host, config.home),
        logFile: join(config.paths.logDir, 'service.out'),
      },
      { enable, beforeStart: handOver },
    );
    for (const step of report.steps) print(step);
  } catch (error) {
    if (error instanceof CliExit) throw error;
    throw new CliExit(errorText(error));
  }
}

/** The service runs the proxy with the same Node flags as \`metaclaw start\`'s daemon. */
function proxyCommand(): string[] {
  const [node, ...script] = metaclawCommand();
  return [node!, ...PROXY_NODE_FLAGS, ...script];
}
