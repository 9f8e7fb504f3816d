import { updateConfigFile, type LoadedConfig } from '../config/index.js';
import { wireClaw } from '../claws/index.js';
import { loadCliConfig } from './context.js';
import { clawEnvironment, OPENCLAW_PLUGIN_DIR, wiringTarget } from './wiring.js';

/**
 * `metaclaw claw install-plugin openclaw`: remembers the choice (claw_type openclaw, claw_plugin
 * true) and wires OpenClaw with the plugin loaded from this package. Unwiring removes it exactly.
 */
export async function installOpenClawPlugin(config: LoadedConfig): Promise<string[]> {
  updateConfigFile(config.file, { claw_type: 'openclaw', claw_plugin: true });
  const updated = loadCliConfig({ config: config.file });
  const result = await wireClaw('openclaw', wiringTarget(updated), clawEnvironment(updated));
  return [
    `Enabled the MetaClaw plugin in OpenClaw (${result.configPath ?? 'its config'}), loaded from ${OPENCLAW_PLUGIN_DIR}.`,
    ...result.messages,
    'It starts the proxy with the gateway and reports session ends; it needs no conversation access.',
  ];
}
