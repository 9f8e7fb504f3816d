import { fileURLToPath } from 'node:url';
import { realEnvironment, type ClawEnvironment, type ClawType, type WiringTarget } from '../claws/index.js';
import type { LoadedConfig } from '../config/index.js';
import { baseUrl } from './context.js';

/** The OpenClaw plugin shipped in this package (loaded by OpenClaw from here, in place). */
export const OPENCLAW_PLUGIN_DIR = fileURLToPath(new URL('../../openclaw-plugin', import.meta.url));

/** How OpenClaw's plugin runs this CLI: this very Node and script, since the proxy's SQLite module is built for it. */
export function metaclawCommand(): string[] {
  const script = fileURLToPath(new URL('../../bin/metaclaw.js', import.meta.url));
  return [process.execPath, script];
}

/** What a wired agent is told: where the proxy is, its key, which model to ask for. */
export function wiringTarget(config: LoadedConfig, portOverride?: number): WiringTarget {
  const values = config.values;
  const proxyUrl = baseUrl(values['proxy.host'], portOverride ?? values['proxy.port']);
  const target: WiringTarget = {
    proxyUrl,
    apiKey: values['proxy.api_key'] || 'metaclaw',
    model: values['llm.model_id'] || values['proxy.served_model_name'],
    apiFormat: values['claw_api_format'],
    contextWindow: values['context_window'],
  };
  if (values['claw_plugin'] && values['claw_type'] === 'openclaw') {
    target.plugin = {
      path: OPENCLAW_PLUGIN_DIR,
      config: { proxyUrl, autoStart: true, metaclawCommand: metaclawCommand(), ...(values['proxy.api_key'] ? { proxyKey: values['proxy.api_key'] } : {}) },
    };
  }
  return target;
}

export function clawEnvironment(config: LoadedConfig): ClawEnvironment {
  return realEnvironment({ metaclawHome: config.home });
}

export function clawName(type: ClawType): string {
  const names: Record<ClawType, string> = {
    openclaw: 'OpenClaw',
    copaw: 'CoPaw',
    ironclaw: 'IronClaw',
    picoclaw: 'PicoClaw',
    zeroclaw: 'ZeroClaw',
    nanoclaw: 'NanoClaw',
    nemoclaw: 'NemoClaw',
    hermes: 'Hermes',
    'claude-code': 'Claude Code',
    codex: 'Codex',
    'qwen-code': 'Qwen Code',
    opencode: 'opencode',
    none: 'no agent',
  };
  return names[type];
}
