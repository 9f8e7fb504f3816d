/**
 * The two login-service files: a systemd user unit (Linux) and a launchd agent (macOS).
 * Both run `metaclaw start --foreground` with this Node and this package, so the native SQLite
 * module always matches the Node it was built for.
 */

export interface ServiceSpec {
  /** [node, script]: how to run this CLI */
  command: string[];
  /** extra arguments after `start --foreground` (e.g. --config FILE) */
  args: string[];
  /** METACLAW_HOME and the variables that tell wiring where the agents live */
  environment: Record<string, string>;
  /** where launchd writes the process output (systemd uses the journal) */
  logFile: string;
}

export const SYSTEMD_UNIT_NAME = 'metaclaw.service';
export const LAUNCHD_LABEL = 'ai.metaclaw.proxy';

/** Variables copied into the service at install time, when set: never keys or tokens. */
export const CARRIED_VARIABLES = ['PATH', 'OPENCLAW_STATE_DIR', 'OPENCLAW_CONFIG_PATH', 'HERMES_HOME', 'XDG_CONFIG_HOME'] as const;

/**
 * systemd quoting: `%` starts a specifier everywhere (so `%%`); `$` expands variables only in
 * ExecStart (so `$$` there); values with other characters go in double quotes with `\` escapes.
 */
function systemdQuote(value: string, inExec: boolean): string {
  let escaped = value.replace(/%/g, '%%');
  if (inExec) escaped = escaped.replace(/\$/g, '$$$$');
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(escaped)) return escaped;
  return `"${escaped.replace(/[\\"]/g, (char) => `\\${char}`)}"`;
}

export function systemdUnit(spec: ServiceSpec): string {
  const exec = [...spec.command, 'start', '--foreground', ...spec.args].map((arg) => systemdQuote(arg, true)).join(' ');
  const environment = Object.entries(spec.environment).map(([key, value]) => `Environment=${systemdQuote(`${key}=${value}`, false)}`);
  return [
    '# Written by `metaclaw service install`; removed by `metaclaw service uninstall`.',
    '[Unit]',
    'Description=MetaClaw-TS learning proxy for your AI agent',
    '',
    '[Service]',
    'Type=simple',
    `ExecStart=${exec}`,
    ...environment,
    'Restart=on-failure',
    'RestartSec=5',
    // The proxy drains in-flight requests on SIGTERM; give it time before systemd kills it.
    'TimeoutStopSec=40',
    '',
    '[Install]',
    'WantedBy=default.target',
    '',
  ].join('\n');
}

function xmlEscape(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

export function launchdPlist(spec: ServiceSpec): string {
  const argumentsXml = [...spec.command, 'start', '--foreground', ...spec.args].map((arg) => `    <string>${xmlEscape(arg)}</string>`);
  const environmentXml = Object.entries(spec.environment).flatMap(([key, value]) => [
    `    <key>${xmlEscape(key)}</key>`,
    `    <string>${xmlEscape(value)}</string>`,
  ]);
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    '<!-- Written by `metaclaw service install`; removed by `metaclaw service uninstall`. -->',
    '<plist version="1.0">',
    '<dict>',
    '  <key>Label</key>',
    `  <string>${LAUNCHD_LABEL}</string>`,
    '  <key>ProgramArguments</key>',
    '  <array>',
    ...argumentsXml,
    '  </array>',
    '  <key>EnvironmentVariables</key>',
    '  <dict>',
    ...environmentXml,
    '  </dict>',
    '  <key>RunAtLoad</key>',
    '  <true/>',
    '  <key>KeepAlive</key>',
    '  <dict>',
    '    <key>SuccessfulExit</key>',
    '    <false/>',
    '  </dict>',
    '  <key>ThrottleInterval</key>',
    '  <integer>5</integer>',
    '  <key>StandardOutPath</key>',
    `  <string>${xmlEscape(spec.logFile)}</string>`,
    '  <key>StandardErrorPath</key>',
    `  <string>${xmlEscape(spec.logFile)}</string>`,
    '</dict>',
    '</plist>',
    '',
  ].join('\n');
}
