/**
 * `metaclaw service`: installs, removes and inspects the login service that runs the proxy.
 * Writing the file is the part that must always work; enabling it (systemctl / launchctl) is
 * reported step by step, and a missing service manager is said plainly rather than hidden.
 */
import { existsSync, lstatSync, readFileSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ClawEnvironment } from '../claws/index.js';
import { writeFileAtomic } from '../shared/atomic-write.js';
import { CARRIED_VARIABLES, LAUNCHD_LABEL, launchdPlist, systemdUnit, SYSTEMD_UNIT_NAME, type ServiceSpec } from './units.js';
import { ConfigError } from '../errors.js';
import { PROXY_ENVIRONMENT } from '../runtime/memory-bounds.js';
import { makeFolders } from '../shared/make-folders.js';

export { LAUNCHD_LABEL, SYSTEMD_UNIT_NAME, launchdPlist, systemdUnit, type ServiceSpec } from './units.js';

/** What the service code needs from the machine (the claws' environment has all of it). */
export type ServiceHost = Pick<ClawEnvironment, 'home' | 'env' | 'platform' | 'uid' | 'run' | 'which'>;

export type ServiceKind = 'systemd' | 'launchd';

export interface ServiceReport {
  kind: ServiceKind;
  file: string;
  /** one line per step, in order */
  steps: string[];
  /** the service manager accepted the change (false when it is missing or refused) */
  managed: boolean;
}

export function serviceKind(platform: NodeJS.Platform): ServiceKind {
  if (platform === 'darwin') return 'launchd';
  if (platform === 'linux') return 'systemd';
  throw new ConfigError(`metaclaw service supports Linux (systemd) and macOS (launchd), not ${platform}.`, 'unsupported_platform');
}

/** The link `systemctl enable` makes for a unit with WantedBy=default.target. */
function wantsLink(unitFile: string): string {
  return join(dirname(unitFile), 'default.target.wants', SYSTEMD_UNIT_NAME);
}

function isLinkTo(link: string, target: string): boolean {
  try {
    return lstatSync(link).isSymbolicLink() && readlinkSync(link) === target;
  } catch {
    return false;
  }
}

export function serviceFile(host: ServiceHost): string {
  if (serviceKind(host.platform) === 'launchd') return join(host.home, 'Library', 'LaunchAgents', `${LAUNCHD_LABEL}.plist`);
  const configHome = host.env['XDG_CONFIG_HOME'] || join(host.home, '.config');
  return join(configHome, 'systemd', 'user', SYSTEMD_UNIT_NAME);
}

/** The environment written into the service: METACLAW_HOME plus where the agents live. */
export function serviceEnvironment(host: ServiceHost, metaclawHome: string): Record<string, string> {
  const environment: Record<string, string> = { ...PROXY_ENVIRONMENT, METACLAW_HOME: metaclawHome };
  for (const name of CARRIED_VARIABLES) {
    const value = host.env[name];
    if (value) environment[name] = value;
  }
  return environment;
}

export function renderService(kind: ServiceKind, spec: ServiceSpec): string {
  return kind === 'launchd' ? launchdPlist(spec) : systemdUnit(spec);
}

async function tryRun(host: ServiceHost, command: string, args: string[]): Promise<{ ok: boolean; detail: string }> {
  if (!host.which(command)) return { ok: false, detail: `${command} is not available on this machine` };
  try {
    const outcome = await host.run(command, args, { timeoutMs: 20_000 });
    const lines = (outcome.stderr || outcome.stdout).trim().split('\n');
    // A failure's reason comes last: `systemctl --user disable --now` without a user bus prints
    // 'Removed "…"' (the disable worked) and then why the stop failed.
    const detail = (outcome.code === 0 ? lines[0] : lines.at(-1)) ?? '';
    return { ok: outcome.code === 0, detail };
  } catch (error) {
    return { ok: false, detail: (error as Error).message };
  }
}

export interface InstallOptions {
  enable: boolean;
  /** runs just before the service manager starts the proxy (stop a hand-started one: the port is taken) */
  beforeStart?: () => Promise<void>;
}

export async function installService(host: ServiceHost, spec: ServiceSpec, options: InstallOptions): Promise<ServiceReport> {
  const kind = serviceKind(host.platform);
  const file = serviceFile(host);
  const text = renderService(kind, spec);
  const steps: string[] = [];
  const previous = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
  if (previous === text) steps.push(`${file} is already up to date.`);
  else {
    makeFolders(dirname(file));
    makeFolders(dirname(spec.logFile));
    writeFileAtomic(file, text, { mode: 0o644 });
    steps.push(`${previous === undefined ? 'Wrote' : 'Updated'} ${file}.`);
  }
  if (!options.enable) {
    steps.push(
      kind === 'systemd'
        ? `Not enabled (--no-enable): run \`systemctl --user enable --now ${SYSTEMD_UNIT_NAME}\` to start it at login.`
        : `Not loaded (--no-enable): run \`launchctl bootstrap gui/${host.uid ?? '$(id -u)'} ${file}\`.`,
    );
    return { kind, file, steps, managed: false };
  }
  if (kind === 'systemd') {
    // What `systemctl --user enable` does, done directly so it holds even where no user manager runs now.
    const link = wantsLink(file);
    makeFolders(dirname(link));
    if (!isLinkTo(link, file)) {
      rmSync(link, { force: true });
      symlinkSync(file, link);
    }
    steps.push(`Enabled it (${link}): it starts at every login.`);
    const reload = await tryRun(host, 'systemctl', ['--user', 'daemon-reload']);
    if (!reload.ok) {
      steps.push(`Not started now: the systemd user manager cannot be reached (${reload.detail}). \`metaclaw start\` runs the proxy until your next login.`);
      return { kind, file, steps, managed: false };
    }
    await options.beforeStart?.();
    // restart (not just start) so an updated unit takes effect
    const restart = await tryRun(host, 'systemctl', ['--user', 'restart', SYSTEMD_UNIT_NAME]);
    steps.push(
      restart.ok
        ? `Started ${SYSTEMD_UNIT_NAME} (\`journalctl --user -u metaclaw\` shows its output).`
        : `systemctl could not start ${SYSTEMD_UNIT_NAME}: ${restart.detail}.`,
    );
    return { kind, file, steps, managed: restart.ok };
  }
  const domain = `gui/${host.uid ?? 0}`;
  if (!host.which('launchctl')) {
    steps.push(`Not loaded now: launchctl is not available. It loads at your next login.`);
    return { kind, file, steps, managed: false };
  }
  await options.beforeStart?.();
  await tryRun(host, 'launchctl', ['bootout', `${domain}/${LAUNCHD_LABEL}`]); // harmless when not loaded
  const load = await tryRun(host, 'launchctl', ['bootstrap', domain, file]);
  steps.push(load.ok ? `Loaded ${LAUNCHD_LABEL}; it starts at every login (output in ${spec.logFile}).` : `launchctl could not load ${file}: ${load.detail}.`);
  return { kind, file, steps, managed: load.ok };
}

export async function uninstallService(host: ServiceHost, options: { enable: boolean }): Promise<ServiceReport> {
  const kind = serviceKind(host.platform);
  const file = serviceFile(host);
  const steps: string[] = [];
  let managed = true;
  if (!existsSync(file)) {
    steps.push(`No service installed (${file} does not exist).`);
    return { kind, file, steps, managed };
  }
  if (options.enable) {
    if (kind === 'systemd') {
      const disable = await tryRun(host, 'systemctl', ['--user', 'disable', '--now', SYSTEMD_UNIT_NAME]);
      managed = disable.ok;
      steps.push(
        disable.ok
          ? `Stopped and disabled ${SYSTEMD_UNIT_NAME}.`
          : `systemctl could not disable ${SYSTEMD_UNIT_NAME} (${disable.detail}); removing the file anyway.`,
      );
    } else {
      const unload = await tryRun(host, 'launchctl', ['bootout', `gui/${host.uid ?? 0}/${LAUNCHD_LABEL}`]);
      managed = unload.ok;
      steps.push(unload.ok ? `Unloaded ${LAUNCHD_LABEL}.` : `launchctl could not unload ${LAUNCHD_LABEL} (${unload.detail}); removing the file anyway.`);
    }
  }
  if (kind === 'systemd') rmSync(wantsLink(file), { force: true });
  rmSync(file, { force: true });
  steps.push(`Removed ${file}.`);
  if (options.enable && kind === 'systemd') await tryRun(host, 'systemctl', ['--user', 'daemon-reload']);
  return { kind, file, steps, managed };
}

export interface ServiceStatus {
  kind: ServiceKind;
  file: string;
  installed: boolean;
  /** what the service manager says (undefined when it cannot be asked) */
  state: string | undefined;
}

/**
 * What `systemctl --user is-active` said: a unit state as it is, anything else (no user bus, as in a
 * container or an SSH session without one) as the reason the state is unknown, not as a state.
 */
function systemdState(detail: string): string {
  return /^(active|inactive|failed|activating|deactivating|reloading|maintenance|refreshing)$/.test(detail) ? detail : `state unknown: ${detail}`;
}

export async function serviceStatus(host: ServiceHost): Promise<ServiceStatus> {
  const kind = serviceKind(host.platform);
  const file = serviceFile(host);
  const installed = existsSync(file);
  let state: string | undefined;
  if (installed) {
    const query =
      kind === 'systemd'
        ? await tryRun(host, 'systemctl', ['--user', 'is-active', SYSTEMD_UNIT_NAME])
        : await tryRun(host, 'launchctl', ['print', `gui/${host.uid ?? 0}/${LAUNCHD_LABEL}`]);
    state = query.detail.includes('not available') ? undefined : kind === 'systemd' ? systemdState(query.detail) : query.ok ? 'loaded' : 'not loaded';
  }
  return { kind, file, installed, state };
}
